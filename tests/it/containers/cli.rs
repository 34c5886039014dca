//! `launch` and `up` with `--container-*` (an image every program of the run runs in): the
//! script's bootstrap flags, each refusal (exit 2, nothing written), the runtime found on the
//! login node (fake `srun`, `apptainer`, `ch-run` alone on PATH), config files and task files.

use std::path::Path;

use crate::harness::{Ran, rayslurm, shim};
use crate::launch::{launch_in, normalise, state};

/// `launch --dry-run` in `dir` (which holds `img.sqsh`) with `args`.
fn dry_run_in(dir: &Path, args: &[&str]) -> Ran {
    std::fs::write(dir.join("img.sqsh"), "").unwrap();
    let mut argv = vec![
        "--dry-run",
        "--exp-name",
        "exp",
        "--command",
        "python train.py",
    ];
    argv.extend_from_slice(args);
    launch_in(dir, &argv).run()
}

/// The script of a dry run that must succeed, normalised.
fn script(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let ran = dry_run_in(dir.path(), args);
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "{args:?}: {}",
        ran.stderr
    );
    normalise(&ran.stdout, dir.path())
}

#[test]
fn script_with_a_container() {
    insta::assert_snapshot!(script(&[
        "--container-image",
        "img.sqsh",
        "--container-mounts",
        "/data:/data:ro,/opt/venv",
        "--container-workdir",
        "/workspace",
        "--container-runtime",
        "apptainer",
    ]));
}

#[test]
fn registry_images_are_written_as_each_runtime_takes_them() {
    for (runtime, image, written) in [
        (
            "pyxis",
            "docker://nvcr.io/nvidia/pytorch:24.05-py3",
            "'nvcr.io#nvidia/pytorch:24.05-py3'",
        ),
        ("pyxis", "ubuntu:24.04", "ubuntu:24.04"),
        (
            "singularity",
            "docker://ubuntu:24.04",
            "docker://ubuntu:24.04",
        ),
        ("charliecloud", "./img.sqsh", "[DIR]/img.sqsh"),
    ] {
        let s = script(&["--container-image", image, "--container-runtime", runtime]);
        for line in [
            format!("  --container-image {written} \\\n"),
            format!("  --container-runtime {runtime} \\\n"),
        ] {
            assert!(s.contains(&line), "{runtime} {image}: {line}\n{s}");
        }
    }
}

/// Container flags refused, and a part of the message each gets.
const BAD: &[(&[&str], &str)] = &[
    (
        &["--container-image", ""],
        "error: --container-image is empty",
    ),
    (
        &["--container-image", "a,b"],
        "invalid --container-image `a,b`",
    ),
    (
        &["--container-image", "a\nb"],
        "invalid --container-image `a\\nb`",
    ),
    (
        &["--container-mounts", "data:/data"],
        "`data:/data`: the source `data` is not an absolute path",
    ),
    (
        &["--container-mounts", "/a:/b:rx"],
        "`/a:/b:rx` ends in `:rx`",
    ),
    (
        &["--container-image", "/i.sif", "--container-workdir", "work"],
        "--container-workdir `work` is not an absolute path",
    ),
    (
        &["--container-mounts", "/data"],
        "--container-mounts goes with --container-image",
    ),
    (
        &["--container-workdir", "/w"],
        "--container-workdir goes with --container-image",
    ),
    (
        &["--container-runtime", "pyxis"],
        "--container-runtime goes with --container-image",
    ),
    (
        &["--container-runtime", "docker"],
        "invalid value 'docker' for '--container-runtime",
    ),
    (
        &[
            "--container-image",
            "./missing.sqsh",
            "--container-runtime",
            "pyxis",
        ],
        "/missing.sqsh` does not exist on this node",
    ),
    (
        &[
            "--container-image",
            "../missing.sif",
            "--container-runtime",
            "apptainer",
        ],
        "is a path, and",
    ),
    (
        &[
            "--container-image",
            "docker://ubuntu",
            "--container-runtime",
            "charliecloud",
        ],
        "is a registry image, and charliecloud (--container-runtime) runs only local ones",
    ),
    (
        &[
            "--container-image",
            "ubuntu",
            "--container-runtime",
            "apptainer",
        ],
        "give `docker://ubuntu`",
    ),
];

#[test]
fn bad_container_flags_exit_2_and_write_nothing() {
    for (args, needle) in BAD {
        let dir = tempfile::tempdir().unwrap();
        let mut argv = vec!["--exp-name", "x", "--command", "true"];
        argv.extend_from_slice(args);
        launch_in(dir.path(), &argv)
            .expect_status(2)
            .expect_stderr_starts_with("error:")
            .expect_stderr_contains(needle)
            .run();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{args:?} wrote a file"
        );
    }
}

#[test]
fn error_container_image_missing() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "launch",
        "--exp-name",
        "x",
        "--command",
        "true",
        "--container-image",
        "./torch.sqsh",
    ];
    let ran = rayslurm(args)
        .cwd(dir.path())
        .env("RAYSLURM_CONTAINER_RUNTIME", "pyxis")
        .run();
    let text = ran
        .transcript()
        .replace(&dir.path().display().to_string(), "[DIR]");
    insta::assert_snapshot!(text);
}

