//! End to end on the test cluster, as the lab's user `rsalice` (not root: each node's view is
//! made in a user namespace of hers): a task file whose `file_mounts` go where no user can make
//! anything on a node, a copy (`/rstest-…-in: ./data`) and a named storage (`/rstest-…-out:
//! {name: …}`, SkyPilot's bucket), runs Ray on two nodes. A Ray task on each node reads the
//! copy and writes into the storage; after the run the storage, in her state directory, keeps
//! both files, and neither path was made on any node.

use std::path::Path;

use crate::harness::{lab, text};
use crate::shared_cluster::two_users::{VICTIM, project_dir, sh_as, uid, victim_runs};

#[test]
fn e2e_paths_no_user_can_make_are_seen_by_every_ray_worker_and_a_storage_is_kept() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let dir = project_dir("rootview");
    let u = dir.file_name().unwrap().to_string_lossy().into_owned();
    let (input, output) = (format!("/rstest-{u}-in"), format!("/rstest-{u}-out"));
    let storage = Path::new("/home")
        .join(VICTIM)
        .join(".local/state/rayslurm/storage")
        .join(format!("rstest-{u}"));
    let script = format!(
        r#"import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as On
ray.init()
@ray.remote(num_cpus=0)
def write():
    node = ray.get_runtime_context().get_node_id()
    with open(f"{output}/{{node}}", "w") as f:
        f.write(open("{input}/in.txt").read().strip())
    return node
nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
done = ray.get([write.options(scheduling_strategy=On(n, soft=False)).remote() for n in nodes])
print("written by", len(set(done)), "nodes")
"#
    );
    std::fs::write(dir.join("write.py"), script).unwrap();
    let task = format!(
        "num_nodes: 2\nworkdir: .\nfile_mounts:\n  {input}: ./data\n  {output}:\n    name: rstest-{u}\n    store: s3\n    mode: MOUNT\nrayslurm:\n  ray_job: true\nrun: |\n  echo \"head reads $(cat {input}/in.txt)\"\n  python write.py\n"
    );
    std::fs::write(dir.join("task.yaml"), task).unwrap();
    for file in ["write.py", "task.yaml"] {
        std::os::unix::fs::chown(dir.join(file), Some(uid(VICTIM)), None).unwrap();
    }
    let out = sh_as(VICTIM, &dir, "mkdir data && echo copy-in > data/in.txt");
    assert!(out.status.success(), "{}", text(&out).1);
    let run = victim_runs(lab, &dir, "", "task.yaml");
    let kept: Vec<String> = std::fs::read_dir(&storage)
        .map(|d| {
            d.map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
                .collect()
        })
        .unwrap_or_default();
    let _ = std::fs::remove_dir_all(&storage);
    let log = &run.log_text;
    assert_eq!(run.info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains("head reads copy-in"), "{log}");
    assert!(log.contains("written by 2 nodes"), "{log}");
    assert_eq!(kept, ["copy-in", "copy-in"], "{log}");
    for path in [&input, &output] {
        assert!(!Path::new(path).exists(), "{path} was made on the node");
    }
}
