//! `submit` and `rsync-up` on a cluster shared with another user (docs/security.md): the
//! victim `rsalice` works from the group's 2775 project directory, where the attacker `rsbob`
//! can rewrite her files. A submitted script runs from its copy, made at submission: rewritten
//! after `submit` while the job waits in Ray's queue, the job still runs hers. The copy and the
//! files `rsync-up` copied are hers alone to read.

use std::path::Path;
use std::time::Duration;

use crate::harness::{lab, text, unique_name};
use crate::shared_cluster::two_users::{ATTACKER, CancelOnPanic, VICTIM, project_dir, sh_as};

fn as_victim(dir: &Path, script: &str) -> (bool, String, String) {
    let out = sh_as(VICTIM, dir, script);
    let (stdout, stderr) = text(&out);
    (out.status.success(), stdout, stderr)
}

#[test]
fn e2e_a_submitted_script_rewritten_by_another_user_while_queued_runs_as_submitted() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("rayyaml-two");
    let name = unique_name("rayyaml2").replace('-', "_");
    let yaml = format!(
        "cluster_name: {name}\nmax_workers: 0\nprovider:\n  type: slurm\n  time: '6'\n  load_env: \"source {}/bin/activate\"\nhead_node_type: head\navailable_node_types:\n  head:\n    resources: {{CPU: 2}}\n    node_config: {{cpus_per_task: 2}}\n",
        lab.venv.display()
    );
    std::fs::write(dir.join("cluster.yaml"), yaml).unwrap();
    let (ok, stdout, stderr) = as_victim(
        &dir,
        "\"$RAYSLURM\" up cluster.yaml --json --object-store-memory 100000000",
    );
    assert!(ok, "up as {VICTIM}: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let _cancel = CancelOnPanic(v["job_id"].as_str().unwrap().to_owned());
    // Every CPU taken for a while, so that the script waits in Ray's queue.
    let (ok, _, stderr) = as_victim(
        &dir,
        "\"$RAYSLURM\" exec -d cluster.yaml --num-cpus 2 -- sleep 12",
    );
    assert!(ok, "{stderr}");
    std::fs::write(dir.join("secret.txt"), "alice's secret\n").unwrap();
    let script = "import os\nprint('alice code from', os.path.abspath(__file__))\nprint(open(os.path.join(os.environ['RAYSLURM_CLUSTER_FILES'], 'in/secret.txt')).read().strip())\n";
    std::fs::write(dir.join("job.src"), script).unwrap();
    let (ok, _, stderr) = as_victim(
        &dir,
        "cat job.src > job.py && \"$RAYSLURM\" rsync-up cluster.yaml secret.txt in/ && rm secret.txt && \"$RAYSLURM\" submit -d --num-cpus 2 cluster.yaml job.py > job.id",
    );
    assert!(ok, "{stderr}");
    // The attacker rewrites the script in the shared directory while the job waits.
    let attack = sh_as(
        ATTACKER,
        &dir,
        "test -w job.py && printf '%s\\n' \"print('bob code')\" > job.py && echo rewritten",
    );
    assert_eq!(text(&attack).0.trim(), "rewritten", "{}", text(&attack).1);
    let (ok, out, stderr) = as_victim(
        &dir,
        &format!("\"$RAYSLURM\" logs {name} \"$(cat job.id)\" -f"),
    );
    assert!(ok, "{out}{stderr}");
    assert!(!out.contains("bob code"), "the rewritten script ran: {out}");
    assert!(out.contains("alice's secret"), "{out}");
    let copy = out
        .lines()
        .find_map(|l| l.strip_prefix("alice code from "))
        .unwrap_or_else(|| panic!("the submitted script did not run: {out}"));
    // Hers alone: the copy, and the files `rsync-up` copied.
    let files = Path::new(copy)
        .ancestors()
        .find(|p| p.extension().is_some_and(|e| e == "d"))
        .unwrap()
        .join("files/in/secret.txt");
    for path in [Path::new(copy), files.as_path()] {
        let read = sh_as(ATTACKER, &dir, &format!("cat '{}'", path.display()));
        let (said, why) = text(&read);
        assert!(
            !read.status.success(),
            "{ATTACKER} read {}: {said}",
            path.display()
        );
        assert!(why.contains("Permission denied"), "{why}");
    }
    let (ok, _, stderr) = as_victim(&dir, "\"$RAYSLURM\" down cluster.yaml");
    assert!(ok, "{stderr}");
    std::thread::sleep(Duration::from_secs(1));
}
