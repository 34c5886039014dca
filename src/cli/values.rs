//! The value parsers of counts, which clap calls on what the user typed.

/// A count that must be at least 1 (clap value parser).
pub(super) fn positive_count(value: &str) -> Result<u32, String> {
    match value.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{}` is not a whole number of at least 1 (for example `3`)",
            value.escape_debug()
        )),
    }
}

/// A count that may be 0 (clap value parser).
pub(super) fn count(value: &str) -> Result<u32, String> {
    value.trim().parse::<u32>().map_err(|_| {
        format!(
            "`{}` is not a whole number of 0 or more (for example `2`)",
            value.escape_debug()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(positive_count("3"), Ok(3));
        for bad in ["0", "-1", "x", "", "1.5"] {
            assert!(positive_count(bad).is_err(), "{bad}");
        }
        assert_eq!(count("0"), Ok(0));
        assert!(count("-2").is_err());
    }
}
