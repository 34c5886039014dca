//! Slurm host lists (`node[01-04,07],gpu5`) expanded into node names.
//!
//! A list is read in two passes: first into its pieces (text and bracket groups of ranges),
//! counting the names they make, then, only when the count is sane, into the names. So a list
//! that would name a billion hosts (`node[1-999999999]`, `r[1-99999]n[1-99999]`) is refused
//! before anything is allocated for it, and a list of any size costs time in proportion to
//! the names it makes (no step looks back over the names made so far).

/// The most names one host list may expand to: ten times the nodes of the largest clusters
/// Slurm runs, and still only tens of MB of names.
pub(crate) const MAX_NAMES: u64 = 1_000_000;

/// Why a host list cannot be read; each names the piece that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HostlistError {
    #[error("`{0}` has a `[` without its `]`")]
    Unclosed(String),
    #[error("`{0}` has a `]` without a `[` before it")]
    Unopened(String),
    #[error("`{0}` has brackets inside brackets")]
    Nested(String),
    #[error("`{range}` in `{item}` is not a number or a range of numbers (`7`, `01-04`)")]
    NotARange { item: String, range: String },
    #[error("the range `{range}` in `{item}` runs backwards: write the smaller number first")]
    Backwards { item: String, range: String },
    #[error(
        "the host list names {count} hosts or more, more than the {MAX_NAMES} one list may name"
    )]
    TooMany { count: u64 },
}

/// Expands a Slurm host list, in Slurm's order (duplicates kept, as Slurm writes them).
pub(crate) fn expand(list: &str) -> Result<Vec<String>, HostlistError> {
    let items = split_top_level(list.trim())?
        .into_iter()
        .filter(|item| !item.is_empty())
        .map(parse_item)
        .collect::<Result<Vec<_>, _>>()?;
    let mut count = 0u64;
    for item in &items {
        count = count.saturating_add(item.count());
        if count > MAX_NAMES {
            return Err(HostlistError::TooMany { count });
        }
    }
    let mut names = Vec::with_capacity(count as usize);
    for item in &items {
        item.expand_into(&mut names);
    }
    Ok(names)
}

/// One comma-separated item of a list (`r[1-2]n[01-04,07]-ib`): its text and bracket groups.
#[derive(Debug)]
struct Item<'a> {
    parts: Vec<Part<'a>>,
}

#[derive(Debug)]
enum Part<'a> {
    Text(&'a str),
    /// A bracket group: its ranges, each `(low, high, width)`.
    Ranges(Vec<(u64, u64, usize)>),
}

impl Item<'_> {
    /// How many names the item makes (saturating: a count past [`MAX_NAMES`] is refused anyway).
    fn count(&self) -> u64 {
        self.parts.iter().fold(1u64, |total, part| match part {
            Part::Text(_) => total,
            Part::Ranges(ranges) => {
                let group = ranges.iter().fold(0u64, |n, (lo, hi, _)| {
                    n.saturating_add((hi - lo).saturating_add(1))
                });
                total.saturating_mul(group)
            }
        })
    }

    /// Appends the item's names to `names`: the first group varies slowest, as Slurm's.
    fn expand_into(&self, names: &mut Vec<String>) {
        let mut made = vec![String::new()];
        for part in &self.parts {
            match part {
                Part::Text(text) => made.iter_mut().for_each(|name| name.push_str(text)),
                Part::Ranges(ranges) => {
                    let mut next = Vec::with_capacity(made.len());
                    for name in &made {
                        for &(lo, hi, width) in ranges {
                            next.extend((lo..=hi).map(|n| format!("{name}{n:0width$}")));
                        }
                    }
                    made = next;
                }
            }
        }
        names.append(&mut made);
    }
}

