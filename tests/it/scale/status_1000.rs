//! `status` of 1,000 recorded runs: one squeue call for all of them (and at most one sacct for
//! those squeue has forgotten), every run in the answer. A CLI test (the fake Slurm of
//! `runs::fake`), so it runs in tests/run.sh's step: it needs no big cluster.

use std::time::Instant;

use crate::runs::fake::{Fake, line_at, squeue_time};

#[test]
fn status_of_1000_recorded_runs_asks_squeue_once_and_shows_every_run() {
    let fake = Fake::new();
    let jobs: Vec<String> = (0..1000).map(|k| (50_000 + k).to_string()).collect();
    for job in &jobs {
        fake.seed("sweep", job, 0, None);
    }
    // The newest 500 run; of the others, 250 wrote their final state and 250 none (squeue
    // has forgotten them all: sacct is asked for those without one).
    for job in &jobs[250..500] {
        fake.final_state("sweep", job, 0, "completed");
    }
    let submitted = squeue_time(fake.submitted(&jobs[0]));
    let running = line_at("$id", "RUNNING", &submitted);
    fake.shim(
        "squeue",
        &format!("for id in $(seq 50500 50999); do {running}; done"),
    );
    fake.shim("sacct", "exit 0");
    let t0 = Instant::now();
    let ran = fake
        .run(["status", "--json", "--all"])
        .expect_status(0)
        .run();
    eprintln!("status of 1000 runs: {:?}", t0.elapsed());
    let rows = ran.rows();
    assert_eq!(rows.len(), 1000, "every run once: {}", ran.stderr);
    let count = |state: &str| rows.iter().filter(|r| r["state"] == state).count();
    assert_eq!(count("RUNNING"), 500, "{:?}", &rows[..3]);
    assert_eq!(count("COMPLETED"), 250, "{:?}", &rows[500..503]);
    let squeue = fake.calls("squeue");
    assert_eq!(
        squeue.len(),
        1,
        "one squeue call for 1000 runs, not {}",
        squeue.len()
    );
    for job in &jobs {
        assert!(squeue[0].contains(job.as_str()), "{job} not asked");
    }
    let sacct = fake.calls("sacct");
    assert!(sacct.len() <= 1, "at most one sacct call: {sacct:?}");
}
