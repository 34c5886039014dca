//! The `#SBATCH` options rayslurm writes itself, in one table: an `--sbatch-arg` that sets one
//! of them would come after rayslurm's own line and win, and then `logs`, `status` and the
//! bootstrap would disagree with Slurm. So such an `--sbatch-arg` is refused, naming the
//! rayslurm option to use instead; the same table tips a user who types Slurm's name of an
//! option on rayslurm's command line (`--job-name` is `--exp-name`).
//!
//! sbatch reads its options with `getopt_long`, which takes any unambiguous abbreviation
//! (`--part=gpu` is `--partition=gpu`) and short options bundled after flags (`-Hpgpu`). A long
//! name that abbreviates an owned option is refused: either sbatch reads it as that option,
//! or it is ambiguous and sbatch refuses it too. No sbatch option that rayslurm leaves alone
//! is itself an abbreviation of an owned one (checked in the tests below against sbatch's
//! long options that share a first letter with an owned one).

use crate::error::{UsageError, show};

/// When an owned directive is refused in `--sbatch-arg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    /// rayslurm always writes it (or decides it from one of its options).
    Always,
    /// Only with `--num-gpus` above 0: rayslurm then writes the GPU line (and tells Ray).
    WithGpus,
}

/// One of sbatch's options that rayslurm renders itself.
#[derive(Debug)]
pub(crate) struct Owned {
    /// sbatch's long names (the first as Slurm documents it).
    pub(crate) long: &'static [&'static str],
    /// sbatch's short name, if any.
    pub(crate) short: Option<char>,
    /// What to use instead, as a user types it.
    pub(crate) instead: &'static str,
    pub(crate) when: When,
}

/// Every sbatch option rayslurm renders (`launch::job_spec::directives`), and what sets it.
pub(crate) const OWNED: &[Owned] = &[
    own(&["job-name"], Some('J'), "--exp-name NAME (the job's name)"),
    own(&["output"], Some('o'), LOG),
    own(&["error"], Some('e'), LOG),
    own(
        &["open-mode"],
        None,
        "nothing: rayslurm appends, so that a requeued job keeps its log",
    ),
    own(&["nodes"], Some('N'), "--num-nodes N (-n, -N, --nodes)"),
    own(
        &["ntasks", "ntasks-per-node"],
        Some('n'),
        "--tasks-per-node N (with --num-nodes)",
    ),
    own(&["cpus-per-task"], Some('c'), "--cpus-per-task N"),
    own(&["mem"], None, "--mem SIZE (memory per node)"),
    own(&["mem-per-cpu"], None, "--mem-per-cpu SIZE"),
    own(&["time"], Some('t'), "--time TIME"),
    own(&["partition"], Some('p'), "--partition NAME"),
    own(&["account"], Some('A'), "--account NAME"),
    own(&["qos"], Some('q'), "--qos NAME"),
    own(&["constraint"], Some('C'), "--constraint FEATURES"),
    own(&["nodelist"], Some('w'), "--node LIST (--nodelist)"),
    own(
        &["exclusive"],
        None,
        "--exclusive (the default) or --no-exclusive",
    ),
    own(
        &["signal"],
        None,
        "--signal SIG and --stop-grace SECS (rayslurm's bootstrap takes Slurm's warning)",
    ),
    own(
        &["requeue", "no-requeue"],
        None,
        "--requeue (and --max-requeues N)",
    ),
    own(
        &["dependency"],
        Some('d'),
        "--after RUN or --singleton (the run's record follows the chain)",
    ),
    Owned {
        long: &["gpus", "gpus-per-node", "gpus-per-task", "gres"],
        short: Some('G'),
        instead: "--num-gpus N (per node) and --gpu-directive, which writes the GPU line and tells Ray",
        when: When::WithGpus,
    },
];

/// What the log's directives are set by.
const LOG: &str = "--log-dir DIR (the log is DIR/NAME_DATE-TIME.log, which `logs` reads)";

const fn own(long: &'static [&'static str], short: Option<char>, instead: &'static str) -> Owned {
    Owned {
        long,
        short,
        instead,
        when: When::Always,
    }
}

/// sbatch's short options that take no argument, so that another may follow in the same word
/// (`-Hp gpu` is `-H -p gpu`).
const SBATCH_SHORT_FLAGS: &str = "HOQVWhsv";