/// Splits on the commas that are not inside brackets.
fn split_top_level(list: &str) -> Result<Vec<&str>, HostlistError> {
    let mut items = Vec::new();
    let mut open = false;
    let mut start = 0;
    for (i, c) in list.char_indices() {
        // The item so far, to name in a refusal (not the whole list, which may be long).
        let item = || list[start..=i].to_owned();
        match c {
            '[' if open => return Err(HostlistError::Nested(item())),
            '[' => open = true,
            ']' if !open => return Err(HostlistError::Unopened(item())),
            ']' => open = false,
            ',' if !open => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if open {
        return Err(HostlistError::Unclosed(list[start..].to_owned()));
    }
    items.push(&list[start..]);
    Ok(items)
}

/// Reads one item (whose brackets [`split_top_level`] has seen are not nested).
fn parse_item(item: &str) -> Result<Item<'_>, HostlistError> {
    let mut parts = Vec::new();
    let mut rest = item;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else {
            return Err(HostlistError::Unclosed(item.to_owned()));
        };
        if open > 0 {
            parts.push(Part::Text(&rest[..open]));
        }
        let ranges = rest[open + 1..close]
            .split(',')
            .map(|range| parse_range(item, range))
            .collect::<Result<_, _>>()?;
        parts.push(Part::Ranges(ranges));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    Ok(Item { parts })
}

/// `07` or `01-04`: its low and high numbers, and the width the names are padded to.
fn parse_range(item: &str, range: &str) -> Result<(u64, u64, usize), HostlistError> {
    let (lo, hi) = range.split_once('-').unwrap_or((range, range));
    // Digits only: `parse` would take a `+`.
    let number = |s: &str| {
        if s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse::<u64>().ok()
        } else {
            None
        }
    };
    let (Some(lo_n), Some(hi_n)) = (number(lo), number(hi)) else {
        return Err(HostlistError::NotARange {
            item: item.to_owned(),
            range: range.to_owned(),
        });
    };
    if lo_n > hi_n {
        return Err(HostlistError::Backwards {
            item: item.to_owned(),
            range: range.to_owned(),
        });
    }
    Ok((lo_n, hi_n, lo.len()))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn ex(s: &str) -> Vec<String> {
        expand(s).unwrap()
    }

    #[test]
    fn plain_and_ranges() {
        assert_eq!(ex("node1"), ["node1"]);
        assert_eq!(ex("node[1-3]"), ["node1", "node2", "node3"]);
        assert_eq!(
            ex("node[01-04,07]"),
            ["node01", "node02", "node03", "node04", "node07"]
        );
        assert_eq!(ex("a1,b[2-3],c"), ["a1", "b2", "b3", "c"]);
        assert_eq!(ex("n[8-10]"), ["n8", "n9", "n10"]);
        assert_eq!(ex(" a,,b "), ["a", "b"]);
        assert_eq!(ex(""), Vec::<String>::new());
    }

    #[test]
    fn several_groups() {
        assert_eq!(ex("r[1-2]n[1-2]"), ["r1n1", "r1n2", "r2n1", "r2n2"]);
        assert_eq!(ex("gpu[1-2]-ib"), ["gpu1-ib", "gpu2-ib"]);
        assert_eq!(ex("[1-2]x"), ["1x", "2x"]);
    }

    #[test]
    fn malformed() {
        for bad in [
            "n[1-", "n[3-1]", "n[a-b]", "n]1[", "n[[1]]", "n[]", "n[1-2-3]", "n[+1]", "n[-1]",
        ] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }

    /// Each refusal names the piece that is wrong and says what would be right.
    #[test]
    fn a_malformed_list_is_refused_naming_what_is_wrong() {
        for (bad, said) in [
            ("a,node[1-4", "`node[1-4` has a `[` without its `]`"),
            ("node1-4]", "`node1-4]` has a `]` without a `[`"),
            ("n[1,[2]]", "`n[1,[` has brackets inside brackets"),
            (
                "a,node[9-2]",
                "the range `9-2` in `node[9-2]` runs backwards",
            ),
            (
                "node[x-2]",
                "`x-2` in `node[x-2]` is not a number or a range",
            ),
            (
                "node[99999999999999999999999]",
                "`99999999999999999999999` in `node[99999999999999999999999]` is not a number",
            ),
        ] {
            let err = expand(bad).unwrap_err().to_string();
            assert!(err.contains(said), "{bad}: {err}");
        }
    }

    /// An absurd list is refused at once, with its count, before any name is made: not a
    /// billion names (tens of GB) allocated and then refused.
    #[test]
    fn an_absurd_host_list_is_refused_before_it_is_expanded() {
        let t0 = Instant::now();
        for (absurd, count) in [
            ("node[1-999999999]", "999999999"),
            ("r[1-99999]n[1-99999]", "9999800001"),
            ("n[0-18446744073709551615]", "18446744073709551615"),
        ] {
            let err = expand(absurd).unwrap_err();
            let said = err.to_string();
            assert!(
                said.contains(&format!("names {count} hosts or more"))
                    && said.contains("more than the 1000000"),
                "{absurd}: {said}"
            );
        }
        // Many items, each small enough, that add up to too many.
        let many = ["a[1-600000]"; 2].join(",");
        assert!(matches!(
            expand(&many),
            Err(HostlistError::TooMany { count: 1_200_000 })
        ));
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        assert_eq!(ex("n[1-1000000]").len(), 1_000_000);
    }

    /// Lists of thousands of nodes, in several ranges and prefixes, expand in time linear in
    /// the names: 100,000 names in well under the loose bound (a step that looked back over
    /// the names made so far would take minutes).
    #[test]
    fn a_list_of_100000_nodes_expands_in_linear_time() {
        let t0 = Instant::now();
        let nodes = ex("node[0001-4096]");
        assert_eq!(nodes.len(), 4096);
        assert_eq!(
            (nodes[0].as_str(), nodes[4095].as_str()),
            ("node0001", "node4096")
        );
        let ranges: Vec<String> = (0..50)
            .map(|k| format!("{}-{}", k * 2000 + 1, k * 2000 + 1000))
            .collect();
        let list = format!("a[{}],b[1-25000],c[00001-25000]", ranges.join(","));
        let nodes = ex(&list);
        let took = t0.elapsed();
        assert_eq!(nodes.len(), 100_000);
        assert_eq!(
            [&nodes[0], &nodes[49_999], &nodes[50_000], &nodes[99_999]],
            ["a1", "a99000", "b1", "c25000"]
        );
        let unique: std::collections::HashSet<&String> = nodes.iter().collect();
        assert_eq!(unique.len(), 100_000);
        eprintln!("4,096 and 100,000 nodes expanded in {took:?}");
        assert!(took < Duration::from_secs(10), "{took:?}");
    }
}
