//! Ray's cluster YAML drives a cluster on the real test cluster, as `ray up`/`ray exec`/`ray
//! submit`/`ray rsync_up`/`ray attach`/`ray dashboard`/`ray down` drive a cloud's: every
//! command names the cluster by the file alone.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::clusters::lab_cluster::rs;
use crate::harness::{Job, assert_clean, first_line, node_tmp_entries, status_without_token};
use crate::harness::{RemovedFromNodes, lab, rayslurm, text};

/// A head of 2 nodes (Ray's head type, `max_workers: 0`): no worker type.
fn cluster_yaml(name: &str, load_env: &str) -> String {
    format!(
        "cluster_name: {name}\nmax_workers: 0\nprovider:\n  type: slurm\n  time: '8'\n  load_env: {load_env:?}\nsetup_commands:\n  - echo \"set up on $(hostname)\"\nhead_node_type: head\navailable_node_types:\n  head:\n    resources: {{CPU: 2}}\n    node_config: {{num_nodes: 2, cpus_per_task: 2}}\n"
    )
}

/// `up cluster.yaml` in `dir` with the file's `text`, waited until the cluster is up (as the
/// file's `cluster_name`): the cluster's job, and what `up` said.
fn up_yaml(dir: &Path, text_of_file: &str) -> (Job, String) {
    std::fs::write(dir.join("cluster.yaml"), text_of_file).unwrap();
    let name = text_of_file
        .lines()
        .find_map(|l| l.strip_prefix("cluster_name: "))
        .unwrap();
    let tmp_before = node_tmp_entries();
    let out = rayslurm([
        "up",
        "cluster.yaml",
        "--json",
        "--object-store-memory",
        "100000000",
    ])
    .cwd(dir)
    .output();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "up failed: {stderr}");
    assert!(
        stderr.contains(&format!("cluster {name} is up")),
        "{stderr}"
    );
    (
        Job::launched(&out.stdout, dir.to_owned(), tmp_before),
        stderr,
    )
}

#[test]
fn e2e_a_ray_cluster_yaml_drives_up_exec_submit_rsync_up_attach_dashboard_and_down() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("rayyaml");
    let name = format!("rayyaml{}", std::process::id());
    let (cluster, _) = up_yaml(&dir, &cluster_yaml(&name, &lab.load_env()));
    let (code, stdout, stderr) = rs(&dir, &["exec", "cluster.yaml", "--", "echo", "by-the-yaml"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("by-the-yaml"), "{stdout}");
    a_submitted_script_runs_from_its_private_copy(&dir);
    rsync_up_reaches_every_node(&dir);
    attach_runs_piped_commands_on_the_head(&dir, &cluster);
    the_dashboard_answers(&dir);
    let (code, _, stderr) = rs(&dir, &["down", "cluster.yaml"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("cluster {name} is down")),
        "{stderr}"
    );
    cluster.wait(Duration::from_secs(60));
    assert_clean(&cluster);
}

/// `submit`: the script's output and exit code, its arguments as given, run from its copy
/// (0600 in a 0700 directory), not from the file here.
fn a_submitted_script_runs_from_its_private_copy(dir: &Path) {
    let script = "import os, stat, sys\nhere = os.path.abspath(__file__)\nprint('args', sys.argv[1:])\nprint('copy', here)\nprint('mode', oct(stat.S_IMODE(os.stat(here).st_mode)), oct(stat.S_IMODE(os.stat(os.path.dirname(here)).st_mode)))\nsys.exit(3)\n";
    std::fs::write(dir.join("job.py"), script).unwrap();
    let (code, stdout, stderr) = rs(
        dir,
        &[
            "submit",
            "cluster.yaml",
            "job.py",
            "--lr",
            "0.1",
            "two words",
        ],
    );
    assert_eq!(code, Some(3), "the script's exit code: {stdout}{stderr}");
    assert!(
        stdout.contains("args ['--lr', '0.1', 'two words']"),
        "{stdout}"
    );
    assert!(stdout.contains("mode 0o600 0o700"), "{stdout}");
    let copy = stdout
        .lines()
        .find_map(|l| l.strip_prefix("copy "))
        .unwrap_or_default();
    assert!(!copy.starts_with(&dir.display().to_string()), "{copy}");
    assert!(copy.ends_with("/job.py"), "{copy}");
}

