//! Ray's token authentication, on for every cluster rayslurm starts: without it anyone who
//! can reach a node may attach to the cluster and run code as the job's owner (the ports are
//! even predictable). The head makes a fresh random token for the run, in the run's private
//! directory (mode 0600), and every attempt of the job makes its own: a token that leaked once
//! opens nothing after a requeue, and an earlier attempt's files are never read again. Every
//! node's `ray start` and the user's command are given its path, never its value.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::bootstrap::allocation::Allocation;
use crate::handoff::bootstrap_args::BootstrapArgs;
use crate::handoff::job_env;
use crate::handoff::run_files::{check_private_file, create_private_dir, token_file};
use crate::sys::socket_owner;
use crate::sys::staged_file::Staged;

/// How this run's Ray authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RayAuth {
    /// Token authentication with the token in this file.
    Token(PathBuf),
    /// `--no-ray-auth`: the user chose an open cluster.
    Disabled,
}

impl RayAuth {
    /// The head's: makes the run's directory and this attempt's token, and removes the tokens
    /// of earlier attempts of the same job.
    pub(crate) fn prepare(args: &BootstrapArgs, alloc: &Allocation) -> Result<Self> {
        if args.cluster.ray.no_ray_auth {
            return Ok(Self::Disabled);
        }
        let dir = args
            .run_dir
            .as_deref()
            .context("no --run-dir was given, so the run has nowhere private for Ray's token")?;
        create_private_dir(dir)?;
        for restart in 0..alloc.restart_count {
            let _ = std::fs::remove_file(token_file(dir, &alloc.job_id, restart));
        }
        let path = token_file(dir, &alloc.job_id, alloc.restart_count);
        let mut file = Staged::new(dir, "token", 0o600)?;
        file.write_all(new_token()?.as_bytes())?;
        // `Some`: the name was taken, which no process of this attempt does: refused.
        if file.place_new(&path)?.is_some() {
            anyhow::bail!(
                "`{}` was there before this attempt made it: remove it and launch again",
                path.display()
            );
        }
        check_private_file(&path)?;
        Ok(Self::Token(path))
    }

    /// A worker's: the head made the token before it started the workers.
    pub(crate) fn of_worker(args: &BootstrapArgs, alloc: &Allocation) -> Self {
        match (&args.run_dir, args.cluster.ray.no_ray_auth) {
            (Some(dir), false) => Self::Token(token_file(dir, &alloc.job_id, alloc.restart_count)),
            _ => Self::Disabled,
        }
    }

    /// The environment every `ray start` and the command get.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::Token(path) => vec![
                (job_env::RAY_AUTH_MODE, "token".to_owned()),
                (job_env::RAY_AUTH_TOKEN_PATH, path.display().to_string()),
            ],
            Self::Disabled => vec![(job_env::RAY_AUTH_MODE, "disabled".to_owned())],
        }
    }

    /// The token file, where there is one.
    pub(crate) fn token_path(&self) -> Option<&Path> {
        match self {
            Self::Token(path) => Some(path),
            Self::Disabled => None,
        }
    }
}

/// How the start-up check went.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Checked {
    /// A request without the token was refused and one with it accepted.
    Refused,
    /// Refused without the token, but the run's own token was not accepted either (the
    /// command will find out); said in the log, not a reason to stop a run that is closed.
    OwnTokenRefused(String),
    /// Nothing answered where the dashboard would be within the patience given
    /// (`--include-dashboard=false`, or a dashboard too slow on a loaded node): nothing to ask.
    NoAnswer,
}

