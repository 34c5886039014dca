//! What `--num-gpus` (or a task file's `accelerators`) asks for, before the site is asked:
//! one `[TYPE:]N`, or candidates as SkyPilot writes them, a set `{A:N,B:M}` (the one with
//! free nodes now) or a list `[A:N,B:M]` (the first in order with free nodes now).

use std::fmt;

use crate::launch::gpu_directive::GpuRequest;

/// The GPUs asked for, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GpuAsk {
    /// One request, or several candidates; never empty.
    pub(crate) candidates: Vec<GpuRequest>,
    pub(crate) pick: Pick,
}

/// How one of several candidates is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick {
    /// A set (`{A:N,B:M}`, `any_of`): the one with the most nodes free now.
    MostFree,
    /// A list (`[A:N,B:M]`, `ordered`): the first in order with enough nodes free now.
    InOrder,
}

impl Default for GpuAsk {
    fn default() -> Self {
        Self::one(GpuRequest::default())
    }
}

impl GpuAsk {
    pub(crate) fn one(request: GpuRequest) -> Self {
        Self {
            candidates: vec![request],
            pick: Pick::InOrder,
        }
    }

    /// The request as written first: what is asked where Slurm cannot be asked.
    pub(crate) fn first(&self) -> GpuRequest {
        self.candidates.first().cloned().unwrap_or_default()
    }

    /// Whether a type is named anywhere, so that the site's names must be looked up.
    pub(crate) fn names_a_type(&self) -> bool {
        self.first().per_node > 0 && self.candidates.iter().any(|c| c.kind.is_some())
    }
}

impl std::str::FromStr for GpuAsk {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        let text = value.trim();
        let (inner, pick) = if let Some(set) = text.strip_prefix('{') {
            (set.strip_suffix('}'), Pick::MostFree)
        } else if let Some(list) = text.strip_prefix('[') {
            (list.strip_suffix(']'), Pick::InOrder)
        } else {
            (Some(text), Pick::InOrder)
        };
        let inner = inner.ok_or_else(|| {
            format!(
                "`{}` is not closed: write candidates as `{{A100:8,H100:8}}` (the one with free nodes) or `[A100:8,H100:8]` (in order)",
                text.escape_debug()
            )
        })?;
        let candidates = inner
            .split(',')
            .map(str::parse::<GpuRequest>)
            .collect::<Result<Vec<_>, _>>()?;
        if (candidates.len() > 1 || inner != text)
            && let Some(c) = candidates
                .iter()
                .find(|c| c.kind.is_none() || c.per_node == 0)
        {
            return Err(format!(
                "each candidate of `{}` names a type and at least one GPU (`TYPE:N`), not `{}`",
                text.escape_debug(),
                Show(c)
            ));
        }
        Ok(Self { candidates, pick })
    }
}

/// `TYPE:N` (or `N`), as `--num-gpus` takes it.
pub(crate) struct Show<'a>(pub(crate) &'a GpuRequest);

impl fmt::Display for Show<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.kind {
            Some(kind) => write!(f, "{kind}:{}", self.0.per_node),
            None => write!(f, "{}", self.0.per_node),
        }
    }
}

impl fmt::Display for GpuAsk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self
            .candidates
            .iter()
            .map(|c| Show(c).to_string())
            .collect();
        match (items.len(), self.pick) {
            (1, _) => f.write_str(&items[0]),
            (_, Pick::MostFree) => write!(f, "{{{}}}", items.join(",")),
            (_, Pick::InOrder) => write!(f, "[{}]", items.join(",")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(text: &str) -> GpuAsk {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn one_request_or_candidates_parse_and_print_back() {
        for (text, shown, pick, n) in [
            ("4", "4", Pick::InOrder, 1),
            ("A100-80GB:8", "A100-80GB:8", Pick::InOrder, 1),
            (
                "{h100:8,A100-80GB:4}",
                "{h100:8,A100-80GB:4}",
                Pick::MostFree,
                2,
            ),
            ("[h100:8, l4:1]", "[h100:8,l4:1]", Pick::InOrder, 2),
            ("h100:8,l4:1", "[h100:8,l4:1]", Pick::InOrder, 2),
            ("{h100:8}", "h100:8", Pick::MostFree, 1),
        ] {
            let a = ask(text);
            assert_eq!(
                (a.to_string().as_str(), a.pick, a.candidates.len()),
                (shown, pick, n)
            );
            assert_eq!(ask(&a.to_string()).candidates, a.candidates, "{text}");
        }
        assert!(ask("h100:8").names_a_type());
        assert!(!ask("8").names_a_type());
        assert!(!ask("h100:0").names_a_type());
    }

    #[test]
    fn candidates_name_a_type_and_whole_gpus() {
        for (bad, why) in [
            ("{h100:8,4}", "names a type"),
            ("[h100:0]", "names a type and at least one GPU"),
            ("{h100:8", "is not closed"),
            ("[a:1,b:0.5]", "part of a GPU"),
            ("a:1,,b:2", "not a GPU count"),
        ] {
            let e = bad.parse::<GpuAsk>().unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
