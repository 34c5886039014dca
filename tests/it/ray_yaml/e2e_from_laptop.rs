//! Ray's cluster YAML from a laptop (`--host`): the file, the submitted script and the source
//! of `rsync-up` are on the laptop alone (the login node cannot read them); each is read or
//! sent by the laptop's rayslurm, through the one SSH connection.

use crate::harness::{LOGIN_HOST, Laptop, lab, text, unique_name};

fn on_host(laptop: &Laptop, args: &[&str]) -> (bool, String, String) {
    let out = laptop
        .command_in(&laptop.work().join("proj"), "rayslurm")
        .args(["--host", LOGIN_HOST])
        .args(args)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    (out.status.success(), stdout, stderr)
}

#[test]
fn e2e_a_ray_cluster_yaml_and_a_script_on_the_laptop_up_submit_rsync_up_attach_down() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let Some(laptop) = Laptop::new(lab, "rayyaml") else {
        return;
    };
    let name = unique_name("laptopyaml").replace('-', "_");
    laptop.write(
        "proj/cluster.yaml",
        &format!(
            "cluster_name: {name}\nmax_workers: 0\nprovider:\n  type: slurm\n  time: '8'\n  load_env: \"{}\"\nhead_node_type: head\navailable_node_types:\n  head: {{resources: {{CPU: 2}}, node_config: {{}}}}\n",
            lab.load_env()
        ),
    );
    laptop.write(
        "proj/job.py",
        "import sys\nprint('from the laptop', sys.argv[1:])\nsys.exit(5)\n",
    );
    laptop.write("proj/data/in.txt", "laptop data\n");
    let before = laptop.auth_count();
    let (ok, _, stderr) = on_host(
        &laptop,
        &["up", "cluster.yaml", "--object-store-memory=100000000"],
    );
    assert!(ok, "up: {stderr}");
    let (ok, stdout, stderr) = on_host(&laptop, &["submit", "cluster.yaml", "job.py", "a", "--b"]);
    assert!(!ok, "the script's exit code 5: {stdout}{stderr}");
    assert!(
        stdout.contains("from the laptop ['a', '--b']"),
        "{stdout}{stderr}"
    );
    let (ok, _, stderr) = on_host(&laptop, &["rsync-up", "cluster.yaml", "data", "d"]);
    assert!(ok, "rsync-up: {stderr}");
    let (ok, stdout, stderr) = on_host(
        &laptop,
        &[
            "attach",
            "cluster.yaml",
            "--",
            "sh",
            "-c",
            "cat \"$RAYSLURM_CLUSTER_FILES/d/in.txt\"",
        ],
    );
    assert!(ok, "attach: {stderr}");
    assert!(stdout.contains("laptop data"), "{stdout}{stderr}");
    // On the laptop's terminal (`script` gives it one), a shell with a terminal of its own
    // on the head node.
    let mut script = laptop.command_in(&laptop.work().join("proj"), "script");
    script.args([
        "-qec",
        &format!("rayslurm --host {LOGIN_HOST} attach cluster.yaml"),
        "/dev/null",
    ]);
    let out = super::on_a_terminal(script);
    let (stdout, stderr) = text(&out);
    assert!(stdout.contains("terminal: /dev/pts/"), "{stdout}{stderr}");
    let (ok, _, stderr) = on_host(&laptop, &["down", "cluster.yaml"]);
    assert!(ok, "down: {stderr}");
    assert_eq!(
        laptop.auth_count() - before,
        1,
        "one authentication for all of it"
    );
}
