//! End to end, a job array (`launch --array`) on the test cluster: each task a run of its own
//! (its log, final state, `RAYSLURM_RUN_DIR`, record), `%N` honoured, `status` one line a task
//! from one squeue call, `logs` of one task, `cancel` of one task and then of the array, and a
//! Ray array whose every task starts a Ray of its own.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::harness::{Lab, NO_DASHBOARD, is_ended_state, lab, rayslurm, shim, text};

/// Tasks may wait behind other tests' jobs: this bound only catches an array that never ends.
const PATIENCE: Duration = Duration::from_secs(300);

/// A test's own shared directory and run store, and a PATH whose `squeue` counts its calls.
struct World {
    dir: PathBuf,
    state: PathBuf,
    counting: PathBuf,
}

impl World {
    fn new(lab: &Lab, name: &str) -> Self {
        let dir = lab.workdir(name);
        let counting = dir.join("counting-bin");
        std::fs::create_dir_all(&counting).unwrap();
        let real = which("squeue");
        shim(
            &counting,
            "squeue",
            &format!(
                "echo \"$*\" >> '{}'\nexec '{real}' \"$@\"",
                counting.join("squeue.calls").display()
            ),
        );
        Self {
            state: lab.workdir(&format!("{name}-state")),
            dir,
            counting,
        }
    }

    fn rayslurm(&self, args: &[&str]) -> Output {
        rayslurm(args)
            .cwd(&self.dir)
            .env("RAYSLURM_STATE_DIR", &self.state)
            .output()
    }

