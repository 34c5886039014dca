//! A signal as users name it (`TERM`, `USR1`, `SIGUSR2`): `--signal` (what the command gets
//! when the time limit nears) and `cancel --signal`. Launcher and bootstrap both read it here.

use std::fmt;
use std::str::FromStr;

use nix::sys::signal::Signal;

/// The signal Slurm sends the bootstrap (and only it: `#SBATCH --signal=B:URG@GRACE`) when
/// the time limit nears. One of its own, so that it is never taken for the SIGTERM of
/// `scancel` or of a preemption; its default action is to do nothing, so a stray one harms
/// no one.
pub(crate) const TIME_WARNING: Signal = Signal::SIGURG;

/// A signal the user may send to their command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SignalName(pub(crate) Signal);

impl Default for SignalName {
    fn default() -> Self {
        Self(Signal::SIGTERM)
    }
}

impl SignalName {
    /// The name without `SIG`, as Slurm and `kill -l` write it.
    pub(crate) fn short(self) -> &'static str {
        self.0.as_str().trim_start_matches("SIG")
    }
}

impl fmt::Display for SignalName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short())
    }
}

impl FromStr for SignalName {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        let upper = value.trim().to_ascii_uppercase();
        let full = if upper.starts_with("SIG") {
            upper
        } else {
            format!("SIG{upper}")
        };
        match Signal::from_str(&full) {
            Ok(Signal::SIGKILL | Signal::SIGSTOP) => Err(format!(
                "`{value}` cannot be caught, so the command could not act on it; use TERM, INT, USR1 or USR2"
            )),
            Ok(s) if s == TIME_WARNING => Err(format!(
                "`{value}` is what rayslurm asks Slurm for to learn that the time is up; use TERM, INT, USR1 or USR2"
            )),
            Ok(s) => Ok(Self(s)),
            Err(_) => Err(format!(
                "`{value}` is not a signal name; use one such as TERM, INT, HUP, USR1 or USR2"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_or_without_sig_in_any_case() {
        for (given, want) in [
            ("TERM", Signal::SIGTERM),
            ("usr1", Signal::SIGUSR1),
            ("SIGUSR2", Signal::SIGUSR2),
            (" int ", Signal::SIGINT),
        ] {
            assert_eq!(given.parse::<SignalName>(), Ok(SignalName(want)), "{given}");
        }
        assert_eq!(SignalName(Signal::SIGUSR1).to_string(), "USR1");
        for bad in ["TERMINATE", "", "9", "KILL", "SIGSTOP", "URG"] {
            assert!(bad.parse::<SignalName>().is_err(), "{bad}");
        }
    }
}
