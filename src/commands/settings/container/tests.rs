//! The container flags' resolution as a table: flags (and config files, and the runtimes the
//! login node has) in, the options the bootstrap gets out, or the error.

use clap::Parser;

use super::*;

/// The runtime of that name.
fn rt(name: &str) -> ContainerRuntime {
    ContainerRuntime::named(name).unwrap()
}

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    container: ContainerArgs,
}

/// A working directory holding `img.sqsh`, where the login node has `runtimes`.
fn src(dir: &Path, runtimes: Found) -> Sources {
    std::fs::write(dir.join("img.sqsh"), "").unwrap();
    Sources {
        cwd: dir.to_owned(),
        runtimes: Some(runtimes),
        ..Sources::default()
    }
}

fn pyxis() -> Found {
    Found(vec![(rt("pyxis"), PathBuf::from("/usr/bin/srun"))])
}

fn resolved(argv: &[&str], src: &Sources) -> Result<ContainerOptions, UsageError> {
    let args = Args::try_parse_from(std::iter::once("x").chain(argv.iter().copied())).unwrap();
    resolve(&args.container, src)
}

fn image(argv: &[&str], src: &Sources) -> String {
    resolved(argv, src).unwrap().container_image.unwrap()
}

fn error(argv: &[&str], src: &Sources) -> String {
    let e = resolved(argv, src).unwrap_err();
    format!("{} / {}", e.message, e.hint.unwrap_or_default())
}

#[test]
fn no_image_no_container_and_a_flag_without_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = src(dir.path(), pyxis());
    assert_eq!(resolved(&[], &s).unwrap(), ContainerOptions::default());
    for (argv, flag) in [
        (&["--container-mounts", "/d"][..], "--container-mounts"),
        (&["--container-workdir", "/w"], "--container-workdir"),
        (&["--container-runtime", "pyxis"], "--container-runtime"),
    ] {
        let e = error(argv, &s);
        assert!(
            e.starts_with(&format!("{flag} goes with --container-image")),
            "{e}"
        );
    }
    // A site's variable or file names the runtime for the runs that have an image.
    let mut site = src(dir.path(), pyxis());
    site.variables = vec![(
        "container_runtime".into(),
        "RAYSLURM_CONTAINER_RUNTIME".into(),
    )];
    site.user.container_runtime = Some(rt("apptainer"));
    let none = resolved(&["--container-runtime", "apptainer"], &site).unwrap();
    assert_eq!(none, ContainerOptions::default());
}

#[test]
fn every_flag_reaches_the_options_with_the_runtime_always_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = src(dir.path(), pyxis());
    let o = resolved(
        &[
            "--container-image",
            "./img.sqsh",
            "--container-mounts",
            "/data:/d:ro,/opt",
            "--container-mounts",
            "/x:/y",
            "--container-workdir",
            "/workspace",
        ],
        &s,
    )
    .unwrap();
    let mounts: Vec<Mount> = ["/data:/d:ro", "/opt", "/x:/y"]
        .iter()
        .map(|m| m.parse().unwrap())
        .collect();
    assert_eq!(
        o,
        ContainerOptions {
            container_image: Some(dir.path().join("img.sqsh").display().to_string()),
            container_mounts: mounts,
            container_workdir: Some("/workspace".into()),
            container_runtime: Some(rt("pyxis")),
        }
    );
}

#[test]
fn images_as_each_runtime_takes_them() {
    let dir = tempfile::tempdir().unwrap();
    let s = src(dir.path(), pyxis());
    let here = dir.path().join("img.sqsh").display().to_string();
    let with = |runtime: &str, img: &str| {
        image(
            &["--container-runtime", runtime, "--container-image", img],
            &s,
        )
    };
    for (runtime, given, want) in [
        ("pyxis", "img.sqsh", here.as_str()),
        ("apptainer", "./img.sqsh", here.as_str()),
        ("pyxis", "ubuntu:24.04", "ubuntu:24.04"),
        ("pyxis", "docker://ubuntu:24.04", "ubuntu:24.04"),
        (
            "pyxis",
            "docker://nvcr.io/nvidia/pytorch:24.05-py3",
            "nvcr.io#nvidia/pytorch:24.05-py3",
        ),
        (
            "pyxis",
            "docker://localhost:5000/me/img",
            "localhost:5000#me/img",
        ),
        ("pyxis", "docker://nvidia/cuda:12.4", "nvidia/cuda:12.4"),
        (
            "pyxis",
            "nvcr.io#nvidia/pytorch:24.05-py3",
            "nvcr.io#nvidia/pytorch:24.05-py3",
        ),
        (
            "apptainer",
            "docker://ubuntu:24.04",
            "docker://ubuntu:24.04",
        ),
        (
            "singularity",
            "oras://ghcr.io/me/img:1",
            "oras://ghcr.io/me/img:1",
        ),
        ("charliecloud", "ubuntu", "ubuntu"),
        ("charliecloud", "/", "/"),
    ] {
        assert_eq!(with(runtime, given), want, "{runtime} {given}");
    }
}

