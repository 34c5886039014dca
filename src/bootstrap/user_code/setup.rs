//! `--setup`: a command run on every node, in parallel, before Ray starts there or the
//! command runs; the run goes on only once every node's setup succeeded. A setup that fails
//! fails the run at once, naming the node and its exit code (its output is in the log).

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::bootstrap::node::{TICK, say};
use crate::bootstrap::signals;
use crate::bootstrap::user_code::command::{Output, UserCommand};
use crate::bootstrap::user_code::skypilot;
use crate::sys::process::exit_code_of;

/// How long a setup told to stop has before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The message of a failed setup.
pub(crate) fn setup_failed(node: &str, code: i32) -> String {
    format!("setup failed on {node} with exit code {code} (its output is in the log)")
}

/// Runs `setup` through bash with `env` on `node` and waits for it; `told_to_stop` (or a stop
/// signal) ends it early (SIGTERM, then SIGKILL after 5 s). Returns its exit code (128 + the
/// signal that ended it), or 1 if bash cannot start. A setup that succeeds says so in the log,
/// with its time: the node's own line, whatever the others do.
pub(crate) fn run(
    node: &str,
    setup: &str,
    env: &[(String, String)],
    output: &Output,
    told_to_stop: &dyn Fn() -> bool,
) -> i32 {
    let t0 = Instant::now();
    let env = skypilot::with_setup_names(env);
    let Ok(mut cmd) = UserCommand::spawn(setup, &env, output) else {
        return 1;
    };
    let mut stopping: Option<Instant> = None;
    loop {
        match cmd.try_wait() {
            Ok(Some(status)) => {
                let code = exit_code_of(status);
                if code == 0 {
                    say(
                        node,
                        format!(
                            "setup done on {node} after {:.1} s",
                            t0.elapsed().as_secs_f64()
                        ),
                    );
                }
                return code;
            }
            Ok(None) => {}
            Err(_) => return 1,
        }
        if stopping.is_none() && (told_to_stop() || signals::take().into_iter().any(signals::stops))
        {
            cmd.signal(Signal::SIGTERM);
            stopping = Some(Instant::now());
        }
        if stopping.is_some_and(|t| t.elapsed() > STOP_GRACE) {
            cmd.signal(Signal::SIGKILL);
        }
        std::thread::sleep(TICK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setups_exit_code_and_environment() {
        let env = vec![("RAYSLURM_NODE_RANK".to_owned(), "3".to_owned())];
        let never = || false;
        assert_eq!(
            run(
                "n1",
                "exit $RAYSLURM_NODE_RANK",
                &env,
                &Output::Inherit,
                &never
            ),
            3
        );
        assert_eq!(run("n1", "true", &env, &Output::Inherit, &never), 0);
        let always = || true;
        assert_eq!(run("n1", "sleep 30", &env, &Output::Inherit, &always), 143);
    }
}
