//! Durations as Slurm writes them (`[D-]HH:MM:SS`, `MM:SS`) and as we show them.
//!
//! squeue's `%M` and scontrol's `RunTime` use this form; `status` shows elapsed times the same
//! way, so a user sees what `squeue` would have said, and `--json` carries plain seconds.

/// Parses `1-02:03:04`, `02:03:04`, `3:04`, `0:05` (and `INVALID`/`N/A` as `None`).
pub(crate) fn parse(text: &str) -> Option<u64> {
    let text = text.trim();
    let (days, clock) = match text.split_once('-') {
        Some((d, rest)) => (d.parse::<u64>().ok()?, rest),
        None => (0, text),
    };
    let parts: Vec<u64> = clock
        .split(':')
        .map(|p| p.parse::<u64>().ok())
        .collect::<Option<_>>()?;
    let (h, m, s) = match parts.as_slice() {
        [h, m, s] => (*h, *m, *s),
        [m, s] => (0, *m, *s),
        [s] if days > 0 => (*s, 0, 0),
        _ => return None,
    };
    if m >= 60 || s >= 60 {
        return None;
    }
    Some(((days * 24 + h) * 60 + m) * 60 + s)
}

/// A `--time` limit as sbatch reads it, in seconds: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`,
/// `D-H:M:S`; `None` for no limit (`UNLIMITED`, `INFINITE`, or a time of zero, which sbatch(1)
/// documents as "no time limit") and for what is not a time.
pub(crate) fn time_limit(text: &str) -> Option<u64> {
    let text = text.trim();
    let numbers = |t: &str| -> Option<Vec<u64>> { t.split(':').map(|p| p.parse().ok()).collect() };
    let (days, h, m, s) = match text.split_once('-') {
        Some((d, rest)) => match numbers(rest)?.as_slice() {
            [h] => (d.parse().ok()?, *h, 0, 0),
            [h, m] => (d.parse().ok()?, *h, *m, 0),
            [h, m, s] => (d.parse().ok()?, *h, *m, *s),
            _ => return None,
        },
        None => match numbers(text)?.as_slice() {
            [m] => (0, 0, *m, 0),
            [m, s] => (0, 0, *m, *s),
            [h, m, s] => (0, *h, *m, *s),
            _ => return None,
        },
    };
    Some(((days * 24 + h) * 60 + m) * 60 + s).filter(|&total| total > 0)
}

/// Formats seconds as squeue does: `0:05`, `12:34`, `1:02:03`, `2-01:00:00`.
pub(crate) fn format(seconds: u64) -> String {
    let (d, rest) = (seconds / 86_400, seconds % 86_400);
    let (h, m, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_limits_as_sbatch_reads_them() {
        for (text, seconds) in [
            ("30", 1800),
            ("3", 180),
            ("2:30", 150),
            ("2:00:00", 7200),
            ("1-12", 129_600),
            ("1-12:30", 131_400),
            ("1-0:0:5", 86_405),
        ] {
            assert_eq!(time_limit(text), Some(seconds), "{text}");
        }
        for text in ["UNLIMITED", "", "1:2:3:4", "x", "0", "0:00", "0-0"] {
            assert_eq!(time_limit(text), None, "{text}");
        }
    }

    #[test]
    fn slurm_forms() {
        assert_eq!(parse("0:00"), Some(0));
        assert_eq!(parse("0:05"), Some(5));
        assert_eq!(parse("12:34"), Some(754));
        assert_eq!(parse("1:02:03"), Some(3723));
        assert_eq!(parse("00:00:03"), Some(3));
        assert_eq!(parse("2-01:00:00"), Some(2 * 86_400 + 3600));
        assert_eq!(parse("1-2"), Some(86_400 + 7200));
        assert_eq!(parse("INVALID"), None);
        assert_eq!(parse("N/A"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("1:75"), None);
    }

    #[test]
    fn shown_like_squeue() {
        assert_eq!(format(0), "0:00");
        assert_eq!(format(5), "0:05");
        assert_eq!(format(754), "12:34");
        assert_eq!(format(3723), "1:02:03");
        assert_eq!(format(2 * 86_400 + 3600), "2-01:00:00");
        for s in [0, 59, 61, 3599, 3600, 86_399, 86_400, 1_000_000] {
            assert_eq!(parse(&format(s)), Some(s));
        }
    }
}
