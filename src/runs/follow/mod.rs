//! Following a run until it ends (`launch --follow`, `logs -f`): its state while it waits,
//! then its log as it grows, then the job's own exit code.
//!
//! Two loops with different clocks. A watcher thread asks squeue at most once every 2 s (less
//! often while a job pends or runs for long, with backoff while squeue fails), so a slow or
//! restarting slurmctld never stalls the log. The main loop copies new log bytes every 0.2 s
//! and reacts to what the watcher saw. The log is job output and goes to stdout; state lines go
//! to stderr. When the job ends, the log is read until it has stopped growing for a moment, so
//! output still being flushed from the nodes is not lost.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::Result;
use chrono::{DateTime, FixedOffset, Local};
use indicatif::{ProgressBar, ProgressStyle};
use nix::sys::signal::Signal;

use crate::printer::Printer;
use crate::runs::cancel::{self, Cancelled};
use crate::runs::interrupt;
use crate::runs::log_tail::{LogTail, Start, TailEvent};
use crate::runs::status::{self, InQueue, JobStatus};
use crate::runs::store::{RecordedEnd, RunRecord, RunStore, StoredRun};
use crate::slurm::duration;
use crate::slurm::query::{self, Phase, QueryError, QueueEntry, Submission};

/// How often the log is read.
const TICK: Duration = Duration::from_millis(200);
/// The least time between two squeue calls of one follower.
const MIN_POLL: Duration = Duration::from_secs(2);
/// After the job ends, the log counts as complete once it has not grown for this long...
const QUIET: Duration = Duration::from_secs(1);
/// ...and the final state file has appeared, or this much time has passed.
const FINAL_STATE_WAIT: Duration = Duration::from_secs(3);
/// A log still growing this long after its job ended is left alone.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// What to follow, and how.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) record: &'a RunRecord,
    /// Where its record is kept, so the run's end can be remembered there.
    pub(crate) stored: Option<(&'a RunStore, &'a StoredRun)>,
    pub(crate) start: Start,
    pub(crate) cancel_on_interrupt: bool,
}

/// Follows the run until it ends or the user interrupts; returns the exit code rayslurm
/// should exit with.
pub(crate) fn follow(request: &Request, printer: &Printer) -> Result<ExitCode> {
    if let Err(e) = interrupt::install() {
        printer.warn(&format!(
            "cannot catch Ctrl-C ({e}); it will end rayslurm at once"
        ));
    }
    let record = request.record;
    let mut follower = Follower::new(record, request.start, printer);
    let outcome = follower.run()?;
    match outcome {
        Outcome::Ended(status) => {
            if let Some((store, stored)) = request.stored
                && let Err(e) = status::remember(store, stored, &status)
            {
                printer.warn(&format!(
                    "could not keep the run's end in its record: {e:#}"
                ));
            }
            Ok(ExitCode::from(status.shell_exit_code()))
        }
        Outcome::Interrupted(signal) => {
            follower.display.clear();
            let id = &record.job_id;
            if request.cancel_on_interrupt {
                printer.info(&format!(
                    "{signal}: cancelling job {id} (--cancel-on-interrupt)"
                ));
                let warn = |m: &str| printer.warn(m);
                match cancel::cancel(record, &warn)? {
                    Cancelled::Stopped(status) => {
                        printer.info(&format!(
                            "cancelled job {id} ({}): {}",
                            record.exp_name,
                            status.label()
                        ));
                    }
                    Cancelled::AlreadyEnded(status) => {
                        printer.info(&format!("job {id} had already ended: {}", status.label()));
                    }
                    Cancelled::IdReused(_) => {
                        printer.info(&format!(
                            "job {id} had already ended; Slurm has given its id to a newer job, which was left alone"
                        ));
                    }
                }
            } else {
                printer.info(&format!(
                    "stopped following job {id} ({}); it goes on. Cancel it with `rayslurm cancel {id}`",
                    record.exp_name
                ));
            }
            Ok(ExitCode::from(128 + signal as u8))
        }
        Outcome::ClosedOutput => Ok(ExitCode::from(128 + Signal::SIGPIPE as u8)),
    }
}

