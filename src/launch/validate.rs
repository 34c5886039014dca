//! Checks on user values before anything is written or submitted.
//!
//! Each check returns a [`UsageError`] that names the flag, shows the value and says how to fix
//! it. Values that become `#SBATCH` lines must not be able to add a line of their own.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::error::{UsageError, show};

/// An experiment name becomes a file name and a Slurm job name.
pub(crate) fn exp_name(value: &str) -> Result<(), UsageError> {
    name_as("--exp-name", "--exp-name resnet-sweep", value)
}

/// A cluster's name (`up NAME`), which is an experiment name too.
pub(crate) fn cluster_name(value: &str) -> Result<(), UsageError> {
    name_as("NAME", "rayslurm up my-cluster", value)
}

/// A name as [`exp_name`] checks it, the error naming the argument as `what` with `example`.
fn name_as(what: &str, example: &str, value: &str) -> Result<(), UsageError> {
    let bad = |why: &str| {
        Err(UsageError::new(format!("invalid {what} {}: {why}", show(value)))
            .hint(format!("use ASCII letters, digits, `_`, `-`, `.` and `+`, starting with a letter or digit, e.g. `{example}`")))
    };
    if value.is_empty() {
        return bad("it is empty");
    }
    if value.len() > 100 {
        return bad("it is longer than 100 characters");
    }
    if value.starts_with('-') || value.starts_with('.') {
        return bad("it starts with `-` or `.`");
    }
    if value.contains("..") {
        return bad("it contains `..`");
    }
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_-.+".contains(*c)))
    {
        return bad(&format!("it contains {}", show(&c.to_string())));
    }
    Ok(())
}

/// A value written after `#SBATCH --flag=`: one line, no control characters.
pub(crate) fn directive(flag: &str, value: &str) -> Result<(), UsageError> {
    if value.is_empty() {
        return Err(UsageError::new(format!("{flag} is empty"))
            .hint(format!("give {flag} a value or leave the flag out")));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(UsageError::new(format!(
            "{flag} {} contains the control character {}, which would break the #SBATCH line",
            show(value),
            show(&c.to_string())
        ))
        .hint("directive values must be a single line of printable text"));
    }
    if value.chars().any(char::is_whitespace) && flag != "--sbatch-arg" {
        return Err(
            UsageError::new(format!("{flag} {} contains white space", show(value)))
                .hint("Slurm names and lists have no spaces; separate list items with `,`"),
        );
    }
    Ok(())
}

/// `--sbatch-arg` must be one option, e.g. `--mail-type=END`.
pub(crate) fn sbatch_arg(value: &str) -> Result<(), UsageError> {
    directive("--sbatch-arg", value)?;
    if !value.starts_with('-') {
        return Err(UsageError::new(format!(
            "--sbatch-arg {} is not an sbatch option",
            show(value)
        ))
        .hint("pass one option a flag, starting with `-`, e.g. `--sbatch-arg=--mail-type=END`"));
    }
    if is_array_option(value) {
        return Err(UsageError::new(format!(
            "--sbatch-arg {}: an array job goes through `--array`, which gives each task its own log, state and record",
            show(value)
        ))
        .hint("pass `--array SPEC` (e.g. `--array 0-7%2`) instead of the sbatch option"));
    }
    if value.chars().any(char::is_whitespace) {
        // Written as `--opt="a b"`: sbatch splits #SBATCH lines on white space outside quotes.
        let quotable = value
            .split_once('=')
            .is_some_and(|(k, v)| !k.chars().any(char::is_whitespace) && !v.contains('"'));
        if !quotable {
            return Err(UsageError::new(format!(
                "--sbatch-arg {} has white space that an #SBATCH line cannot carry",
                show(value)
            ))
            .hint("write it as `--option=value with spaces` (no `\"` in the value)"));
        }
    }
    Ok(())
}

/// sbatch's long options that start with `a` (Slurm's `src/common/slurm_opt.c`, 20.02 to
/// 25.11; `autocomplete` since 23.02). sbatch reads options with `getopt_long`, which takes
/// any unambiguous abbreviation: `--arr=0-3` is `--array=0-3`, while `--a` and `--ac` match
/// more than one and sbatch refuses them itself.
const SBATCH_LONG_A: [&str; 4] = ["account", "acctg-freq", "array", "autocomplete"];

/// sbatch's short options that take no argument, so that another may follow in the same word
/// (`-Ha0-3` is `-H -a 0-3`).
const SBATCH_SHORT_FLAGS: &str = "HOQVWhsv";

