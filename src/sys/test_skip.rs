//! A test that cannot run here says so: skipped loudly on a developer's machine, a failure
//! under CI (`CI=true`) unless a named variable set to `0` skips it on purpose
//! (`RAYSLURM_TEST_CONTAINERS=0`, `RAYSLURM_TEST_AS_ROOT=0`). Every skip is also added to the
//! file `RAYSLURM_TEST_SKIPS` names, which tests/run.sh prints at its end: libtest hides what a
//! passing test prints. The unit tests and the integration tests' harness (by `#[path]`) share
//! this one file.

use std::io::Write;

/// The variable that skips on purpose the unit tests that need root (to make a file or a
/// listener of another user).
#[allow(dead_code)]
pub(crate) const AS_ROOT: &str = "RAYSLURM_TEST_AS_ROOT";

/// Skips `test` because of `why`: panics under `CI=true` unless `on_purpose` names a variable
/// set to `0`.
pub(crate) fn skip(test: &str, why: &str, on_purpose: Option<&str>) {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let asked = on_purpose.map(|v| (v, std::env::var(v).as_deref() == Ok("0")));
    match verdict(test, why, ci, asked) {
        Ok(line) => record(&line),
        Err(failure) => panic!("{failure}"),
    }
}

/// The line a skip prints, or, under CI (`ci`) without the variable that asks for it
/// (`asked`: its name, and whether it is `0`), the failure.
fn verdict(test: &str, why: &str, ci: bool, asked: Option<(&str, bool)>) -> Result<String, String> {
    match asked {
        Some((v, true)) => Ok(format!("SKIPPED {test}: {why} ({v}=0)")),
        Some((v, false)) if ci => Err(format!(
            "{test}: CI=true but {why} (set {v}=0 to skip it on purpose)"
        )),
        None if ci => Err(format!("{test}: CI=true but {why}")),
        _ => Ok(format!("SKIPPED {test}: {why}")),
    }
}

/// Says that `test` was skipped on purpose by `variable`, set to `0` for a program the test
/// runs (the Python package's tests run from the source tree).
#[allow(dead_code)]
pub(crate) fn skipped_on_purpose(test: &str, why: &str, variable: &str) {
    record(&format!("SKIPPED {test}: {why} ({variable}=0)"));
}

fn record(line: &str) {
    eprintln!("{line}");
    let Some(file) = std::env::var_os("RAYSLURM_TEST_SKIPS") else {
        return;
    };
    let added = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = added {
        eprintln!("cannot add to RAYSLURM_TEST_SKIPS: {e}");
    }
}

/// [`skip`] for the running test, which needs root: `RAYSLURM_TEST_AS_ROOT=0` skips it on
/// purpose.
#[allow(dead_code)]
pub(crate) fn needs_root(why: &str) {
    skip(&this_test(), why, Some(AS_ROOT));
}

/// The running test's name, as libtest names its thread.
#[allow(dead_code)]
pub(crate) fn this_test() -> String {
    std::thread::current().name().unwrap_or("a test").to_owned()
}

#[cfg(test)]
mod tests {
    use super::verdict;

    #[test]
    fn under_ci_a_skip_fails_unless_its_variable_asks_for_it() {
        let v = "RAYSLURM_TEST_X";
        assert_eq!(
            verdict("t", "no x", true, None),
            Err("t: CI=true but no x".into())
        );
        assert_eq!(
            verdict("t", "no x", true, Some((v, false))),
            Err("t: CI=true but no x (set RAYSLURM_TEST_X=0 to skip it on purpose)".into())
        );
        assert_eq!(
            verdict("t", "no x", true, Some((v, true))),
            Ok("SKIPPED t: no x (RAYSLURM_TEST_X=0)".into())
        );
        // On a developer's machine: skipped, loudly.
        assert_eq!(
            verdict("t", "no x", false, None),
            Ok("SKIPPED t: no x".into())
        );
        assert_eq!(
            verdict("t", "no x", false, Some((v, false))),
            Ok("SKIPPED t: no x".into())
        );
    }
}