/// How following stopped.
#[derive(Debug)]
enum Outcome {
    Ended(JobStatus),
    Interrupted(Signal),
    /// stdout was closed (`rayslurm logs -f x | head`).
    ClosedOutput,
}

/// How the job was seen to end.
#[derive(Debug)]
enum End {
    /// Slurm shows it ended, or is cleaning up after the bootstrap wrote its final state.
    Queue(QueueEntry),
    /// slurmctld no longer knows it.
    Gone,
    /// The run's record already knows its end (Slurm is not asked: the job id may have been
    /// handed to another job since).
    Recorded(RecordedEnd),
}

struct Follower<'a> {
    record: &'a RunRecord,
    printer: &'a Printer,
    tail: LogTail,
    display: Display<'a>,
    /// The last phase squeue reported.
    phase: Option<Phase>,
    read_error: Option<String>,
}

impl<'a> Follower<'a> {
    fn new(record: &'a RunRecord, start: Start, printer: &'a Printer) -> Self {
        Self {
            record,
            printer,
            tail: LogTail::new(&record.log, start),
            display: Display::new(record, printer),
            phase: None,
            read_error: None,
        }
    }

    fn run(&mut self) -> Result<Outcome> {
        let end = match &self.record.ended {
            Some(end) => End::Recorded(end.clone()),
            None => match self.watch()? {
                Ok(end) => end,
                Err(outcome) => return Ok(outcome),
            },
        };
        self.display.clear();
        // A run whose end was recorded ended long ago: its log is complete.
        let settle = !matches!(end, End::Recorded(_));
        if self.drain(settle).is_err() {
            return Ok(Outcome::ClosedOutput);
        }
        let status = self.final_status(end);
        self.display.ended(&status);
        Ok(Outcome::Ended(status))
    }

    /// Streams the log and shows the job's state until the job ends (`Ok(Ok(end))`) or
    /// following stops for another reason (`Ok(Err(outcome))`).
    fn watch(&mut self) -> Result<Result<End, Outcome>> {
        let watcher = Watcher::spawn(self.record.job_id.clone(), self.record.submission());
        let end = loop {
            if let Some(signal) = interrupt::received() {
                return Ok(Err(Outcome::Interrupted(signal)));
            }
            match self.pump() {
                Ok(bytes) if bytes > 0 && self.phase.is_none_or(|p| p == Phase::Pending) => {
                    watcher.hurry();
                }
                Ok(_) => {}
                Err(Closed) => return Ok(Err(Outcome::ClosedOutput)),
            }
            let finished = self.record.state_file.exists();
            if finished {
                watcher.hurry();
            }
            let mut end = None;
            loop {
                match watcher.rx.try_recv() {
                    Ok(Observation::Queue(Some(entry))) => {
                        self.phase = Some(entry.state.phase());
                        self.display.state(&entry);
                        end = match entry.state.phase() {
                            Phase::Ended => Some(End::Queue(entry)),
                            Phase::Ending if finished => Some(End::Queue(entry)),
                            _ => end,
                        };
                    }
                    Ok(Observation::Queue(None)) => end = Some(End::Gone),
                    Ok(Observation::Failing { error, retry_in }) => {
                        self.display.squeue_failing(&error, retry_in);
                    }
                    Ok(Observation::Fatal(e)) => return Err(e.into()),
                    // The watcher stops after telling of the job's end.
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) if end.is_some() => break,
                    Err(TryRecvError::Disconnected) => {
                        anyhow::bail!("the squeue watcher stopped unexpectedly")
                    }
                }
            }
            if let Some(end) = end {
                break end;
            }
            self.display.tick();
            std::thread::sleep(TICK);
        };
        Ok(Ok(end))
    }

    /// Copies new log bytes to stdout; reports the file's events once.
    fn pump(&mut self) -> Result<u64, Closed> {
        let mut out = ClearFirst {
            out: std::io::stdout().lock(),
            display: &mut self.display,
        };
        let pumped = self.tail.pump(&mut out);
        match pumped {
            Ok(pumped) => {
                self.read_error = None;
                if let Some(event) = pumped.event {
                    self.display.log_event(event, self.tail.path());
                }
                Ok(pumped.bytes)
            }
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Closed),
            Err(e) => {
                let message = format!("cannot read the log `{}`: {e}", self.tail.path().display());
                if self.read_error.as_ref() != Some(&message) {
                    self.display.clear();
                    self.printer.warn(&message);
                    self.read_error = Some(message);
                }
                Ok(0)
            }
        }
    }

    /// Reads the rest of the log; with `settle`, until it has stopped growing for a moment
    /// (the nodes may still be flushing it when Slurm says the job ended).
    fn drain(&mut self, settle: bool) -> Result<(), Closed> {
        let start = Instant::now();
        let mut last_growth = start;
        let expect_output = settle && (self.tail.seen() || self.phase >= Some(Phase::Running));
        loop {
            if self.pump()? > 0 {
                last_growth = Instant::now();
            }
            if !expect_output || interrupt::received().is_some() {
                return Ok(());
            }
            let quiet = last_growth.elapsed() >= QUIET;
            let settled = self.record.state_file.exists() || start.elapsed() >= FINAL_STATE_WAIT;
            if quiet && settled {
                return Ok(());
            }
            if start.elapsed() >= DRAIN_LIMIT {
                self.printer.warn(&format!(
                    "the log `{}` is still growing {} s after the job ended; stopped reading it",
                    self.tail.path().display(),
                    DRAIN_LIMIT.as_secs()
                ));
                return Ok(());
            }
            std::thread::sleep(TICK);
        }
    }

    /// The ended job's status, worked out as `status` and `cancel` do.
    fn final_status(&self, end: End) -> JobStatus {
        let warn = |m: &str| self.printer.warn(m);
        let final_state = || status::read_final_state(self.record, &warn);
        match end {
            End::Queue(entry) => {
                status::of_run(self.record, InQueue::Own(&entry), final_state().as_ref())
            }
            End::Gone => status::of_run(self.record, InQueue::Gone, final_state().as_ref()),
            End::Recorded(end) => JobStatus::from_record(&end),
        }
    }
}