/// Whether an sbatch option (its first word: `--array=0-3`, `--arr 1`, `-a0-3`, `-Ha1`) asks
/// for an array job, as sbatch would read it.
fn is_array_option(value: &str) -> bool {
    let word = value.split_whitespace().next().unwrap_or_default();
    if let Some(long) = word.strip_prefix("--") {
        let name = long.split_once('=').map_or(long, |(name, _)| name);
        let mut matches = SBATCH_LONG_A.iter().filter(|o| o.starts_with(name));
        // An exact name wins over options it abbreviates; an empty name is no option.
        return !name.is_empty()
            && (name == "array" || (matches.next() == Some(&"array") && matches.next().is_none()));
    }
    let Some(short) = word.strip_prefix('-') else {
        return false;
    };
    for c in short.chars() {
        if c == 'a' {
            return true;
        }
        if !SBATCH_SHORT_FLAGS.contains(c) {
            // The rest of the word is this option's argument.
            return false;
        }
    }
    false
}

static TIME: LazyLock<Regex> = LazyLock::new(|| {
    // Slurm's accepted forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
    Regex::new(r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}|\d+-\d{1,2}:\d{1,2}|\d+-\d{1,2}:\d{1,2}:\d{1,2})$")
        .expect("valid regex")
});

/// `--time` in one of Slurm's formats, or `UNLIMITED`/`INFINITE`.
pub(crate) fn time(value: &str) -> Result<(), UsageError> {
    if TIME.is_match(value)
        || value.eq_ignore_ascii_case("unlimited")
        || value.eq_ignore_ascii_case("infinite")
    {
        return Ok(());
    }
    Err(UsageError::new(format!("invalid --time {}", show(value))).hint(
        "use minutes, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM` or `D-HH:MM:SS`, e.g. `--time 2:00:00`",
    ))
}

/// Sizes as sbatch(1) documents them for `--mem` and `--mem-per-cpu`: a whole number of
/// megabytes, or with a unit K, M, G or T; sbatch reads only the unit's letter, so `16GB` (as
/// Ray's own docs write sizes) is 16G.
static MEMORY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d+([KMGT]B?)?$").expect("valid regex"));

/// `--mem`/`--mem-per-cpu`: a whole number with an optional K, M, G or T suffix (`B` after it
/// allowed, as sbatch allows it).
pub(crate) fn memory(flag: &str, value: &str) -> Result<(), UsageError> {
    if MEMORY.is_match(&value.to_ascii_uppercase()) {
        return Ok(());
    }
    Err(
        UsageError::new(format!("invalid {flag} {}", show(value))).hint(format!(
            "use a whole number (megabytes) with an optional unit K, M, G or T, e.g. `{flag} 16G` or `{flag} 16GB`"
        )),
    )
}

/// A valid memory size as sbatch reads it and as the `#SBATCH` line is written: the unit
/// upper-case, without a trailing `B` (`16gb` is `16G`).
pub(crate) fn slurm_memory(value: &str) -> String {
    let upper = value.to_ascii_uppercase();
    match upper.strip_suffix('B') {
        Some(rest) if rest.ends_with(['K', 'M', 'G', 'T']) => rest.to_owned(),
        _ => upper,
    }
}

/// A memory size as Slurm writes it (`4G`, `512M`, a plain number is megabytes), in bytes.
pub(crate) fn memory_bytes(flag: &str, value: &str) -> Result<u64, UsageError> {
    memory(flag, value)?;
    let upper = slurm_memory(value);
    let (number, shift) = match upper.chars().last() {
        Some('K') => (&upper[..upper.len() - 1], 10),
        Some('M') => (&upper[..upper.len() - 1], 20),
        Some('G') => (&upper[..upper.len() - 1], 30),
        Some('T') => (&upper[..upper.len() - 1], 40),
        _ => (upper.as_str(), 20),
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| UsageError::new(format!("{flag} {} is too large", show(value))))
}

pub(crate) static ENV_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*$").expect("valid regex"));

/// `--env KEY=VALUE` (or `--secret`, named by `flag`), split into its name and value.
pub(crate) fn env_pair(flag: &str, value: &str) -> Result<(String, String), UsageError> {
    let Some((key, val)) = value.split_once('=') else {
        return from_here(flag, value);
    };
    if !ENV_NAME.is_match(key) {
        // Only the name: the value may be a secret.
        return Err(UsageError::new(format!(
            "{flag} {}=...: {} is not a valid variable name",
            show(key),
            show(key)
        ))
        .hint("names start with a letter or `_` and hold only letters, digits and `_`"));
    }
    Ok((key.to_owned(), val.to_owned()))
}

