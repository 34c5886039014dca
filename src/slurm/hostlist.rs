//! Slurm host lists (`node[01-04,07],gpu5`) expanded into node names.

/// Expands a Slurm host list; `None` if it is malformed.
pub(crate) fn expand(list: &str) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for item in split_top_level(list)? {
        if item.is_empty() {
            continue;
        }
        names.extend(expand_item(&item)?);
    }
    Some(names)
}

/// Splits on commas that are not inside brackets.
fn split_top_level(list: &str) -> Option<Vec<String>> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in list.trim().chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return None;
        }
        current.push(c);
    }
    if depth != 0 {
        return None;
    }
    items.push(current);
    Some(items)
}

/// Expands one item, which may hold several bracket groups (`r[1-2]n[1-2]`).
fn expand_item(item: &str) -> Option<Vec<String>> {
    let Some(open) = item.find('[') else {
        return Some(vec![item.to_owned()]);
    };
    let close = open + item[open..].find(']')?;
    let (prefix, ranges, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    let tails = expand_item(rest)?;
    let mut names = Vec::new();
    for range in ranges.split(',') {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let width = lo.len();
        let (lo_n, hi_n): (u64, u64) = (lo.parse().ok()?, hi.parse().ok()?);
        if lo_n > hi_n || hi_n - lo_n > 100_000 {
            return None;
        }
        for n in lo_n..=hi_n {
            for tail in &tails {
                names.push(format!("{prefix}{n:0width$}{tail}"));
            }
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
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
    }

    #[test]
    fn several_groups() {
        assert_eq!(ex("r[1-2]n[1-2]"), ["r1n1", "r1n2", "r2n1", "r2n2"]);
        assert_eq!(ex("gpu[1-2]-ib"), ["gpu1-ib", "gpu2-ib"]);
    }

    #[test]
    fn malformed() {
        for bad in ["n[1-", "n[3-1]", "n[a-b]", "n]1[", "n[[1]]"] {
            assert_eq!(expand(bad), None, "{bad}");
        }
    }
}