#[test]
fn bad_images_and_workdirs_are_refused_with_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let s = src(dir.path(), pyxis());
    for (argv, want) in [
        (&["--container-image", ""][..], "--container-image is empty"),
        (&["--container-image", " "], "--container-image is empty"),
        (
            &["--container-image", "a,b"],
            "invalid --container-image `a,b`",
        ),
        (
            &["--container-image", "a\nb"],
            "invalid --container-image `a\\nb`",
        ),
        (
            &["--container-image", "./missing.sqsh"],
            "--container-image `./missing.sqsh` is a path, and `",
        ),
        (
            &["--container-image", "/nonexistent/i.sif"],
            "/nonexistent/i.sif` does not exist",
        ),
        (
            &[
                "--container-image",
                "img.sqsh",
                "--container-workdir",
                "work",
            ],
            "--container-workdir `work` is not an absolute path",
        ),
        (
            &[
                "--container-image",
                "docker://ubuntu",
                "--container-runtime",
                "charliecloud",
            ],
            "--container-image `docker://ubuntu` is a registry image, and charliecloud (--container-runtime) runs only local ones",
        ),
        (
            &[
                "--container-image",
                "/",
                "--container-runtime",
                "charliecloud",
                "--container-mounts",
                "/a,/data:/data:ro",
            ],
            "--container-mounts `/data:/data:ro` asks for a read-only mount, which charliecloud (--container-runtime) cannot make",
        ),
        (
            &[
                "--container-image",
                "ubuntu:24.04",
                "--container-runtime",
                "apptainer",
            ],
            "`docker://ubuntu:24.04`",
        ),
    ] {
        let e = error(argv, &s);
        assert!(e.contains(want), "{argv:?}: {e}");
    }
}

#[test]
fn the_runtime_is_found_only_where_unambiguous() {
    let dir = tempfile::tempdir().unwrap();
    let ch = |more: &[(ContainerRuntime, &str)]| {
        Found(more.iter().map(|(r, p)| (*r, PathBuf::from(p))).collect())
    };
    let runtime = |r: Found| {
        resolved(&["--container-image", "img.sqsh"], &src(dir.path(), r))
            .map(|o| o.container_runtime.unwrap())
    };
    assert_eq!(runtime(pyxis()).unwrap(), rt("pyxis"));
    let one = ch(&[(rt("charliecloud"), "/usr/bin/ch-run")]);
    assert_eq!(runtime(one).unwrap(), rt("charliecloud"));
    assert!(runtime(ch(&[])).is_err());
    let two = ch(&[
        (rt("apptainer"), "/a/apptainer"),
        (rt("charliecloud"), "/usr/bin/ch-run"),
    ]);
    assert!(runtime(two).unwrap_err().message.contains("several"));
    // What the detection says is named in a refusal that comes of it.
    let e = error(
        &["--container-image", "docker://ubuntu"],
        &src(dir.path(), ch(&[(rt("charliecloud"), "/c/ch-run")])),
    );
    assert!(
        e.contains("charliecloud (the runtime this node has)"),
        "{e}"
    );
}

#[test]
fn files_give_what_the_command_line_leaves_and_say_where_a_bad_value_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = src(dir.path(), pyxis());
    s.user = crate::launch::config::parse_config(
        &dir.path().join("user.toml"),
        "[launch]\ncontainer_image = \"/\"\ncontainer_mounts = \"/a,/b:/c:ro\"\ncontainer_runtime = \"apptainer\"\n",
    )
    .unwrap();
    s.project.container_workdir = Some("/proj".into());
    let o = resolved(&[], &s).unwrap();
    assert_eq!(o.container_image.as_deref(), Some("/"));
    assert_eq!(o.container_mounts.len(), 2);
    assert_eq!(o.container_workdir, Some("/proj".into()));
    assert_eq!(o.container_runtime, Some(rt("apptainer")));
    let o = resolved(
        &["--container-mounts", "/z", "--container-image", "img.sqsh"],
        &s,
    )
    .unwrap();
    assert_eq!(o.container_mounts, vec!["/z".parse::<Mount>().unwrap()]);
    s.user.container_image = Some("a,b".into());
    let e = error(&[], &s);
    assert!(
        e.contains("(from `") && e.contains("key `container_image`)"),
        "{e}"
    );
}
