//! `up`'s idle timeout as users write it, on the command line and in config files.

/// `30m`, `2h`, `90s` or a plain number of minutes, in seconds (`up --idle-timeout`, and
/// `idle_timeout` in config files).
pub(crate) fn idle_duration(value: &str) -> Result<u32, String> {
    let v = value.trim();
    let (number, unit) = match v.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&v[..i], c),
        _ => (v, 'm'),
    };
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        _ => {
            return Err(format!(
                "`{}` ends in an unknown unit (use s, m or h, e.g. `30m`)",
                value.escape_debug()
            ));
        }
    };
    number
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| {
            format!(
                "`{}` is not a duration such as `30m`, `2h` or `90s`",
                value.escape_debug()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_durations() {
        assert_eq!(idle_duration("30m"), Ok(1800));
        assert_eq!(idle_duration("2h"), Ok(7200));
        assert_eq!(idle_duration("90s"), Ok(90));
        assert_eq!(idle_duration("5"), Ok(300));
        for bad in ["0", "x", "5d", "", "-3m"] {
            assert!(idle_duration(bad).is_err(), "{bad}");
        }
    }
}