/// The owned option an sbatch option (`--partition=x`, `--part x`, `-px`, `-Hpx`) sets, as
/// sbatch would read it, with the name it was typed as and the name sbatch reads (which differ
/// for an abbreviation).
pub(crate) fn owned_by(value: &str, with_gpus: bool) -> Option<(&'static Owned, String, String)> {
    let word = value.split_whitespace().next().unwrap_or_default();
    let live = |o: &&Owned| o.when == When::Always || with_gpus;
    if let Some(long) = word.strip_prefix("--") {
        let name = long.split_once('=').map_or(long, |(name, _)| name);
        if name.is_empty() {
            return None;
        }
        // An exact name first (`--mem` is not `--mem-per-cpu`), then abbreviations.
        let names = || {
            OWNED
                .iter()
                .filter(live)
                .flat_map(|o| o.long.iter().map(move |l| (o, *l)))
        };
        let exact = names().find(|(_, l)| *l == name);
        return exact
            .or_else(|| names().find(|(_, l)| l.starts_with(name)))
            .map(|(o, l)| (o, format!("--{name}"), format!("--{l}")));
    }
    let short = word.strip_prefix('-')?;
    for c in short.chars() {
        if let Some(o) = OWNED.iter().filter(live).find(|o| o.short == Some(c)) {
            let long = format!("--{}", o.long[0]);
            return Some((o, format!("-{c}"), long));
        }
        if !SBATCH_SHORT_FLAGS.contains(c) {
            // The rest of the word is this option's argument.
            return None;
        }
    }
    None
}

/// An `--sbatch-arg` that sets what rayslurm renders itself, refused with what to use instead.
pub(crate) fn refuse(value: &str, with_gpus: bool) -> Result<(), UsageError> {
    let Some((owned, typed, read_as)) = owned_by(value, with_gpus) else {
        return Ok(());
    };
    let why = match owned.when {
        When::Always => "rayslurm writes that directive itself".to_owned(),
        When::WithGpus => "with --num-gpus, rayslurm writes the GPU directive itself".to_owned(),
    };
    let named = if typed == read_as {
        typed
    } else {
        format!("{typed} (sbatch reads it as {read_as})")
    };
    Err(UsageError::new(format!(
        "--sbatch-arg {} sets {named}, and {why}: an #SBATCH line after it would change the job behind rayslurm's back",
        show(value)
    ))
    .hint(format!("instead, use {}", owned.instead)))
}