/// stdout is closed.
#[derive(Debug)]
struct Closed;

/// stdout for log text: the spinner is cleared (for good) before the first byte, so the log
/// never lands on a spinner line.
struct ClearFirst<'d, 'r, W> {
    out: W,
    display: &'d mut Display<'r>,
}

impl<W: std::io::Write> std::io::Write for ClearFirst<'_, '_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !buf.is_empty() {
            self.display.log_started();
        }
        self.out.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// What the watcher thread saw.
enum Observation {
    /// squeue answered: the job's line, or `None` if slurmctld no longer knows it (or has
    /// given its id to another job).
    Queue(Option<QueueEntry>),
    /// squeue failed; it will be asked again.
    Failing { error: String, retry_in: Duration },
    /// squeue cannot be run at all.
    Fatal(QueryError),
}

/// The thread that asks squeue about one job, gently. The job is known by its id and its
/// [`Submission`]: another job that has the id now is somebody else's.
struct Watcher {
    rx: Receiver<Observation>,
    stop: Arc<AtomicBool>,
    hurry: Arc<AtomicBool>,
}

impl Watcher {
    fn spawn(job_id: String, run: Submission) -> Self {
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let hurry = Arc::new(AtomicBool::new(false));
        let (stop2, hurry2) = (Arc::clone(&stop), Arc::clone(&hurry));
        std::thread::spawn(move || {
            let mut last_call: Option<Instant> = None;
            let mut phase: Option<Phase> = None;
            let mut phase_since = Instant::now();
            let mut failures = 0u32;
            while !stop2.load(Ordering::SeqCst) {
                let due = last_call.is_none_or(|t| {
                    let since = t.elapsed();
                    since >= poll_interval(phase, phase_since.elapsed(), failures)
                        || (since >= MIN_POLL && hurry2.swap(false, Ordering::SeqCst))
                });
                if !due {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                last_call = Some(Instant::now());
                let observation = match query::squeue(&[&job_id]) {
                    Ok(entries) => {
                        failures = 0;
                        let entry = query::own_line(&entries, &job_id)
                            .filter(|e| e.is_job_of(&run))
                            .cloned();
                        let now = entry.as_ref().map(|e| e.state.phase());
                        if now != phase {
                            phase = now;
                            phase_since = Instant::now();
                        }
                        Observation::Queue(entry)
                    }
                    Err(e @ QueryError::Missing(_)) => Observation::Fatal(e),
                    Err(e) => {
                        failures += 1;
                        Observation::Failing {
                            error: e.to_string(),
                            retry_in: poll_interval(phase, phase_since.elapsed(), failures),
                        }
                    }
                };
                let last = matches!(
                    observation,
                    Observation::Fatal(_) | Observation::Queue(None)
                ) || matches!(&observation, Observation::Queue(Some(e)) if e.state.phase() == Phase::Ended);
                if tx.send(observation).is_err() || last {
                    return;
                }
            }
        });
        Self { rx, stop, hurry }
    }

    /// Asks squeue again as soon as the 2 s limit allows (the log appeared, the job finished).
    fn hurry(&self) {
        self.hurry.store(true, Ordering::SeqCst);
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // The thread is not joined: it may be inside a squeue call that takes a while.
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The pause before the next squeue call: 2 s, growing while a job pends (to 30 s) or runs
/// (to 10 s) for long, and doubling from 2 s to 30 s while squeue fails.
fn poll_interval(phase: Option<Phase>, in_phase: Duration, failures: u32) -> Duration {
    if failures > 0 {
        let backoff = MIN_POLL.saturating_mul(1 << (failures - 1).min(5));
        return backoff.min(Duration::from_secs(30));
    }
    match phase {
        Some(Phase::Pending) => (in_phase / 10).clamp(MIN_POLL, Duration::from_secs(30)),
        Some(Phase::Running) => (in_phase / 30).clamp(MIN_POLL, Duration::from_secs(10)),
        _ => MIN_POLL,
    }
}

/// State lines on stderr: a spinner on a terminal while the job waits, plain lines (one a
/// change) otherwise.
struct Display<'a> {
    record: &'a RunRecord,
    printer: &'a Printer,
    submitted: Option<DateTime<FixedOffset>>,
    spinner: Option<ProgressBar>,
    /// Once the log flows, no spinner is drawn over it.
    log_started: bool,
    last_label: Option<String>,
    squeue_failing: bool,
    running_since_shown: bool,
}

impl<'a> Display<'a> {
    fn new(record: &'a RunRecord, printer: &'a Printer) -> Self {
        Self {
            record,
            printer,
            submitted: record.submitted(),
            spinner: None,
            log_started: false,
            last_label: None,
            squeue_failing: false,
            running_since_shown: false,
        }
    }

    fn job(&self) -> String {
        format!("job {} ({})", self.record.job_id, self.record.exp_name)
    }

    fn waited(&self) -> String {
        let secs = self
            .submitted
            .map(|t| (Local::now().fixed_offset() - t).num_seconds().max(0))
            .unwrap_or(0);
        duration::format(u64::try_from(secs).unwrap_or(0))
    }

    fn state(&mut self, entry: &QueueEntry) {
        if self.squeue_failing {
            self.squeue_failing = false;
            self.line(&format!(
                "squeue answers again; {} is {}",
                self.job(),
                entry.state.as_str()
            ));
        }
        let status = JobStatus::from_queue(entry, None, None);
        let label = status.label();
        let phase = entry.state.phase();
        if phase == Phase::Ended {
            // Said once, with the exit code, by `ended`.
            return;
        }
        if phase == Phase::Pending && self.printer.fancy() && !self.log_started {
            self.spinner.get_or_insert_with(|| {
                let bar = ProgressBar::new_spinner();
                if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
                    bar.set_style(style);
                }
                bar.enable_steady_tick(Duration::from_millis(120));
                bar
            });
            self.last_label = Some(label);
            self.tick();
            return;
        }
        if self.last_label.as_ref() == Some(&label) {
            return;
        }
        self.last_label = Some(label.clone());
        let text = match phase {
            Phase::Pending => format!("{} is {label}, waiting {}", self.job(), self.waited()),
            Phase::Running if !self.running_since_shown => {
                self.running_since_shown = true;
                match &entry.nodelist {
                    Some(nodes) => format!("{} is {label} on {nodes}", self.job()),
                    None => format!("{} is {label}", self.job()),
                }
            }
            _ => format!("{} is {label}", self.job()),
        };
        self.clear();
        self.line(&text);
    }

    /// Keeps the spinner's waiting time current.
    fn tick(&self) {
        if let (Some(spinner), Some(label)) = (&self.spinner, &self.last_label) {
            spinner.set_message(format!("{} {label}, waiting {}", self.job(), self.waited()));
        }
    }

    fn squeue_failing(&mut self, error: &str, retry_in: Duration) {
        if !self.squeue_failing {
            self.squeue_failing = true;
            self.clear();
            self.printer.warn(&format!(
                "{error}\n  the state of {} is unknown until squeue answers; asking again in {} s",
                self.job(),
                retry_in.as_secs()
            ));
        }
    }

    fn log_started(&mut self) {
        self.log_started = true;
        self.clear();
    }

    fn log_event(&mut self, event: TailEvent, path: &std::path::Path) {
        self.clear();
        let path = path.display();
        match event {
            TailEvent::Deleted => self.printer.warn(&format!(
                "the log `{path}` was deleted; still following the state of {}",
                self.job()
            )),
            TailEvent::Truncated => self.line(&format!(
                "the log `{path}` was truncated; reading it from its start"
            )),
            TailEvent::Replaced => self.line(&format!(
                "the log `{path}` was replaced; reading the new one from its start"
            )),
            TailEvent::Reappeared => self.line(&format!(
                "the log `{path}` is back; reading it from its start"
            )),
        }
    }

    fn ended(&mut self, status: &JobStatus) {
        self.clear();
        let mut text = format!("{} {}", self.job(), status.state);
        match status.exit_code {
            Some(code) => text.push_str(&format!(", exit code {code}")),
            None => text.push_str(", exit code unknown"),
        }
        if let Some(secs) = status.elapsed {
            text.push_str(&format!(", ran {}", duration::format(secs)));
        }
        if let Some(message) = &status.message {
            text.push_str(&format!(": {message}"));
        }
        self.line(&text);
    }

    fn line(&self, text: &str) {
        self.printer.info(&format!("rayslurm: {text}"));
    }

    fn clear(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_more_than_one_squeue_every_two_seconds() {
        for phase in [
            None,
            Some(Phase::Pending),
            Some(Phase::Running),
            Some(Phase::Ending),
        ] {
            for secs in [0, 1, 5, 60, 600, 86_400] {
                let d = poll_interval(phase, Duration::from_secs(secs), 0);
                assert!(d >= MIN_POLL, "{phase:?} {secs}: {d:?}");
            }
        }
    }

    #[test]
    fn backs_off_while_pending_long() {
        let pending = |s| poll_interval(Some(Phase::Pending), Duration::from_secs(s), 0);
        assert_eq!(pending(0), Duration::from_secs(2));
        assert_eq!(pending(10), Duration::from_secs(2));
        assert_eq!(pending(60), Duration::from_secs(6));
        assert_eq!(pending(3600), Duration::from_secs(30));
        let running = |s| poll_interval(Some(Phase::Running), Duration::from_secs(s), 0);
        assert_eq!(running(10), Duration::from_secs(2));
        assert_eq!(running(3600), Duration::from_secs(10));
    }

    #[test]
    fn backs_off_while_squeue_fails() {
        let failing = |n| poll_interval(Some(Phase::Running), Duration::ZERO, n);
        assert_eq!(failing(1), Duration::from_secs(2));
        assert_eq!(failing(2), Duration::from_secs(4));
        assert_eq!(failing(3), Duration::from_secs(8));
        assert_eq!(failing(5), Duration::from_secs(30));
        assert_eq!(failing(50), Duration::from_secs(30));
    }
}