/// `--env NAME` alone: the value this shell has for NAME (as SkyPilot's `--env NAME`), so that
/// a secret never appears on a command line, which `ps` shows to every user of the machine.
fn from_here(flag: &str, name: &str) -> Result<(String, String), UsageError> {
    if !ENV_NAME.is_match(name) {
        return Err(UsageError::new(format!(
            "{flag} {} is neither NAME=VALUE nor a variable's name",
            show(name)
        ))
        .hint(format!(
            "write {flag} NAME=VALUE, or export NAME in this shell and give {flag} NAME (e.g. `{flag} HF_TOKEN`)"
        )));
    }
    match std::env::var(name) {
        Ok(value) => Ok((name.to_owned(), value)),
        Err(std::env::VarError::NotPresent) => Err(UsageError::new(format!(
            "{flag} {name} takes its value from this shell, and {name} is not set here"
        ))
        .hint(format!(
            "export {name}=... first, or write {flag} {name}=VALUE"
        ))),
        Err(std::env::VarError::NotUnicode(_)) => Err(UsageError::new(format!(
            "{flag} {name}: the value of {name} in this shell is not UTF-8 text"
        ))
        .hint(format!("write {flag} {name}=VALUE"))),
    }
}

/// The node-local directory (`/tmp`, `/var/tmp`, `/dev/shm`, `$TMPDIR`) that `dir` is in, if
/// any: compute nodes have their own, so a job launched from there cannot run where it was
/// launched.
pub(crate) fn node_local_root(dir: &Path, tmpdir: Option<&Path>) -> Option<PathBuf> {
    let roots = [
        Path::new("/tmp"),
        Path::new("/var/tmp"),
        Path::new("/dev/shm"),
    ];
    roots
        .into_iter()
        .chain(tmpdir.filter(|t| t.is_absolute() && *t != Path::new("/")))
        .find(|root| dir.starts_with(root))
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_names() {
        for ok in ["x", "resnet-sweep", "a_b.c+1", "A1"] {
            assert!(exp_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "a/b", "..", "a..b", "a b", "a\nb", "-x", ".x", "x$y", "x'y", "é",
        ] {
            assert!(exp_name(bad).is_err(), "{bad:?}");
        }
        assert!(exp_name(&"x".repeat(101)).is_err());
    }

    #[test]
    fn directive_values_cannot_add_a_line() {
        assert!(directive("--partition", "gpu").is_ok());
        assert!(directive("--node", "node[01-04,07]").is_ok());
        for bad in ["gpu\n#SBATCH --x", "a\rb", "a\u{0}b", "a b", "", "a\u{85}b"] {
            assert!(directive("--partition", bad).is_err(), "{bad:?}");
        }
        let err = directive("--account", "x\ny").unwrap_err();
        assert!(err.message.contains(r"`x\ny`"), "{}", err.message);
    }

    #[test]
    fn sbatch_args() {
        assert!(sbatch_arg("--mail-type=END").is_ok());
        assert!(sbatch_arg("--comment=two words").is_ok());
        assert!(sbatch_arg("mail").is_err());
        assert!(sbatch_arg("--comment two").is_err());
        assert!(sbatch_arg("--comment=say \"hi there\"").is_err());
        assert!(sbatch_arg("--x=1\n#SBATCH --y").is_err());
    }

    /// Every way sbatch reads as `--array` is refused; options it reads otherwise, and
    /// abbreviations it finds ambiguous (its own error), are passed on.
    #[test]
    fn array_jobs_are_refused_however_sbatch_would_spell_them() {
        let cases: &[(&str, bool)] = &[
            ("--array=0-3", true),
            ("--array", true),
            ("--array 0-3", true),
            ("--arra=0-3", true),
            ("--arr=0-3", true),
            ("--ar=1-2", true),
            ("--ar 1-2", true),
            ("-a0-3", true),
            ("-a 0-3", true),
            ("-a=1", true),
            ("-a", true),
            ("-Ha0-3", true),
            ("-vWa1", true),
            ("--a=1", false),
            ("--ac=x", false),
            ("--acc=x", false),
            ("--account=proj", false),
            ("--acco=proj", false),
            ("--acctg-freq=task=30", false),
            ("--au=x", false),
            ("--arrays=0-3", false),
            ("--mail-type=ARRAY_TASKS", false),
            ("--batch=a", false),
            ("-A=acct", false),
            ("-Aa", false),
            ("-Ja", false),
            ("-Ha", true),
            ("-H", false),
            ("--", false),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter(|(value, array)| is_array_option(value) != *array)
            .map(|(value, array)| format!("{value}: expected array = {array}"))
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
        for (value, array) in cases {
            let refused = sbatch_arg(value)
                .err()
                .is_some_and(|e| e.message.contains("an array job goes through `--array`"));
            assert_eq!(refused, *array, "{value}");
        }
    }

    #[test]
    fn times() {
        for ok in [
            "30",
            "30:00",
            "2:00:00",
            "1-0",
            "1-12:30",
            "1-12:30:00",
            "UNLIMITED",
            "infinite",
        ] {
            assert!(time(ok).is_ok(), "{ok}");
        }
        for bad in ["", "1h", "1:2:3:4", "-1", "1-", "abc", "10\n"] {
            assert!(time(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn memories() {
        for (ok, rendered) in [
            ("4000", "4000"),
            ("16G", "16G"),
            ("512m", "512M"),
            ("1T", "1T"),
            ("16GB", "16G"),
            ("1gb", "1G"),
            ("0", "0"),
        ] {
            assert!(memory("--mem", ok).is_ok(), "{ok}");
            assert_eq!(slurm_memory(ok), rendered, "{ok}");
        }
        for bad in ["", "1.5G", "-1", "G", "16B", "GB", "16GiB"] {
            assert!(memory("--mem", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn env_pairs() {
        assert_eq!(
            env_pair("--env", "A=b=c").unwrap(),
            ("A".into(), "b=c".into())
        );
        assert_eq!(
            env_pair("--env", "_X=").unwrap(),
            ("_X".into(), String::new())
        );
        for bad in ["1A=x", "A-B=x", "=x", "A B=x", "A B", "1A"] {
            assert!(env_pair("--env", bad).is_err(), "{bad}");
        }
        // A name alone: this shell's value, or refused when it has none.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(env_pair("--env", "PATH").unwrap(), ("PATH".into(), path));
        let unset = env_pair("--env", "RAYSLURM_TEST_SURELY_UNSET_7").unwrap_err();
        assert!(
            unset.message.contains("is not set here"),
            "{}",
            unset.message
        );
        let secret = env_pair("--secret", "RAYSLURM_TEST_SURELY_UNSET_7").unwrap_err();
        assert!(
            secret
                .message
                .starts_with("--secret RAYSLURM_TEST_SURELY_UNSET_7 takes"),
            "{}",
            secret.message
        );
    }

    #[test]
    fn node_local_directories() {
        let p = Path::new;
        assert_eq!(
            node_local_root(p("/tmp/x"), None),
            Some(PathBuf::from("/tmp"))
        );
        assert_eq!(
            node_local_root(p("/dev/shm"), None),
            Some(PathBuf::from("/dev/shm"))
        );
        assert_eq!(node_local_root(p("/tmpfoo/x"), None), None);
        assert_eq!(node_local_root(p("/home/u/proj"), None), None);
        let scratch = p("/local/scratch/u");
        assert_eq!(
            node_local_root(p("/local/scratch/u/p"), Some(scratch)),
            Some(scratch.to_path_buf())
        );
        assert_eq!(node_local_root(p("/home/u"), Some(p("/"))), None);
    }

    #[test]
    fn memory_sizes_in_bytes() {
        assert_eq!(memory_bytes("--memory", "4G").unwrap(), 4 << 30);
        assert_eq!(memory_bytes("--memory", "512m").unwrap(), 512 << 20);
        assert_eq!(memory_bytes("--memory", "100").unwrap(), 100 << 20);
        assert!(memory_bytes("--memory", "lots").is_err());
        assert_eq!(memory_bytes("--memory", "1GB").unwrap(), 1 << 30);
    }

    /// The edges the tables above leave out: a name of exactly 100 characters, a cluster's
    /// name, sizes in K and T, one too large, and a relative `$TMPDIR`.
    #[test]
    fn the_edges_of_names_sizes_and_node_local_roots() {
        assert!(exp_name(&"x".repeat(100)).is_ok());
        assert!(cluster_name("my-cluster").is_ok());
        let err = cluster_name("a/b").unwrap_err();
        assert!(
            err.message.starts_with("invalid NAME `a/b`"),
            "{}",
            err.message
        );
        assert_eq!(memory_bytes("--memory", "2K").unwrap(), 2 << 10);
        assert_eq!(memory_bytes("--memory", "3t").unwrap(), 3 << 40);
        let err = memory_bytes("--memory", "99999999T").unwrap_err();
        assert!(err.message.ends_with("is too large"), "{}", err.message);
        let p = Path::new;
        assert_eq!(node_local_root(p("scratch/x"), Some(p("scratch"))), None);
    }
}