/// Asks the head's dashboard, on this node, for `/api/version` without the run's token (it
/// must be refused: an older Ray silently ignores `RAY_AUTH_MODE`) and with it (it must be
/// accepted: the token Ray read is the run's). A dashboard that does not answer (yet) is asked
/// again until `patience` has passed. The error, the one reason to stop the run, says Ray
/// served a request without the token.
pub(crate) fn check(
    token: &Path,
    dashboard_port: u16,
    patience: std::time::Duration,
) -> Result<Checked, String> {
    ensure_dashboard_is_ours(dashboard_port)?;
    let url = format!("http://127.0.0.1:{dashboard_port}/api/version");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(10)))
        .http_status_as_error(false)
        .build()
        .into();
    let asked = std::time::Instant::now();
    let without = loop {
        match agent.get(&url).call() {
            Ok(response) => break response.status().as_u16(),
            Err(_) if asked.elapsed() < patience => {
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            Err(_) => return Ok(Checked::NoAnswer),
        }
    };
    if without != 401 && without != 403 {
        return Err(format!(
            "Ray accepted a request without the run's token (HTTP {without} from {url}): this Ray does not enforce RAY_AUTH_MODE=token, so anyone on the network could use the cluster; install a newer Ray, or pass --no-ray-auth to run it open on purpose"
        ));
    }
    let value = match std::fs::read_to_string(token) {
        Ok(v) => v,
        Err(e) => {
            return Ok(Checked::OwnTokenRefused(format!(
                "cannot read Ray's token `{}`: {e}",
                token.display()
            )));
        }
    };
    // Asked again right before the token goes: the port may have changed hands meanwhile.
    ensure_dashboard_is_ours(dashboard_port)?;
    let with = agent
        .get(&url)
        .header("Authorization", &format!("Bearer {}", value.trim()))
        .call()
        .map(|r| r.status().as_u16());
    match with {
        Ok(200) => Ok(Checked::Refused),
        Ok(status) => Ok(Checked::OwnTokenRefused(format!(
            "Ray refused the run's own token (HTTP {status} from {url}): Ray did not read the token file `{}`",
            token.display()
        ))),
        Err(e) => Ok(Checked::OwnTokenRefused(format!(
            "cannot ask Ray's dashboard at {url} with the token: {e}"
        ))),
    }
}

/// The dashboard's port on this node is held by the user's own sockets, or by none, on every
/// address of the node (127.0.0.1, its IPs, `::`): the token is never sent to a port another
/// user bound first (anyone with a shell on the node may bind it, before Ray's dashboard does
/// or after it died), and a port held on the node's IP, where the login node would connect,
/// counts as held. The error is a message for the job's log, and stops the run: someone else
/// holds the run's port.
pub(crate) fn ensure_dashboard_is_ours(dashboard_port: u16) -> Result<(), String> {
    socket_owner::ensure_port_is_ours(dashboard_port).map_err(|e| e.to_string())
}

