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

/// A number of nodes (clap value parser): a count of at least 1, with a tip for Slurm's
/// `MIN-MAX` form, which rayslurm spells with `--min-nodes`.
pub(super) fn node_count(value: &str) -> Result<u32, String> {
    if let Some((min, max)) = value.trim().split_once('-')
        && let (Ok(min), Ok(max)) = (positive_count(min), positive_count(max))
    {
        return Err(format!(
            "`{}` is Slurm's MIN-MAX form, which rayslurm does not take here; ask for {max} nodes and start once {min} have joined with `--num-nodes {max} --min-nodes {min}`",
            value.escape_debug()
        ));
    }
    positive_count(value)
}

/// An amount of a Ray resource (`exec --num-cpus`, `--num-gpus`): 0 or more, fractions allowed.
pub(super) fn ray_amount(value: &str) -> Result<f64, String> {
    match value.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
        _ => Err(format!(
            "`{}` is not a number of 0 or more (for example `2` or `0.5`)",
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
        assert_eq!(node_count("4"), Ok(4));
        let range = node_count("2-4").unwrap_err();
        assert!(range.contains("--num-nodes 4 --min-nodes 2"), "{range}");
        assert!(node_count("x-4").unwrap_err().contains("at least 1"));
        assert_eq!(ray_amount("0.5"), Ok(0.5));
        for bad in ["x", "-1", "inf", "NaN", ""] {
            assert!(ray_amount(bad).is_err(), "{bad}");
        }
        assert_eq!(count("0"), Ok(0));
        assert!(count("-2").is_err());
    }
}
