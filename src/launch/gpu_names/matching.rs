//! A GPU name as written (SkyPilot's `A100-80GB`, `H100`, `l4`) matched to the site's GRES
//! type (`a100_80gb`, `h100`, `l4`).
//!
//! Names are compared without case, with `-`, `_`, `.` and spaces alike. A name that says its
//! memory (`A100-80GB`) takes only a type of that memory: never a type that does not say it
//! (`a100` may be the 40 GB one). A name without memory (`A100`) takes the type of that name,
//! else the site's only type of that family with a memory (`a100_80gb`), and the choice is
//! printed; with several (`a100_40gb`, `a100_80gb`) the user must name one.

/// How a written name stands to the site's types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// The site's type of that name (`A100-80GB` is `a100_80gb`).
    Same(String),
    /// The site's only type of the family (`A100` is `a100_80gb`, the site having no `a100`).
    OnlyOfFamily(String),
    /// Several types of the family, none of the name itself.
    Several(Vec<String>),
    /// None; the types of the same family that the memory named rules out, if any.
    Missing { family: Vec<String> },
}

/// `A100-80GB` as `a100_80gb`.
pub(crate) fn normalise(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| match c {
            '-' | '.' | ' ' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// A normalised name's family and memory: `a100_80gb` is (`a100`, `80gb`); `h100` has none.
fn family(name: &str) -> (&str, Option<&str>) {
    if let Some((base, memory)) = name.rsplit_once('_')
        && let Some(digits) = memory.strip_suffix("gb")
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !base.is_empty()
    {
        return (base, Some(memory));
    }
    (name, None)
}

/// The site's type for `written` among `types` (the site's own spellings).
pub(crate) fn find(written: &str, types: &[String]) -> Found {
    let want = normalise(written);
    if let Some(t) = types.iter().find(|t| normalise(t) == want) {
        return Found::Same(t.clone());
    }
    let (want_family, want_memory) = family(&want);
    let same_family: Vec<String> = types
        .iter()
        .filter(|t| family(&normalise(t)).0 == want_family)
        .cloned()
        .collect();
    if want_memory.is_some() {
        return Found::Missing {
            family: same_family,
        };
    }
    match &same_family[..] {
        [] => Found::Missing { family: vec![] },
        [only] => Found::OnlyOfFamily(only.clone()),
        _ => Found::Several(same_family),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(types: &[&str]) -> Vec<String> {
        types.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn skypilot_names_take_the_sites_spelling() {
        let lab = site(&["a100_80gb", "h100", "l4"]);
        let same = |t: &str| Found::Same(t.to_owned());
        assert_eq!(find("A100-80GB", &lab), same("a100_80gb"));
        assert_eq!(find("a100.80gb", &lab), same("a100_80gb"));
        assert_eq!(find("H100", &lab), same("h100"));
        assert_eq!(find("L4", &lab), same("l4"));
        assert_eq!(find("l4", &site(&["L4"])), same("L4"));
    }

    /// `A100` takes `a100_80gb` only where that is the site's one A100 (and says so); a name
    /// with its memory never takes a type without it, nor `L4` an `l40s`.
    #[test]
    fn a_family_is_taken_only_when_it_is_one_type() {
        let lab = site(&["a100_80gb", "h100", "l4", "l40s"]);
        assert_eq!(find("A100", &lab), Found::OnlyOfFamily("a100_80gb".into()));
        assert_eq!(
            find("A100", &site(&["a100", "a100_80gb"])),
            Found::Same("a100".into())
        );
        assert_eq!(
            find("A100", &site(&["a100_40gb", "a100_80gb"])),
            Found::Several(site(&["a100_40gb", "a100_80gb"]))
        );
        assert_eq!(
            find("H100-80GB", &lab),
            Found::Missing {
                family: site(&["h100"])
            }
        );
        assert_eq!(
            find("A100-40GB", &lab),
            Found::Missing {
                family: site(&["a100_80gb"])
            }
        );
        assert_eq!(find("V100", &lab), Found::Missing { family: vec![] });
        assert_eq!(find("L40", &lab), Found::Missing { family: vec![] });
        assert_eq!(find("tpu-v4-8", &lab), Found::Missing { family: vec![] });
    }
}
