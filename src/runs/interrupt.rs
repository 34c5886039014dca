//! Ctrl-C (and SIGTERM, SIGHUP) while following a job: the handler only records the signal,
//! and the follower's loop stops at its next tick, says how to cancel, and exits 128 + signal.
//!
//! The handler is one-shot (`SA_RESETHAND`): a second Ctrl-C ends rayslurm at once, should a
//! Slurm command hang while we clean up.

use std::sync::atomic::{AtomicI32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

const WATCHED: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(signal: i32) {
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
}

/// Starts recording the watched signals instead of dying of them.
pub(crate) fn install() -> nix::Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(record),
        SaFlags::SA_RESTART | SaFlags::SA_RESETHAND,
        SigSet::empty(),
    );
    for signal in WATCHED {
        // SAFETY: the handler does one atomic compare-exchange, which is async-signal-safe.
        unsafe { sigaction(signal, &action)? };
    }
    Ok(())
}

/// The first watched signal received since [`install`], if any.
pub(crate) fn received() -> Option<Signal> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        n => Signal::try_from(n).ok(),
    }
}