    /// `launch` of an array as experiment `exp`; returns the array's job id.
    fn launch(&self, exp: &str, args: &[&str]) -> String {
        let dir = self.dir.display().to_string();
        let mut argv = vec![
            "launch",
            "--exp-name",
            exp,
            "--log-dir",
            &dir,
            "--time",
            "5",
        ];
        argv.extend_from_slice(args);
        let out = self.rayslurm(&argv);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "launch failed: {stderr}");
        assert!(stderr.contains("tasks: "), "{stderr}");
        stdout.trim().to_owned()
    }

    /// `status --json TARGET`, with the squeue calls it made.
    fn status(&self, target: &str) -> (Vec<serde_json::Value>, Vec<String>) {
        let calls = self.counting.join("squeue.calls");
        let _ = std::fs::remove_file(&calls);
        let path = format!(
            "{}:{}",
            self.counting.display(),
            std::env::var("PATH").unwrap()
        );
        let out = rayslurm(["status", "--json", target])
            .cwd(&self.dir)
            .env("RAYSLURM_STATE_DIR", &self.state)
            .env("PATH", path)
            .output();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "status failed: {stderr}");
        let rows = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        let made = std::fs::read_to_string(&calls).unwrap_or_default();
        (rows, made.lines().map(str::to_owned).collect())
    }

    /// Polls `status` until every task's state satisfies `done`; returns the rows.
    fn wait_all(
        &self,
        target: &str,
        what: &str,
        done: impl Fn(&str) -> bool,
    ) -> Vec<serde_json::Value> {
        let start = Instant::now();
        loop {
            let (rows, calls) = self.status(target);
            // A status of runs not all ended asks squeue once, however many tasks.
            let open = rows
                .iter()
                .any(|r| !is_ended_state(r["state"].as_str().unwrap_or_default()));
            assert!(
                !open || calls.len() == 1,
                "one status asked squeue: {calls:?}"
            );
            if rows
                .iter()
                .all(|r| done(r["state"].as_str().unwrap_or_default()))
            {
                return rows;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "{target} never {what}: {rows:?}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

fn which(name: &str) -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Task `task` of array `job` is a run of its own: COMPLETED, with its own final state, its
/// own log with its own line, its own private directory, its log linked under its name.
fn check_task(world: &World, job: &str, task: usize, row: &serde_json::Value) {
    assert_eq!(row["job_id"], format!("{job}_{task}").as_str(), "{row}");
    assert_eq!(row["array_job"], job, "{row}");
    assert_eq!(
        (row["state"].as_str(), row["exit_code"].as_i64()),
        (Some("COMPLETED"), Some(0)),
        "{row}"
    );
    // Its own final state, written by its own bootstrap.
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(row["state_file"].as_str().unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (state["exit_code"].as_i64(), state["ending"].as_str()),
        (Some(0), Some("completed")),
        "{state}"
    );
    let log = Path::new(row["log"].as_str().unwrap());
    let text = std::fs::read_to_string(log).unwrap();
    let run_dir = row["run_dir"].as_str().unwrap();
    assert!(run_dir.ends_with(&format!("_{task}.d")), "{row}");
    assert!(
        text.contains(&format!("task {task} in {run_dir}\n")),
        "{text}"
    );
    for other in (0..4).filter(|t| *t != task) {
        assert!(!text.contains(&format!("task {other} ")), "{text}");
    }
    let link = world.dir.join(log.file_name().unwrap());
    assert_eq!(std::fs::read_link(&link).unwrap(), log);
}

/// When each of `n` tasks ran (start, end), as each noted in `span-TASK`.
fn spans(dir: &Path, n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|t| {
            let text = std::fs::read_to_string(dir.join(format!("span-{t}"))).unwrap();
            let mut w = text.split_whitespace().map(|x| x.parse::<f64>().unwrap());
            (w.next().unwrap(), w.next().unwrap())
        })
        .collect()
}

/// The most intervals among `spans` (start, end) that are open at one moment.
fn most_at_once(spans: &[(f64, f64)]) -> usize {
    spans
        .iter()
        .map(|&(start, _)| {
            spans
                .iter()
                .filter(|&&(s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn an_arrays_tasks_are_runs_of_their_own_at_most_n_at_once() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-array");
    let t0 = Instant::now();
    // Each task notes when it ran in a file of its own; 2 s each, so that tasks let run
    // together overlap.
    let command = "echo task $SLURM_ARRAY_TASK_ID in $RAYSLURM_RUN_DIR; \
                   s=$(date +%s.%N); sleep 2; echo $s $(date +%s.%N) > span-$SLURM_ARRAY_TASK_ID";
    let job = world.launch(
        "sweep",
        &[
            "--array",
            "0-3%2",
            "--no-ray",
            "-n",
            "1",
            "--command",
            command,
        ],
    );
    let rows = world.wait_all("sweep", "ended", is_ended_state);
    let ran = t0.elapsed().as_secs();

    // Four tasks, each COMPLETED as a run of its own; one squeue call at most (none once
    // every end is kept in the records).
    let (rows_again, calls) = world.status("sweep");
    assert_eq!(rows_again.len(), 4, "{rows_again:?}");
    assert!(calls.len() <= 1, "{calls:?}");
    for (task, row) in rows.iter().enumerate() {
        check_task(&world, &job, task, row);
    }
    let spans = spans(&world.dir, 4);
    let at_once = most_at_once(&spans);
    assert!(
        at_once <= 2,
        "{at_once} tasks ran at once under %2: {spans:?}"
    );

    // One task's log, by --task or Slurm's JOBID_TASK; the array alone asks which.
    let out = world.rayslurm(&["logs", "sweep", "--task", "2"]);
    assert!(text(&out).0.contains("task 2 in "), "{}", text(&out).0);
    assert!(!text(&out).0.contains("task 3 in "), "{}", text(&out).0);
    let out = world.rayslurm(&["logs", &format!("{job}_3")]);
    assert!(text(&out).0.contains("task 3 in "), "{}", text(&out).0);
    let out = world.rayslurm(&["logs", "sweep"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("is an array of 4 tasks"),
        "{}",
        text(&out).1
    );
    eprintln!("the array ran in {ran} s; at most {at_once} tasks at once: {spans:?}");
}

#[test]
fn cancel_of_one_task_leaves_the_others_and_of_the_array_ends_them() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-array-cancel");
    let job = world.launch(
        "sweep",
        &[
            "--array",
            "0-2",
            // A stop would kill the command 1 s after its TERM: a short wait tells a signal
            // passed on from a stop.
            "--stop-grace",
            "6",
            "--no-ray",
            "-n",
            "1",
            "--command",
            // Task 0 takes one TERM (then the next one ends it, as the others' first does).
            "[ $SLURM_ARRAY_TASK_ID = 0 ] && trap 'echo got TERM; trap - TERM' TERM; \
             echo started; while :; do sleep 0.2; done",
        ],
    );
    world.wait_all("sweep", "started", |s| s == "RUNNING");
    // A signal to one task's command (TERM, which would stop a run unless asked for so),
    // named for that task's own job: its command gets it, and it runs on.
    let zero = format!("{job}_0");
    let (rows, _) = world.status("sweep");
    let log = PathBuf::from(rows[0]["log"].as_str().unwrap());
    let wait_for = |line: &str| {
        let start = Instant::now();
        while !std::fs::read_to_string(&log).unwrap().contains(line) {
            assert!(start.elapsed() < PATIENCE, "{zero} never said {line}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    // Its trap is set once it has started.
    wait_for("started");
    let out = world.rayslurm(&["cancel", &zero, "--signal", "TERM"]);
    assert!(out.status.success(), "{}", text(&out).1);
    wait_for("got TERM");
    std::thread::sleep(Duration::from_secs(3));
    let one = format!("{job}_1");
    let out = world.rayslurm(&["cancel", &one]);
    assert!(out.status.success(), "{}", text(&out).1);
    // The cancelled task ends (through COMPLETING); the others run on.
    let start = Instant::now();
    let states = loop {
        let (rows, _) = world.status("sweep");
        let states: Vec<String> = rows
            .iter()
            .map(|r| r["state"].as_str().unwrap().to_owned())
            .collect();
        if is_ended_state(&states[1]) {
            break states;
        }
        assert!(start.elapsed() < PATIENCE, "{one} never ended: {rows:?}");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(states, ["RUNNING", "CANCELLED", "RUNNING"]);

    let out = world.rayslurm(&["cancel", "sweep"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), job);
    assert!(
        stderr.contains(&format!("cancelled job array {job} (sweep, 3 tasks)")),
        "{stderr}"
    );
    let rows = world.wait_all("sweep", "ended", is_ended_state);
    let states: Vec<&str> = rows.iter().map(|r| r["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["CANCELLED"; 3], "{rows:?}");
}

/// Each task of a Ray array starts a Ray of its own on its own node: its driver sees one node,
/// its remote task runs there, and no two tasks share a GCS.
#[test]
fn each_task_of_a_ray_array_has_a_ray_of_its_own() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-array-ray");
    let program = "import os, socket, ray\n\
        ray.init()\n\
        node = ray.get(ray.remote(lambda: socket.gethostname()).remote())\n\
        print('task', os.environ['SLURM_ARRAY_TASK_ID'], 'head', socket.gethostname(), 'node', node, \
        'nodes', len(ray.nodes()), 'gcs', ray.get_runtime_context().gcs_address)\n";
    std::fs::write(world.dir.join("where.py"), program).unwrap();
    let load_env = lab.load_env();
    let job = world.launch(
        "rays",
        &[
            "--array",
            "0-1",
            "-n",
            "1",
            "--load-env",
            &load_env,
            "--object-store-memory",
            "100000000",
            NO_DASHBOARD,
            "--command",
            "python where.py",
        ],
    );
    let rows = world.wait_all("rays", "ended", is_ended_state);
    let mut gcs = Vec::new();
    for (task, row) in rows.iter().enumerate() {
        assert_eq!(row["job_id"], format!("{job}_{task}").as_str());
        let text = std::fs::read_to_string(row["log"].as_str().unwrap()).unwrap();
        assert_eq!(row["state"], "COMPLETED", "{row}\n{text}");
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("task {task} head ")))
            .unwrap_or_else(|| panic!("no line of task {task} in:\n{text}"));
        let w: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            (w[5], w[7]),
            (w[3], "1"),
            "its remote task ran on its own node: {line}"
        );
        gcs.push(w[9].to_owned());
    }
    assert_ne!(gcs[0], gcs[1], "two tasks shared a Ray: {gcs:?}");
}

/// Each task of a multi-node `--per-node` array runs its ranks on two nodes, every rank of it
/// with its own task id, and its log holds its ranks' lines alone. (Whether two tasks share a
/// node is Slurm's to say: one that starts after the other ended may well take its nodes.)
#[test]
fn each_task_of_a_two_node_per_node_array_runs_on_its_own_nodes() {
    let Some((lab, _turn)) = lab() else {
        return;
    };
    let world = World::new(lab, "e2e-array-per-node");
    let job = world.launch(
        "ranks",
        &[
            "--array",
            "0-1",
            "--per-node",
            "-n",
            "2",
            "--command",
            "echo task $SLURM_ARRAY_TASK_ID rank $RAYSLURM_NODE_RANK of $RAYSLURM_NUM_NODES on $(hostname)",
        ],
    );
    let rows = world.wait_all("ranks", "ended", is_ended_state);
    for (task, row) in rows.iter().enumerate() {
        assert_eq!(row["job_id"], format!("{job}_{task}").as_str());
        let text = std::fs::read_to_string(row["log"].as_str().unwrap()).unwrap();
        assert_eq!(row["state"], "COMPLETED", "{row}\n{text}");
        let mut nodes: Vec<String> = (0..2)
            .map(|rank| {
                let said = format!("task {task} rank {rank} of 2 on ");
                let line = text
                    .lines()
                    .find(|l| l.contains(&said))
                    .unwrap_or_else(|| panic!("no `{said}` in:\n{text}"));
                line.rsplit(' ').next().unwrap().to_owned()
            })
            .collect();
        assert!(!text.contains(&format!("task {} ", 1 - task)), "{text}");
        nodes.sort();
        nodes.dedup();
        assert_eq!(nodes.len(), 2, "two ranks on one node: {text}");
    }
}
