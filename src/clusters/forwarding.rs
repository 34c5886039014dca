//! The login node's side of a forward, as `dashboard` and `forward` share it: the local port
//! each remote one gets, the one `ssh -L` line that reaches them from a laptop, and serving
//! until Ctrl-C. The listeners themselves are [`super::relay`]'s.

use std::time::Duration;

use anyhow::{Context, Result};

use crate::error::UsageError;
use crate::runs::interrupt;

/// The local port a forward listens on, started by `listen` (which takes a port, 0 for any,
/// and returns the one it listens on): the port `asked` for, or an error naming it (moving
/// elsewhere would leave whoever holds it serving the user's browser something of their
/// own); without one, `natural` (the remote port's own number) where it is free, else any
/// free port. `what` names what is forwarded, `other` how to ask for another port.
pub(crate) fn local_port(
    asked: Option<u16>,
    natural: u16,
    what: &str,
    other: &str,
    listen: impl Fn(u16) -> Result<u16>,
) -> Result<u16> {
    match asked {
        Some(asked) => Ok(listen(asked).map_err(|e| {
            UsageError::new(format!(
                "cannot forward {what} to port {asked} on this machine: {e:#}"
            ))
            .hint(format!(
                "the port is taken (by you or another user): {other}, or none to take a free one"
            ))
        })?),
        None => listen(natural).or_else(|_| listen(0)),
    }
}

/// This login node's name, as a laptop's `ssh` reaches it.
pub(crate) fn login_host() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "LOGIN_NODE".to_owned())
}

/// The `ssh` command that forwards `ports` of a laptop to the same ports of this login node.
pub(crate) fn from_a_laptop(ports: &[u16]) -> String {
    let tunnels: Vec<String> = ports
        .iter()
        .map(|p| format!("-L {p}:localhost:{p}"))
        .collect();
    format!("ssh -N {} {}", tunnels.join(" "), login_host())
}

/// Serves (the listeners run on threads of their own) until Ctrl-C, SIGTERM or SIGHUP.
pub(crate) fn until_interrupted() -> Result<()> {
    interrupt::install().context("cannot handle Ctrl-C")?;
    while interrupt::received().is_none() {
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_asked_for_is_that_port_or_an_error_and_none_asked_any_free_one() {
        let taken = |p: u16| -> Result<u16> {
            match p {
                8265 => anyhow::bail!("address in use"),
                0 => Ok(40000),
                p => Ok(p),
            }
        };
        let pick = |asked| local_port(asked, 8265, "port 8265", "ask another", taken);
        assert_eq!(pick(Some(9000)).unwrap(), 9000);
        assert_eq!(
            pick(None).unwrap(),
            40000,
            "its own number taken: a free one"
        );
        let err = pick(Some(8265)).unwrap_err();
        let usage = err.downcast_ref::<UsageError>().unwrap();
        assert_eq!(
            usage.to_string(),
            "cannot forward port 8265 to port 8265 on this machine: address in use"
        );
        assert_eq!(
            local_port(None, 9000, "x", "y", taken).unwrap(),
            9000,
            "its own number where free"
        );
    }

    #[test]
    fn a_laptop_reaches_every_port_with_one_line() {
        let line = from_a_laptop(&[8080, 9000]);
        assert!(
            line.starts_with("ssh -N -L 8080:localhost:8080 -L 9000:localhost:9000 "),
            "{line}"
        );
        assert!(!line.ends_with(' '), "{line}");
    }
}
