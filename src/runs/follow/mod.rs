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
use std::sync::mpsc::TryRecvError;
use std::time::{Duration, Instant};

use anyhow::Result;
use nix::sys::signal::Signal;

use crate::handoff::final_state::FinalState;
use crate::printer::Printer;
use crate::runs::cancel::{self, Cancelled};
use crate::runs::interrupt;
use crate::runs::log_tail::{LogTail, Start};
use crate::runs::status::{self, InQueue, JobStatus};
use crate::runs::store::{RecordedEnd, RunRecord, RunStore, StoredRun};
use crate::slurm::query::{Phase, QueueEntry};

mod display;
mod watcher;

use display::Display;
use watcher::{Observation, Watcher};

/// How often the log is read.
const TICK: Duration = Duration::from_millis(200);
/// The least time between two squeue calls of one follower (when a change hurries it).
pub(super) const MIN_POLL: Duration = Duration::from_secs(2);
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
            // The bootstrap has written the run's end (an attempt that was requeued has not).
            let finished = self.record.state_file.exists()
                && FinalState::read(&self.record.state_file)
                    .ok()
                    .flatten()
                    .is_some_and(|f| !f.last().requeued);
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
            End::Gone => status::of_run(self.record, InQueue::Gone(None), final_state().as_ref()),
            End::Recorded(end) => {
                status::of_recorded(&end, &self.record.log, final_state().as_ref())
            }
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