/// Fake `srun` (with pyxis or without) and runtimes, alone on PATH: the runtime the login node
/// has is the one written, and none or several is an error that lists what was found.
#[test]
fn the_runtime_is_found_on_the_login_node_only_where_unambiguous() {
    let srun = |pyxis: bool| {
        let plugin = if pyxis {
            "echo 'Options provided by plugins:'; echo '      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH'"
        } else {
            "echo '      --container=PATH        Path to OCI container bundle'"
        };
        format!(
            "case \"$1\" in --help) echo 'Usage: srun [OPTIONS...]'; {plugin};; --version) echo 'slurm 23.11.4';; esac"
        )
    };
    let cases: &[(bool, &[&str], Result<&str, &str>)] = &[
        (true, &["ch-run", "apptainer"], Ok("pyxis")),
        (false, &["ch-run"], Ok("charliecloud")),
        (false, &["apptainer"], Ok("apptainer")),
        (false, &["singularity"], Ok("singularity")),
        (
            false,
            &[],
            Err("none of `apptainer`, `singularity`, `ch-run` is on PATH"),
        ),
        (
            false,
            &["apptainer", "ch-run"],
            Err(
                "this node has several, so rayslurm cannot tell which the nodes use: `apptainer` ([SHIMS]/apptainer), `ch-run` ([SHIMS]/ch-run)",
            ),
        ),
    ];
    for (pyxis, programs, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let shims = tempfile::tempdir().unwrap();
        shim(shims.path(), "srun", &srun(*pyxis));
        for p in *programs {
            shim(shims.path(), p, "exit 0");
        }
        std::fs::write(dir.path().join("img.sqsh"), "").unwrap();
        let run = launch_in(
            dir.path(),
            &[
                "--dry-run",
                "--exp-name",
                "x",
                "--command",
                "true",
                "--container-image",
                "img.sqsh",
            ],
        )
        .env("PATH", shims.path());
        match want {
            Ok(runtime) => {
                run.expect_status(0)
                    .expect_stdout_contains(&format!("  --container-runtime {runtime} \\\n"))
                    .run();
            }
            Err(why) => {
                let ran = run.expect_status(2).expect_stderr_contains("hint: name the runtime the compute nodes have: --container-runtime pyxis|apptainer|singularity|charliecloud").run();
                let stderr = ran
                    .stderr
                    .replace(&shims.path().display().to_string(), "[SHIMS]");
                assert!(stderr.contains(why), "{programs:?}: {stderr}");
                assert!(!state(dir.path()).exists(), "{programs:?} wrote the state");
            }
        }
    }
}

/// Config files give the container keys as they give the others: a list of mounts, or one
/// comma-separated string; a bad one names the file.
#[test]
fn config_files_take_the_container_keys() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    std::fs::write(
        &user,
        "[launch]\ncontainer_image = \"img.sqsh\"\ncontainer_mounts = [\"/data:/data:ro\", \"/opt/venv\"]\ncontainer_runtime = \"pyxis\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("rayslurm.toml"),
        "[launch]\ncontainer_workdir = \"/workspace\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("img.sqsh"), "").unwrap();
    let ran = launch_in(
        dir.path(),
        &["--dry-run", "--exp-name", "x", "--command", "true"],
    )
    .env("RAYSLURM_CONFIG", &user)
    .expect_status(0)
    .run();
    let s = normalise(&ran.stdout, dir.path());
    for line in [
        "  --container-image [DIR]/img.sqsh \\\n",
        "  --container-mounts /data:/data:ro,/opt/venv:/opt/venv \\\n",
        "  --container-workdir /workspace \\\n",
        "  --container-runtime pyxis \\\n",
    ] {
        assert!(s.contains(line), "{line}\n{s}");
    }
    std::fs::write(&user, "[launch]\ncontainer_mounts = \"/a,b\"\n").unwrap();
    launch_in(
        dir.path(),
        &["--dry-run", "--exp-name", "x", "--command", "true"],
    )
    .env("RAYSLURM_CONFIG", &user)
    .expect_status(2)
    .expect_stderr_contains("user.toml")
    .expect_stderr_contains("container_mounts: `b`: the source `b` is not an absolute path")
    .run();
}

#[test]
fn up_takes_the_container_flags() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("img.sqsh"), "").unwrap();
    let up = |args: &[&str]| {
        let mut argv = vec!["up", "dev", "--dry-run"];
        argv.extend_from_slice(args);
        rayslurm(argv)
            .cwd(dir.path())
            .env("RAYSLURM_STATE_DIR", state(dir.path()))
    };
    let ran = up(&[
        "--container-image",
        "img.sqsh",
        "--container-runtime",
        "pyxis",
        "--container-workdir",
        "/w",
    ])
    .expect_status(0)
    .run();
    let s = normalise(&ran.stdout, dir.path());
    for line in [
        "  --serve \\\n",
        "  --container-image [DIR]/img.sqsh \\\n",
        "  --container-workdir /w \\\n",
        "  --container-runtime pyxis \\\n",
    ] {
        assert!(s.contains(line), "{line}\n{s}");
    }
    up(&["--container-mounts", "/d"])
        .expect_status(2)
        .expect_stderr_contains("--container-mounts goes with --container-image")
        .run();
}
