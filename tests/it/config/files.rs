//! Where config files are found (the user file by `RAYSLURM_CONFIG`, `XDG_CONFIG_HOME` or
//! `HOME`), and files that cannot be used: refused with exit 2, naming the file, writing nothing.

use std::path::Path;

use super::dry_run;
use super::keys::KEYS;
use super::world::World;
use crate::harness::Run;

/// Where the user file is looked for: `$RAYSLURM_CONFIG`, else
/// `$XDG_CONFIG_HOME/rayslurm/config.toml` (only if absolute), else
/// `$HOME/.config/rayslurm/config.toml`.
#[test]
fn the_user_file_is_found_by_rayslurm_config_then_xdg_config_home_then_home() {
    // (The regression: an empty XDG_CONFIG_HOME read `./rayslurm/config.toml`.)
    let world = World::new();
    let named = world.dir().join("named.toml");
    let xdg = world.dir().join("xdg");
    let home = world.dir().join("home");
    let partition = |p: &Path, name: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("[launch]\npartition = \"{name}\"\n")).unwrap();
    };
    partition(&named, "named");
    partition(&xdg.join("rayslurm/config.toml"), "xdg");
    partition(&home.join(".config/rayslurm/config.toml"), "home");
    partition(&world.work().join("rayslurm/config.toml"), "cwd-empty-xdg");
    partition(
        &world.work().join("xdg/rayslurm/config.toml"),
        "cwd-relative-xdg",
    );
    let launch = || dry_run().cwd(&world.work());
    let cases: Vec<(&str, Run, &str)> = vec![
        (
            "RAYSLURM_CONFIG before the others",
            launch()
                .env("RAYSLURM_CONFIG", &named)
                .env("XDG_CONFIG_HOME", &xdg)
                .env("HOME", &home),
            "named",
        ),
        (
            "XDG_CONFIG_HOME before HOME",
            launch()
                .env_remove("RAYSLURM_CONFIG")
                .env("XDG_CONFIG_HOME", &xdg)
                .env("HOME", &home),
            "xdg",
        ),
        (
            "HOME",
            launch().env_remove("RAYSLURM_CONFIG").env("HOME", &home),
            "home",
        ),
        // The XDG rule: an empty or relative XDG_CONFIG_HOME is ignored. Both would otherwise
        // find a file below the working directory.
        (
            "XDG_CONFIG_HOME empty",
            launch()
                .env_remove("RAYSLURM_CONFIG")
                .env("XDG_CONFIG_HOME", "")
                .env("HOME", &home),
            "home",
        ),
        (
            "XDG_CONFIG_HOME relative",
            launch()
                .env_remove("RAYSLURM_CONFIG")
                .env("XDG_CONFIG_HOME", "xdg")
                .env("HOME", &home),
            "home",
        ),
    ];
    for (case, run, partition) in cases {
        run.case(case)
            .expect_status(0)
            .expect_stdout_contains(&format!("\n#SBATCH --partition={partition}\n"))
            .run();
    }
}

/// A config file that cannot be used is refused, naming the file, before anything is written.
#[test]
fn an_invalid_config_file_exits_2_names_the_file_and_writes_nothing() {
    #[derive(Debug, Clone, Copy)]
    enum Place {
        Project,
        /// Named by `RAYSLURM_CONFIG`.
        Named,
        /// Under `XDG_CONFIG_HOME`.
        Xdg,
    }
    let cases: &[(Place, &str, &str)] = &[
        (Place::Project, "[launch]\nparition = \"x\"\n", "parition"),
        (Place::Project, "[launch\npartition = \"x\"\n", "TOML"),
        (Place::Project, "partition = \"x\"\n", "partition"),
        (
            Place::Project,
            "[launch]\nready_timeout = \"soon\"\n",
            "ready_timeout",
        ),
        (
            Place::Project,
            "[launch]\ngpu_directive = \"gpus\"\n",
            "gpu_directive",
        ),
        (Place::Named, "[launch]\nparition = \"x\"\n", "parition"),
        (Place::Named, "[launch]\npartition = \"x\n", "TOML"),
        (Place::Xdg, "[lunch]\npartition = \"x\"\n", "lunch"),
    ];
    for (place, content, needle) in cases {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        let xdg = root.path().join("xdg");
        std::fs::create_dir(&work).unwrap();
        let file = match place {
            Place::Project => work.join("rayslurm.toml"),
            Place::Named => root.path().join("named.toml"),
            Place::Xdg => xdg.join("rayslurm/config.toml"),
        };
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, content).unwrap();
        let run = dry_run().cwd(&work);
        let run = match place {
            Place::Project => run,
            Place::Named => run.env("RAYSLURM_CONFIG", &file),
            Place::Xdg => run
                .env_remove("RAYSLURM_CONFIG")
                .env("XDG_CONFIG_HOME", &xdg),
        };
        let case = format!("{place:?} {content:?}");
        let ran = run
            .case(&case)
            .expect_status(2)
            .expect_stdout("")
            // It names the file.
            .expect_stderr_contains(&format!("`{}`", file.display()))
            .expect_stderr_contains(needle)
            .run();
        assert!(ran.stderr.starts_with("error:"), "{ran}");
        let mut written: Vec<_> = std::fs::read_dir(&work)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        written.retain(|n| n != "rayslurm.toml");
        assert!(written.is_empty(), "{case} wrote {written:?}");
    }
}

/// A project file that cannot be read at all (here: a directory) is refused the same way.
#[test]
fn an_unreadable_project_file_exits_2_and_names_it() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("rayslurm.toml")).unwrap();
    dry_run()
        .cwd(root.path())
        .expect_status(2)
        .expect_stderr_contains(&format!(
            "`{}`",
            root.path().join("rayslurm.toml").display()
        ))
        .run();
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
}

/// Every key a config file takes is in [`KEYS`] (or has its own test below), and every one has
/// its environment variable: the file's own error lists the keys it expects.
#[test]
fn every_config_file_key_is_tested_and_has_a_variable() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("rayslurm.toml"),
        "[launch]\nnot_a_key = 1\n",
    )
    .unwrap();
    let ran = dry_run().cwd(root.path()).expect_status(2).run();
    let expected = ran
        .stderr
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("no key list in:\n{ran}"));
    let mut in_file: Vec<&str> = regex::Regex::new(r"`([a-z_]+)`")
        .unwrap()
        .captures_iter(expected)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    in_file.sort_unstable();
    let mut tested: Vec<&str> = KEYS.iter().map(|k| k.file).collect();
    tested.push("ray_auth");
    // A task file's `use_spot: true` reads these, no flag or variable does:
    // task_file::cli_stages::use_spot_takes_the_sites_spot_partition_or_names_the_keys.
    tested.extend(["spot_partition", "spot_qos"]);
    // A table of GPU type -> partition: no flag, no variable (tests/it/gpus/).
    tested.push("gpu_partitions");
    tested.sort_unstable();
    assert_eq!(in_file, tested);
    for key in KEYS {
        assert_eq!(
            key.env,
            Some(format!("RAYSLURM_{}", key.file.to_uppercase())).as_deref(),
            "{}",
            key.file
        );
    }
}
