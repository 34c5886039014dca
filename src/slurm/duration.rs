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
