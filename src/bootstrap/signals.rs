//! Signals the bootstrap reacts to, recorded by a handler and read by the main loop.

use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

/// Signals forwarded to the user command; TERM and INT (and HUP) also stop the run.
pub(crate) const HANDLED: [Signal; 5] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
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
    matches!(signal, Signal::SIGTERM | Signal::SIGINT | Signal::SIGHUP)
}
