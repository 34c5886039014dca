//! A TCP port or a range of them as SkyPilot's task files write them (`8080`, `10052-10100`),
//! read in one place for the task file's `ports` and for `rayslurm forward`'s arguments.

use std::ops::RangeInclusive;

/// `8080` or `10052-10100` (spaces around the parts allowed): ports 1 to 65535, a range's
/// first no higher than its last; `None` for anything else.
pub(crate) fn parse(text: &str) -> Option<RangeInclusive<u16>> {
    let port = |p: &str| p.trim().parse::<u16>().ok().filter(|p| *p > 0);
    match text.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (port(a)?, port(b)?);
            (a <= b).then_some(a..=b)
        }
        None => port(text).map(|p| p..=p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_or_a_range_of_them() {
        assert_eq!(parse("8080"), Some(8080..=8080));
        assert_eq!(parse("9000-9002"), Some(9000..=9002));
        assert_eq!(parse(" 9000 - 9002 "), Some(9000..=9002));
        assert_eq!(parse("1-65535"), Some(1..=65535));
        for bad in [
            "0", "70000", "9-8", "http", "", "-", "1-", "8080:80", "1-2-3",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