/// `rsync-up`: a directory copied into the cluster's files, which a job on each of its 2 nodes
/// reads at `$RAYSLURM_CLUSTER_FILES`; `..` refused.
fn rsync_up_reaches_every_node(dir: &Path) {
    std::fs::create_dir_all(dir.join("data/sub")).unwrap();
    std::fs::write(
        dir.join("data/sub/hello.txt"),
        "hello from the login node\n",
    )
    .unwrap();
    let (code, stdout, stderr) = rs(dir, &["rsync-up", "cluster.yaml", "data", "inputs"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("$RAYSLURM_CLUSTER_FILES/inputs"),
        "{stderr}"
    );
    let landed = Path::new(stdout.trim());
    let mode = std::fs::metadata(landed.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the files directory is private");
    let (code, stdout, stderr) = rs(
        dir,
        &[
            "exec",
            "cluster.yaml",
            "--per-node",
            "-n",
            "2",
            "--command",
            "echo \"$(hostname): $(cat \"$RAYSLURM_CLUSTER_FILES/inputs/sub/hello.txt\")\"",
        ],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let nodes: std::collections::BTreeSet<&str> = stdout
        .lines()
        .filter(|l| l.ends_with(": hello from the login node"))
        .filter_map(|l| l.split(']').next())
        .collect();
    assert_eq!(nodes.len(), 2, "read on both nodes: {stdout}");
    let (code, _, stderr) = rs(dir, &["rsync-up", "cluster.yaml", "data", "../out"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("leaves the cluster's files directory"),
        "{stderr}"
    );
}

/// `attach` with commands piped into its shell (no terminal: no `--pty`), and `-- CMD` with
/// its exit code.
fn attach_runs_piped_commands_on_the_head(dir: &Path, cluster: &Job) {
    let out = rayslurm(["attach", "cluster.yaml"])
        .cwd(dir)
        .stdin("echo \"attached to $SLURM_JOB_ID on $(hostname)\"\nexit 0\n")
        .output();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("attached to {} on ", cluster.id)),
        "{stdout}{stderr}"
    );
    // On a terminal (`script` gives it one), a shell with a terminal of its own there.
    let attach = rayslurm(["attach", "cluster.yaml"]).cwd(dir).command();
    let mut on_a_terminal = std::process::Command::new("script");
    for (key, value) in attach.get_envs() {
        match value {
            Some(v) => on_a_terminal.env(key, v),
            None => on_a_terminal.env_remove(key),
        };
    }
    let line = format!(
        "{} attach cluster.yaml",
        attach.get_program().to_string_lossy()
    );
    on_a_terminal
        .args(["-qec", &line, "/dev/null"])
        .current_dir(dir);
    let out = super::on_a_terminal(on_a_terminal);
    let (stdout, stderr) = text(&out);
    assert!(stdout.contains("terminal: /dev/pts/"), "{stdout}{stderr}");
    let (code, _, stderr) = rs(dir, &["attach", "cluster.yaml", "--", "sh", "-c", "exit 4"]);
    assert_eq!(code, Some(4), "{stderr}");
}

/// `dashboard cluster.yaml`: a local port that answers with the dashboard's page.
fn the_dashboard_answers(dir: &Path) {
    let local = 29600 + (std::process::id() % 300) as u16;
    let mut dashboard = rayslurm(["dashboard", "cluster.yaml", "--port", &local.to_string()])
        .cwd(dir)
        .command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = first_line(&mut dashboard);
    assert_eq!(url.trim(), format!("http://localhost:{local}"));
    let answer = status_without_token("127.0.0.1", u64::from(local), "/");
    assert!(answer.contains(" 200 "), "the dashboard's page: {answer}");
    dashboard.kill().unwrap();
    dashboard.wait().unwrap();
}

/// A CPU head (not exclusive: Slurm gives an exclusive job on a GPU node all its GPUs) and a
/// `gpu` node type on the lab's typed GPU nodes, in Ray's own format, with `file_mounts` under
/// the home, in the nodes' /tmp and where no user can make anything (`/rstest-…`), each named
/// with `unique`.
fn typed_cluster_yaml(name: &str, load_env: &str, unique: &str) -> String {
    format!(
        "cluster_name: {name}\nmax_workers: 2\nidle_timeout_minutes: 10\nprovider:\n  type: slurm\n  time: '8'\n  load_env: {load_env:?}\nfile_mounts:\n  ~/.rstest-{unique}/cfg.json: ./cfg.json\n  /tmp/rstest-{unique}-data: ./data\n  /rstest-{unique}-in: ./data\nhead_node_type: head\navailable_node_types:\n  head:\n    resources: {{CPU: 2}}\n    node_config: {{partition: lab, exclusive: false}}\n  gpu:\n    resources: {{CPU: 2, GPU: 1}}\n    max_workers: 1\n    node_config: {{partition: gpu, num_gpus: 'l4:1'}}\n"
    )
}

/// Ray's `available_node_types` become worker types: a task asking for a GPU grows the `gpu`
/// type, whose job Slurm gives an L4 and whose Ray node is of that type; the YAML's
/// `file_mounts` are where Ray's own put them, on the head and on the worker that joined
/// later; `down` leaves no job and nothing in a node's /tmp.
#[test]
fn e2e_a_ray_cluster_yamls_node_types_grow_with_the_work_that_needs_them() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = lab.workdir("rayyamltypes");
    let unique = dir.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::write(dir.join("cfg.json"), "file-cfg").unwrap();
    std::fs::create_dir(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/a.csv"), "dir-a").unwrap();
    let home = std::env::home_dir()
        .unwrap()
        .join(format!(".rstest-{unique}"));
    let _in_node_tmp = RemovedFromNodes(format!("rstest-{unique}-data").into());
    let name = format!("rayyamlt{}", std::process::id());
    let (cluster, stderr) = up_yaml(&dir, &typed_cluster_yaml(&name, &lab.load_env(), &unique));
    assert!(
        stderr.contains("Slurm takes worker type gpu's jobs"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "to `/rstest-{unique}-in` shown on each node in a private view"
        )),
        "{stderr}"
    );
    let work = format!(
        "import os, ray
ray.init()
def mounts():
    read = lambda p: open(os.path.expanduser(p)).read()
    return 'home=%s tmp=%s root=%s' % (read('~/.rstest-{unique}/cfg.json'), read('/tmp/rstest-{unique}-data/a.csv'), read('/rstest-{unique}-in/a.csv'))
f = ray.remote(num_gpus=1)(lambda: (len(ray.get_gpu_ids()), str(ray.get_runtime_context().get_node_labels().get('ray.io/node-group')), mounts()))
print('head', mounts())
print('gpu work', ray.get(f.remote()))"
    );
    let (code, stdout, stderr) = rs(&dir, &["exec", "cluster.yaml", "--", "python", "-c", &work]);
    let _ = std::fs::remove_dir_all(&home);
    assert_eq!(code, Some(0), "{stderr}");
    let mounted = "home=file-cfg tmp=dir-a root=dir-a";
    assert!(stdout.contains(&format!("head {mounted}")), "{stdout}");
    assert!(
        stdout.contains(&format!("gpu work (1, 'gpu', '{mounted}')")),
        "{stdout}"
    );
    let log = cluster.log_text();
    assert!(log.contains("(gpu)"), "a gpu worker job: {log}");
    let (code, _, stderr) = rs(&dir, &["down", "cluster.yaml"]);
    assert_eq!(code, Some(0), "{stderr}");
    cluster.wait(Duration::from_secs(60));
    let t0 = std::time::Instant::now();
    loop {
        let out = std::process::Command::new("squeue")
            .args([
                "--noheader",
                "--name",
                &format!("{name}-gpu"),
                "--format",
                "%i",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        if out.stdout.is_empty() {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{out:?}");
        std::thread::sleep(Duration::from_secs(1));
    }
    assert_clean(&cluster);
    // Shown to the cluster's programs only: made on no node.
    assert!(!Path::new(&format!("/rstest-{unique}-in")).exists());
}
