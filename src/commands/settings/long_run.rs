//! A long run's flags (`launch`'s `--signal`, `--requeue`, `--max-requeues`,
//! `--restarts-on-error`) resolved into the
//! bootstrap's [`LongRunOptions`]; the files' `signal` is checked by `up` too.

use crate::env_vars;
use crate::error::{UsageError, show};
use crate::handoff::cluster::{DEFAULT_MAX_REQUEUES, LongRunOptions};
use crate::handoff::signal_name::SignalName;
use crate::launch::config::{Sources, layered};

/// `--signal`, `--requeue` and `--max-requeues` (with their environment and file values) into
/// the options the bootstrap gets.
pub(super) fn resolve(
    (signal, requeue, max_requeues, restarts_on_error): (
        Option<SignalName>,
        bool,
        Option<u32>,
        Option<u32>,
    ),
    src: &Sources,
) -> Result<LongRunOptions, UsageError> {
    let (p, u) = (&src.project, &src.user);
    // A site's RAYSLURM_MAX_REQUEUES (which clap reads into the flag) is for the runs that
    // ask for --requeue; only the flag itself without --requeue is a mistake.
    let from_variable = std::env::var_os(env_vars::MAX_REQUEUES).is_some_and(|v| !v.is_empty());
    if max_requeues.is_some() && !requeue && !from_variable {
        return Err(UsageError::new("--max-requeues goes with --requeue")
            .hint("add --requeue to put the job back in the queue when it is stopped"));
    }
    Ok(LongRunOptions {
        signal: signal_of(signal, src)?,
        requeue,
        max_requeues: layered(max_requeues, &p.max_requeues, &u.max_requeues)
            .unwrap_or(DEFAULT_MAX_REQUEUES),
        restarts_on_error: restarts_on_error.unwrap_or(0),
    })
}

/// `--signal`, else the files' `signal` (checked here, where it is read), else TERM.
pub(super) fn signal_of(
    signal: Option<SignalName>,
    src: &Sources,
) -> Result<SignalName, UsageError> {
    let parse_signal = |name: &str| {
        name.parse::<SignalName>().map_err(|why| {
            let origin = src.origin("signal", false).unwrap_or_default();
            UsageError::new(format!("invalid signal {} ({origin})", show(name))).hint(why)
        })
    };
    match (signal, &src.project.signal, &src.user.signal) {
        (Some(s), _, _) => Ok(s),
        (None, Some(s), _) | (None, None, Some(s)) => parse_signal(s),
        (None, None, None) => Ok(SignalName::default()),
    }
}