/// The ports of `ports` (name, port) on `host` that answer a request without the token with
/// success: each is open to anyone who can reach the node.
pub(crate) fn open_without_token(
    host: &str,
    ports: &[(&'static str, u16)],
) -> Vec<(String, u16, u16)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    ports
        .iter()
        .filter_map(|(name, port)| {
            let url = format!("http://{host}:{port}/");
            let status = agent.get(&url).call().ok()?.status().as_u16();
            (200..300)
                .contains(&status)
                .then(|| ((*name).to_owned(), *port, status))
        })
        .collect()
}

/// 32 random bytes from the kernel, as 64 hex digits.
fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for Ray's token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::cluster::ClusterOptions;
    use crate::handoff::cluster::RayOptions;
    use std::os::unix::fs::PermissionsExt;

    fn alloc(restart_count: u32) -> Allocation {
        Allocation {
            job_id: "42".into(),
            node: "n1".into(),
            nodes: vec!["n1".into()],
            cpus_on_node: None,
            gpus_on_node: 0,
            memory_on_node: None,
            restart_count,
        }
    }

    fn head(dir: &Path, no_ray_auth: bool) -> BootstrapArgs {
        BootstrapArgs::head(
            dir.join("x.state.json"),
            dir.join("x.d"),
            0,
            ClusterOptions {
                ray: RayOptions {
                    no_ray_auth,
                    ..RayOptions::default()
                },
                ..ClusterOptions::default()
            },
        )
    }

    #[test]
    fn every_attempt_makes_its_own_private_token_and_workers_find_it() {
        let tmp = tempfile::tempdir().unwrap();
        let args = head(tmp.path(), false);
        let auth = RayAuth::prepare(&args, &alloc(0)).unwrap();
        let path = auth.token_path().unwrap().to_owned();
        let token = std::fs::read_to_string(&path).unwrap();
        assert_eq!(token.len(), 64);
        assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let worker = BootstrapArgs {
            worker: true,
            state_file: None,
            ..args.clone()
        };
        assert_eq!(RayAuth::of_worker(&worker, &alloc(0)), auth);
        // The next attempt makes a new token under a new name; the old one is gone.
        let second = RayAuth::prepare(&args, &alloc(1)).unwrap();
        let second_path = second.token_path().unwrap().to_owned();
        assert_ne!(second_path, path);
        assert_ne!(std::fs::read_to_string(&second_path).unwrap(), token);
        assert!(!path.exists(), "the first attempt's token is removed");
        assert_eq!(RayAuth::of_worker(&worker, &alloc(1)), second);
        let env = auth.env();
        assert!(env.contains(&("RAY_AUTH_MODE", "token".to_owned())));
        assert!(
            env.iter().all(|(_, v)| !v.contains(&token)),
            "never the value"
        );
    }

    #[test]
    fn a_token_open_to_others_is_refused_and_an_open_run_dir_is_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let args = head(tmp.path(), false);
        let dir = tmp.path().join("x.d");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        // Planted, readable by all: never used as the run's token.
        let planted = token_file(&dir, "42", 0);
        std::fs::write(&planted, "0".repeat(64)).unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = RayAuth::prepare(&args, &alloc(0)).unwrap_err().to_string();
        assert!(
            err.contains("was there before this attempt made it"),
            "{err}"
        );
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::remove_file(&planted).unwrap();
        assert!(RayAuth::prepare(&args, &alloc(0)).is_ok());
    }

    #[test]
    fn a_squatter_on_the_dashboard_port_is_never_sent_the_token() {
        let Some(squatter) = crate::sys::socket_owner::squatter::Squatter::start() else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let token = tmp.path().join("token");
        std::fs::write(&token, "secret-token-value").unwrap();
        let port = squatter.port;
        let err = check(&token, port, std::time::Duration::from_secs(2)).unwrap_err();
        assert!(
            err.contains(&format!("port {port}")) && err.contains("user id 65534"),
            "{err}"
        );
        let seen = squatter.seen();
        assert!(!seen.contains("secret-token-value"), "{seen}");
        assert!(seen.is_empty(), "not even asked without the token: {seen}");
        // The control: the same server of this process's own user is asked, with the token.
        let own = crate::sys::socket_owner::squatter::Squatter::own().unwrap();
        let checked = check(&token, own.port, std::time::Duration::from_secs(2));
        assert!(checked.is_ok(), "{:?}", checked.err());
        let seen = own.seen();
        assert!(seen.contains("AUTH Bearer secret-token-value"), "{seen}");
    }

    #[test]
    fn opting_out_disables_it_explicitly() {
        let tmp = tempfile::tempdir().unwrap();
        let auth = RayAuth::prepare(&head(tmp.path(), true), &alloc(0)).unwrap();
        assert_eq!(auth, RayAuth::Disabled);
        assert_eq!(auth.env(), vec![("RAY_AUTH_MODE", "disabled".to_owned())]);
        assert!(!tmp.path().join("x.d").exists());
    }

    /// Answers one request as a stand-in for Ray's dashboard: `without` to a request without
    /// `Bearer the-token`, `with` to one with it.
    fn answer(stream: std::net::TcpStream, without: u16, with: u16) {
        use std::io::{BufRead, BufReader, Write};
        let mut reader = BufReader::new(&stream);
        let (mut authorized, mut line) = (false, String::new());
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && !line.trim().is_empty() {
            authorized |= line.to_ascii_lowercase().starts_with("authorization:")
                && line.trim_end().ends_with("Bearer the-token");
            line.clear();
        }
        let status = if authorized { with } else { without };
        let _ = write!(
            &stream,
            "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
    }

    /// A stand-in dashboard on 127.0.0.1, this process's own (so the port is the user's).
    fn dashboard(without: u16, with: u16) -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                answer(stream, without, with);
            }
        });
        port
    }

    fn token_in(dir: &Path) -> PathBuf {
        let token = dir.join("token");
        std::fs::write(&token, "the-token\n").unwrap();
        token
    }

    #[test]
    fn the_start_up_check_tells_a_closed_dashboard_from_an_open_one() {
        let tmp = tempfile::tempdir().unwrap();
        let token = token_in(tmp.path());
        let patience = std::time::Duration::from_secs(5);
        for refused in [401, 403] {
            let port = dashboard(refused, 200);
            assert_eq!(
                check(&token, port, patience),
                Ok(Checked::Refused),
                "{refused}"
            );
        }
        // Open without the token: the one reason to stop the run.
        let err = check(&token, dashboard(200, 200), patience).unwrap_err();
        assert!(
            err.contains("accepted a request without the run's token (HTTP 200"),
            "{err}"
        );
        // Closed, but the run's own token refused too: said, not fatal.
        let port = dashboard(401, 403);
        let Ok(Checked::OwnTokenRefused(why)) = check(&token, port, patience) else {
            panic!("the own token refused");
        };
        assert!(
            why.contains("Ray refused the run's own token (HTTP 403"),
            "{why}"
        );
        let Ok(Checked::OwnTokenRefused(why)) =
            check(&tmp.path().join("missing"), dashboard(401, 200), patience)
        else {
            panic!("no token to send");
        };
        assert!(why.contains("cannot read Ray's token"), "{why}");
    }

    /// A dashboard that is not up yet is asked again until `patience` has passed; one that
    /// never comes is no answer, not an error.
    #[test]
    fn a_dashboard_not_up_yet_is_waited_for_within_the_patience() {
        let tmp = tempfile::tempdir().unwrap();
        let token = token_in(tmp.path());
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let started = std::time::Instant::now();
        assert_eq!(
            check(&token, port, std::time::Duration::from_millis(1200)),
            Ok(Checked::NoAnswer)
        );
        assert!(started.elapsed() >= std::time::Duration::from_millis(1200));
        // The same port answers a second after the first request.
        let late = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
            let mut answered = 0;
            for stream in listener.incoming().take(2) {
                answer(stream.unwrap(), 401, 200);
                answered += 1;
            }
            answered
        });
        assert_eq!(
            check(&token, port, std::time::Duration::from_secs(20)),
            Ok(Checked::Refused)
        );
        assert_eq!(late.join().unwrap(), 2);
    }

    #[test]
    fn only_ports_that_answer_without_the_token_are_reported_open() {
        let open = dashboard(200, 200);
        let closed = dashboard(401, 200);
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let nothing = free.local_addr().unwrap().port();
        drop(free);
        let found = open_without_token(
            "127.0.0.1",
            &[
                ("metrics", closed),
                ("dashboard agent", open),
                ("runtime env agent", nothing),
            ],
        );
        assert_eq!(found, vec![("dashboard agent".to_owned(), open, 200)]);
        assert!(open_without_token("127.0.0.1", &[("metrics", closed)]).is_empty());
    }

    /// Each attempt's token is a fresh 64-digit secret; a worker of an open run has none.
    #[test]
    fn tokens_are_fresh_and_an_open_runs_worker_has_none() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        let tmp = tempfile::tempdir().unwrap();
        let open = BootstrapArgs {
            worker: true,
            ..head(tmp.path(), true)
        };
        assert_eq!(RayAuth::of_worker(&open, &alloc(0)), RayAuth::Disabled);
        assert_eq!(RayAuth::Disabled.token_path(), None);
        let auth = RayAuth::Token(tmp.path().join("t"));
        assert_eq!(auth.token_path(), Some(tmp.path().join("t").as_path()));
        assert_eq!(
            auth.env(),
            vec![
                ("RAY_AUTH_MODE", "token".to_owned()),
                (
                    "RAY_AUTH_TOKEN_PATH",
                    tmp.path().join("t").display().to_string()
                ),
            ]
        );
    }
}
