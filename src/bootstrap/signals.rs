//! Signals the bootstrap reacts to, recorded by a handler and read by the main loop.
//!
//! [`TIME_WARNING`] is Slurm's word that the time limit nears (`--signal=B:URG@GRACE`, to
//! the batch step alone): it stops the run, but the command gets the user's `--signal` in its
//! place. A stop signal that `rayslurm cancel --signal` asked for is passed on and stops
//! nothing (see [`requested`]).

use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

use crate::handoff::run_files::SIGNAL_REQUEST;
use crate::handoff::signal_name::SignalName;
pub(crate) use crate::handoff::signal_name::TIME_WARNING;

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
/// to reach the command alone (see [`requested`]).
pub(crate) fn stops_run(run_dir: Option<&std::path::Path>, signal: Signal) -> bool {
    stops(signal) && !requested(run_dir, signal)
}

/// Whether `rayslurm cancel --signal` asked for this signal to reach the command only: it
/// left the signal's name in the run's directory before sending it. The request is used up.
fn requested(run_dir: Option<&std::path::Path>, signal: Signal) -> bool {
    let Some(path) = run_dir.map(|d| d.join(SIGNAL_REQUEST)) else {
        return false;
    };
    let asked = std::fs::read_to_string(&path)
        .ok()
        .and_then(|name| name.trim().parse::<SignalName>().ok());
    if asked.is_some_and(|a| a.0 == signal) {
        let _ = std::fs::remove_file(&path);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requested_term_is_used_once_and_only_for_that_signal() {
        let dir = tempfile::tempdir().unwrap();
        let d = Some(dir.path());
        assert!(!requested(d, Signal::SIGTERM));
        std::fs::write(dir.path().join(SIGNAL_REQUEST), "TERM\n").unwrap();
        assert!(!requested(d, Signal::SIGINT));
        assert!(requested(d, Signal::SIGTERM));
        assert!(!requested(d, Signal::SIGTERM), "used up");
        assert!(!requested(None, Signal::SIGTERM));
        // A USR1 never stops the run; a TERM does unless it was asked for.
        assert!(!stops_run(d, Signal::SIGUSR1));
        assert!(stops_run(d, Signal::SIGTERM));
        std::fs::write(dir.path().join(SIGNAL_REQUEST), "TERM\n").unwrap();
        assert!(!stops_run(d, Signal::SIGTERM));
    }

    #[test]
    fn the_time_warning_reaches_the_command_as_its_chosen_signal() {
        let usr1 = SignalName(Signal::SIGUSR1);
        assert_eq!(for_command(TIME_WARNING, usr1), Signal::SIGUSR1);
        assert_eq!(for_command(Signal::SIGTERM, usr1), Signal::SIGTERM);
    }
}