/// The rayslurm option for Slurm's name of one (`--job-name`, `-J`), as typed on rayslurm's
/// command line where rayslurm has no option of that name.
pub(crate) fn instead_of(slurm_name: &str) -> Option<&'static str> {
    let found = match slurm_name.strip_prefix("--") {
        Some(long) => OWNED.iter().find(|o| o.long.contains(&long)),
        None => {
            let mut chars = slurm_name.strip_prefix('-')?.chars();
            let c = chars.next()?;
            OWNED
                .iter()
                .find(|o| o.short == Some(c) && chars.next().is_none())
        }
    };
    found.map(|o| o.instead)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sbatch 22.05's long options (`sbatch --help`, `src/common/slurm_opt.c`) that share their
    /// first letter with an owned one and are not owned: none may be an abbreviation of an
    /// owned name, or it would be refused though sbatch reads it as itself.
    const OTHERS: &[&str] = &[
        "acctg-freq",
        "batch",
        "bb",
        "bbf",
        "begin",
        "comment",
        "container",
        "contiguous",
        "core-spec",
        "cores-per-socket",
        "cpu-freq",
        "cpus-per-gpu",
        "cluster-constraint",
        "clusters",
        "chdir",
        "deadline",
        "delay-boot",
        "distribution",
        "exclude",
        "export",
        "export-file",
        "extra-node-info",
        "get-user-env",
        "gid",
        "gpu-bind",
        "gpu-freq",
        "gpus-per-socket",
        "gres-flags",
        "hint",
        "hold",
        "job-name",
        "mail-type",
        "mail-user",
        "mcs-label",
        "mem-bind",
        "mem-per-gpu",
        "mincpus",
        "network",
        "nice",
        "no-kill",
        "nodefile",
        "ntasks-per-core",
        "ntasks-per-gpu",
        "ntasks-per-socket",
        "oversubscribe",
        "overcommit",
        "parsable",
        "power",
        "priority",
        "profile",
        "propagate",
        "quiet",
        "qos",
        "reboot",
        "reservation",
        "sockets-per-node",
        "spread-job",
        "switches",
        "test-only",
        "thread-spec",
        "threads-per-core",
        "time-min",
        "tmp",
        "wait",
        "wait-all-nodes",
        "wckey",
        "wrap",
    ];

    #[test]
    fn no_other_sbatch_option_is_read_as_an_owned_one() {
        let owned: Vec<&str> = OWNED.iter().flat_map(|o| o.long.iter().copied()).collect();
        for other in OTHERS.iter().filter(|o| !owned.contains(o)) {
            assert_eq!(
                owned_by(&format!("--{other}=1"), true).map(|(o, ..)| o.long[0]),
                None,
                "--{other}"
            );
        }
    }

    #[test]
    fn every_spelling_of_an_owned_directive_is_found() {
        let cases: &[(&str, bool, Option<&str>)] = &[
            ("--output=/x/%j.log", false, Some("output")),
            ("--error=/x", false, Some("error")),
            ("-o/x", false, Some("output")),
            ("--job-name=y", false, Some("job-name")),
            ("-J y", false, Some("job-name")),
            ("--partition=gpu", false, Some("partition")),
            ("--part=gpu", false, Some("partition")),
            ("-pgpu", false, Some("partition")),
            ("-Hp gpu", false, Some("partition")),
            ("-N4", false, Some("nodes")),
            ("--nodes=2-4", false, Some("nodes")),
            ("--ntasks=8", false, Some("ntasks")),
            ("-n8", false, Some("ntasks")),
            ("--ntasks-per-node=2", false, Some("ntasks")),
            ("--mem=4G", false, Some("mem")),
            ("--mem-per-cpu=1G", false, Some("mem-per-cpu")),
            ("--time=5", false, Some("time")),
            ("-t5", false, Some("time")),
            ("--signal=USR1@60", false, Some("signal")),
            ("--requeue", false, Some("requeue")),
            ("--dependency=afterok:1", false, Some("dependency")),
            ("--exclusive=user", false, Some("exclusive")),
            ("--nodelist=n1", false, Some("nodelist")),
            ("-w n1", false, Some("nodelist")),
            ("--gres=gpu:2", true, Some("gpus")),
            ("--gpus-per-node=2", true, Some("gpus")),
            ("-G2", true, Some("gpus")),
            // Without --num-gpus, GPU lines are the user's own.
            ("--gres=gpu:a100:2", false, None),
            ("-G2", false, None),
            // Not owned.
            ("--mail-type=END", false, None),
            ("--comment=x", false, None),
            ("--mem-per-gpu=4G", false, None),
            ("--time-min=5", false, None),
            ("--exclude=n1", false, None),
            ("--nodefile=f", false, None),
            ("-Hk", false, None),
            ("--", false, None),
            ("-k", false, None),
        ];
        for (value, gpus, want) in cases {
            assert_eq!(
                owned_by(value, *gpus).map(|(o, ..)| o.long[0]),
                *want,
                "{value} (gpus: {gpus})"
            );
            assert_eq!(refuse(value, *gpus).is_err(), want.is_some(), "{value}");
        }
    }

    #[test]
    fn a_refusal_names_the_option_to_use() {
        let e = refuse("--part=gpu", false).unwrap_err();
        assert!(
            e.message
                .contains("--part (sbatch reads it as --partition)")
        );
        assert_eq!(e.hint.as_deref(), Some("instead, use --partition NAME"));
        let e = refuse("-pgpu", false).unwrap_err();
        assert!(
            e.message
                .contains("sets -p (sbatch reads it as --partition)")
        );
        let e = refuse("--gres=gpu:2", true).unwrap_err();
        assert!(e.message.contains("sets --gres, and"), "{}", e.message);
        let e = refuse("--gres=gpu:2", true).unwrap_err();
        assert!(e.hint.unwrap().contains("--num-gpus"));
    }

    /// `docs/options.md` lists every owned directive, by each of its names.
    #[test]
    fn the_options_reference_lists_every_owned_directive() {
        let page = include_str!("../../docs/options.md");
        for owned in OWNED {
            for long in owned.long {
                assert!(
                    page.contains(&format!("| `--{long}`"))
                        || page.contains(&format!(", `--{long}`")),
                    "--{long}"
                );
            }
        }
    }

    #[test]
    fn slurm_names_typed_on_the_command_line_get_rayslurm_s() {
        assert_eq!(
            instead_of("--job-name"),
            Some("--exp-name NAME (the job's name)")
        );
        assert!(instead_of("-J").is_some());
        assert!(instead_of("--gres").unwrap().contains("--num-gpus"));
        assert_eq!(instead_of("--jobname"), None);
        assert_eq!(instead_of("-Jx"), None);
    }
}
