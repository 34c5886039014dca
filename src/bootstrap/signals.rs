//! Signals the bootstrap reacts to, recorded by a handler and read by the main loop.
//!
//! [`TIME_WARNING`] is Slurm's word that the time limit nears (`--signal=B:URG@GRACE`, to
//! the batch step alone): it stops the run, but the command gets the user's `--signal` in its
//! place. A stop signal that `rayslurm cancel --signal` asked for is passed on and stops
//! nothing (see [`requested`]).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

use crate::bootstrap::node::say;
use crate::handoff::run_files::SIGNAL_REQUEST;
use crate::handoff::signal_name::SignalName;
pub(crate) use crate::handoff::signal_name::TIME_WARNING;
use crate::handoff::signal_request::SignalRequest;
use crate::slurm::env as slurm_env;

/// Signals forwarded to the user command; TERM and INT (and HUP) also stop the run, and the
/// time warning stops it too.
pub(crate) const HANDLED: [Signal; 6] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    TIME_WARNING,
];

static PENDING: AtomicU64 = AtomicU64::new(0);

extern "C" fn record(signal: i32) {
    if (0..64).contains(&signal) {
        PENDING.fetch_or(1 << signal, Ordering::SeqCst);
    }
}

/// Installs the recording handler for [`HANDLED`].
pub(crate) fn install() -> nix::Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(record),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in HANDLED {
        // SAFETY: the handler only does an atomic OR, which is async-signal-safe.
        unsafe { sigaction(signal, &action)? };
    }
    Ok(())
}

/// The signals received since the last call.
pub(crate) fn take() -> Vec<Signal> {
    let bits = PENDING.swap(0, Ordering::SeqCst);
    HANDLED
        .into_iter()
        .filter(|s| bits & (1 << (*s as i32)) != 0)
        .collect()
}

/// Whether the signal asks the run to stop.
pub(crate) fn stops(signal: Signal) -> bool {
    matches!(signal, Signal::SIGTERM | Signal::SIGINT | Signal::SIGHUP) || signal == TIME_WARNING
}

/// What the log says when `signal` came.
pub(crate) fn received(signal: Signal) -> String {
    if signal == TIME_WARNING {
        format!(
            "the time limit is near (Slurm's warning, {}, came)",
            signal.as_str()
        )
    } else {
        format!("{} received", signal.as_str())
    }
}

/// What the command (or every rank) gets for `signal`: the user's `--signal` in place of the
/// time warning, anything else as it came.
pub(crate) fn for_command(signal: Signal, chosen: SignalName) -> Signal {
    if signal == TIME_WARNING {
        chosen.0
    } else {
        signal
    }
}

/// Whether `signal` stops the run: a stop signal, unless `rayslurm cancel --signal` asked for it
/// to reach the command alone (see [`requested`]), for this attempt of this job (Slurm's
/// variables say which).
pub(crate) fn stops_run(run_dir: Option<&Path>, signal: Signal) -> bool {
    let var = |name| std::env::var(name).ok();
    let job_id = var(slurm_env::SLURM_JOB_ID).unwrap_or_default();
    let restart = var(slurm_env::SLURM_RESTART_COUNT)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    stops(signal) && !requested(run_dir, &job_id, restart, signal)
}

/// Whether `rayslurm cancel --signal` asked for this signal to reach the command only, in this
/// attempt of this job: it left a [`SignalRequest`] in the run's directory before sending it.
/// The request is used up; one for another job or attempt is not this one's.
fn requested(run_dir: Option<&Path>, job_id: &str, restart: u32, signal: Signal) -> bool {
    let Some(path) = run_dir.map(|d| d.join(SIGNAL_REQUEST)) else {
        return false;
    };
    let asked = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| SignalRequest::parse(&text))
        .filter(|r| r.is_for(job_id, restart));
    if asked.is_some_and(|a| a.signal.0 == signal) {
        let _ = std::fs::remove_file(&path);
        return true;
    }
    false
}

/// Removes a signal request left in the run's directory: an attempt starts with none, whatever
/// an earlier attempt or run (one `--after` another shares the directory) left unused.
pub(crate) fn clear_requests(run_dir: Option<&Path>, node: &str) {
    let Some(path) = run_dir.map(|d| d.join(SIGNAL_REQUEST)) else {
        return;
    };
    match std::fs::remove_file(&path) {
        Ok(()) => say(
            node,
            format!(
                "removed a signal request left by an earlier attempt or run: `{}`",
                path.display()
            ),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => say(
            node,
            format!("warning: cannot remove `{}`: {e}", path.display()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requested_term_is_used_once_and_only_for_that_signal() {
        let dir = tempfile::tempdir().unwrap();
        let d = Some(dir.path());
        let asked = |signal| requested(d, "77", 0, signal);
        assert!(!asked(Signal::SIGTERM));
        std::fs::write(dir.path().join(SIGNAL_REQUEST), "TERM 77.0\n").unwrap();
        assert!(!asked(Signal::SIGINT));
        assert!(asked(Signal::SIGTERM));
        assert!(!asked(Signal::SIGTERM), "used up");
        assert!(!requested(None, "77", 0, Signal::SIGTERM));
        // A USR1 never stops the run.
        assert!(!stops_run(d, Signal::SIGUSR1));
    }

    /// A regression test: a request left by an earlier attempt (or by the run an `--after` run
    /// follows, which shares its directory) made a real SIGTERM reach the command alone.
    #[test]
    fn a_request_for_another_attempt_or_job_does_not_stop_a_real_term_stopping_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let d = Some(dir.path());
        let file = dir.path().join(SIGNAL_REQUEST);
        for other in ["TERM 77.0\n", "TERM 76.1\n", "TERM 76\n", "TERM\n"] {
            std::fs::write(&file, other).unwrap();
            assert!(!requested(d, "77", 1, Signal::SIGTERM), "{other:?}");
        }
        std::fs::write(&file, "TERM 77\n").unwrap();
        assert!(
            requested(d, "77", 1, Signal::SIGTERM),
            "any attempt of the job"
        );
        std::fs::write(&file, "TERM 77.1\n").unwrap();
        clear_requests(d, "n1");
        assert!(!file.exists());
        assert!(
            !requested(d, "77", 1, Signal::SIGTERM),
            "cleared at the start"
        );
        clear_requests(d, "n1");
        clear_requests(None, "n1");
    }

    #[test]
    fn the_time_warning_reaches_the_command_as_its_chosen_signal() {
        let usr1 = SignalName(Signal::SIGUSR1);
        assert_eq!(for_command(TIME_WARNING, usr1), Signal::SIGUSR1);
        assert_eq!(for_command(Signal::SIGTERM, usr1), Signal::SIGTERM);
    }
}
