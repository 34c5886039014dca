//! A worker's Ray start that fails, end to end: tried again (a `ray start` that fails once, a
//! raylet that dies while `ray start` still waits for it), or left out of a `--min-nodes` run
//! after every try. Each run's `ray` is a shim first on PATH that fails the way a loaded node's
//! does, then runs the lab's own.

use std::path::Path;
use std::time::Duration;

use crate::harness::{Job, Lab, assert_clean, expand_nodes, lab, launch_from};

/// The command of these runs: how many nodes Ray counts alive.
const ALIVE: &str =
    "python -c 'import ray; ray.init(); print(\"alive\", sum(n[\"Alive\"] for n in ray.nodes()))'";

/// Launches `args` (and [`ALIVE`]) from a new directory `name` with a `ray` shim first on
/// PATH: `shim` gets the directory and the lab's `ray` and gives the shim's bash body. The
/// run, once ended: the job, Slurm's view of it and its log.
fn launch_with_ray_shim(
    lab: &Lab,
    name: &str,
    shim: impl Fn(&Path, &str) -> String,
    args: &[&str],
) -> (Job, std::collections::HashMap<String, String>, String) {
    let dir = lab.workdir(name);
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let ray = format!("{}/bin/ray", lab.venv.display());
    crate::harness::shim(&bin, "ray", &shim(&dir, &ray));
    let load_env = format!("{}; export PATH={}:$PATH", lab.load_env(), bin.display());
    let mut argv = args.to_vec();
    argv.extend(["--command", ALIVE]);
    let job = launch_from(&dir, name, &load_env, &argv);
    let info = job.wait(Duration::from_secs(240));
    let log = job.log_text();
    (job, info, log)
}

/// A worker's `ray start` that fails once (as one does on a loaded node: "The current node
/// timed out during startup") is tried again after a pause, and the run goes on on every
/// node; what the failed try said is in the log.
#[test]
fn a_workers_ray_start_that_fails_once_is_tried_again_and_the_run_goes_on() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // `ray` whose first worker start on each node fails (a directory per node says it did).
    let shim = |dir: &Path, ray: &str| {
        format!(
            "if [ \"$1\" = start ] && [[ \" $* \" == *\" --address=\"* ]] && mkdir {dir}/failed-$(hostname) 2>/dev/null; then echo 'simulated: The current node timed out during startup' >&2; exit 1; fi\nexec {ray} \"$@\"",
            dir = dir.display()
        )
    };
    let (job, info, log) = launch_with_ray_shim(lab, "retryworker", shim, &["-n", "3"]);
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains("alive 3"), "{log}");
    for worker in &expand_nodes(&info["NodeList"])[1..] {
        assert!(
            log.contains(&format!(
                "Ray's start on {worker} failed (try 1 of 3): trying again in"
            )),
            "{worker}: {log}"
        );
    }
    assert!(
        log.contains("simulated: The current node timed out during startup"),
        "{log}"
    );
    assert_clean(&job);
}

/// A worker whose raylet dies while `ray start` still waits for it (as Ray's raylet aborts when
/// its dashboard agent is slow to start) ends that try at once and tries again: `ray start`
/// itself, told here to wait 300 s, would outlast the 150 s ready timeout (room for a second
/// try on a node loaded by every other test). The raylet is killed as soon as its own log
/// (`raylet.out`, which it opens itself as it starts) is there, before the worker's
/// once-a-second look may have seen it alive: the log says it was started. (Killed sooner, on
/// a loaded node, before it had opened its log, nothing would show it had started: Ray's own
/// abort comes after 15 s of waiting for its agent, log written.)
#[test]
fn a_worker_whose_raylet_dies_while_starting_tries_again_at_once() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // `ray` whose first worker start on each node loses its raylet (this run's, by its mark).
    let shim = |dir: &Path, ray: &str| {
        format!(
            r#"if [ "$1" = start ] && [[ " $* " == *" --address="* ]] && mkdir {dir}/killed-$(hostname) 2>/dev/null; then
  export RAY_raylet_start_wait_time_s=300
  {ray} "$@" &
  started=$!
  for _ in $(seq 600); do
    for p in $(pgrep -x raylet); do
      if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "RAYSLURM_RUN_MARK=$RAYSLURM_RUN_MARK"; then
        out=$(tr '\0' '\n' < /proc/$p/cmdline | sed -n 's/^--stdout_filepath=//p')
        for _ in $(seq 200); do [ -e "$out" ] && break; sleep 0.05; done
        kill -9 "$p"; echo 'simulated: the raylet died while starting' >&2; wait "$started"; exit $?
      fi
    done
    sleep 0.1
  done
  wait "$started"; exit $?
fi
exec {ray} "$@""#,
            dir = dir.display()
        )
    };
    let args = ["-n", "2", "--ready-timeout", "150"];
    let (job, info, log) = launch_with_ray_shim(lab, "rayletdies", shim, &args);
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains("alive 2"), "{log}");
    let worker = expand_nodes(&info["NodeList"]).pop().unwrap();
    assert!(
        log.contains(&format!(
            "the raylet of node {worker} exited while Ray was starting"
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!("Ray's start on {worker} failed (try 1 of 3)")),
        "{log}"
    );
    assert_clean(&job);
}

/// With `--min-nodes`, a worker whose `ray start` fails every try is left out: the run goes
/// on with the nodes that joined.
#[test]
fn a_worker_that_fails_every_try_is_left_out_of_a_min_nodes_run() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    // `ray` that never starts a worker on the job's last node.
    let shim = |_: &Path, ray: &str| {
        format!(
            "last=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | tail -n1)\nif [ \"$1\" = start ] && [ \"$(hostname)\" = \"$last\" ]; then echo 'simulated: The current node timed out during startup' >&2; exit 1; fi\nexec {ray} \"$@\""
        )
    };
    let args = ["-n", "3", "--min-nodes", "2"];
    let (job, info, log) = launch_with_ray_shim(lab, "minnodesretry", shim, &args);
    assert_eq!(info["JobState"], "COMPLETED", "{log}");
    assert!(log.contains("alive 2"), "{log}");
    let last = expand_nodes(&info["NodeList"]).pop().unwrap();
    for tried in 1..=2 {
        assert!(
            log.contains(&format!(
                "Ray's start on {last} failed (try {tried} of 3): trying again in"
            )),
            "{log}"
        );
    }
    assert!(
        log.contains(&format!("Ray on node {last} failed to start")),
        "{log}"
    );
    assert_clean(&job);
}
