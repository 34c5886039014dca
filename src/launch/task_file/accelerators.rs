//! `resources.accelerators` in every form SkyPilot takes, and the candidates of
//! `resources.any_of` / `resources.ordered`, into one `--num-gpus` value: `TYPE:N`, a set
//! `{A:N,B:M}` (the candidate with free nodes now) or a list `[A:N,B:M]` (the first in order
//! with free nodes now). The names are looked up among the site's at submission
//! (`launch::gpu_names`).

use super::given::Given;
use super::node::{Line, Node};
use super::{Reading, Refusal};
use crate::launch::gpu_directive::GpuRequest;
use crate::launch::gpu_names::{GpuAsk, Pick};

/// Where a candidate runs in a cloud: nothing here, where every candidate is this cluster's.
const PLACES: &[&str] = &["infra", "cloud", "region", "zone"];

/// What `resources:` says of GPUs, gathered as its keys are read.
#[derive(Debug, Default)]
pub(super) struct Accelerators {
    /// `accelerators:` (the default of every candidate).
    own: Option<(String, u32, GpuAsk)>,
    /// `any_of:` or `ordered:`: its field, line, how one is picked, and each candidate's
    /// `accelerators` (`None` where it takes the default).
    candidates: Option<(String, u32, Pick, Vec<Option<GpuRequest>>)>,
}

impl Accelerators {
    /// Reads `resources.KEY` (`accelerators`, `any_of` or `ordered`).
    pub(super) fn take(
        &mut self,
        r: &mut Reading,
        key: &Line<String>,
        value: &Line<Node>,
    ) -> Result<(), Refusal> {
        let field = format!("resources.{}", key.value);
        if key.value == "accelerators" {
            self.own = Some((field.clone(), key.line, ask(&field, value)?));
            return Ok(());
        }
        if let Some((other, ..)) = &self.candidates {
            return Err(Refusal::new(
                &field,
                key.line,
                format!("`{other}` is given too: give one list of candidates"),
            ));
        }
        let pick = if key.value == "ordered" {
            Pick::InOrder
        } else {
            Pick::MostFree
        };
        let Node::Seq(items) = &value.value else {
            return Err(Refusal::new(
                &field,
                value.line,
                format!(
                    "is {}: give a list of candidates, each a mapping such as `- accelerators: H100:8`",
                    value.value.kind()
                ),
            ));
        };
        let mut each = Vec::new();
        let mut spot = Vec::new();
        let before = r.notices.len();
        for item in items {
            let (gpus, on_spot) = candidate(r, &field, item)?;
            if on_spot {
                spot.push(item.line);
            } else {
                each.push(gpus);
            }
        }
        // One notice a key, however many candidates give it.
        let mut seen = std::collections::HashSet::new();
        let added: Vec<String> = r.notices.drain(before..).collect();
        r.notices
            .extend(added.into_iter().filter(|n| seen.insert(n.clone())));
        if !spot.is_empty() {
            // `any_of: [{use_spot: true}, {use_spot: false}]`: spot or not, whichever comes.
            if each.is_empty() {
                return Err(Refusal::new(
                    &field,
                    spot[0],
                    format!(
                        "every candidate asks for `use_spot: true`: give `use_spot: true` beside `{}` instead",
                        key.value
                    ),
                ));
            }
            r.notices.push(format!(
                "`{field}`: the candidates with `use_spot: true` are left out: the others run as any job does"
            ));
        }
        self.candidates = Some((field, key.line, pick, each));
        Ok(())
    }

    /// The `--num-gpus` flag these give, if any.
    pub(super) fn given(self) -> Result<Option<Given>, Refusal> {
        let Some((field, line, pick, each)) = self.candidates else {
            return Ok(self
                .own
                .map(|(field, line, ask)| Given::one(&field, line, "num-gpus", ask.to_string())));
        };
        // Candidates that differ only in their place or spot: `accelerators` alone.
        if each.iter().all(Option::is_none) {
            return Ok(self
                .own
                .map(|(field, line, ask)| Given::one(&field, line, "num-gpus", ask.to_string())));
        }
        let own = self.own.as_ref().map(|(_, _, ask)| ask);
        if own.is_some_and(|a| a.candidates.len() > 1) {
            return Err(Refusal::new(
                &field,
                line,
                "`accelerators` beside it names candidates too: give them in one place",
            ));
        }
        let own = own.map(GpuAsk::first);
        let mut candidates: Vec<GpuRequest> = Vec::new();
        for c in each.into_iter().filter_map(|c| c.or_else(|| own.clone())) {
            // Candidates that differ only in their cloud are one request here.
            if !candidates.contains(&c) {
                candidates.push(c);
            }
        }
        if candidates.is_empty() {
            return Ok(None);
        }
        let ask = GpuAsk { candidates, pick };
        Ok(Some(Given::one(&field, line, "num-gpus", ask.to_string())))
    }
}

/// One candidate of `any_of`/`ordered`: its `accelerators`, if it names any, and whether it
/// asks for spot instances.
fn candidate(
    r: &mut Reading,
    field: &str,
    item: &Line<Node>,
) -> Result<(Option<GpuRequest>, bool), Refusal> {
    let Node::Map(entries) = &item.value else {
        return Err(Refusal::new(
            field,
            item.line,
            format!(
                "a candidate is {}: give a mapping such as `accelerators: H100:8`",
                item.value.kind()
            ),
        ));
    };
    let (mut gpus, mut spot) = (None, false);
    for (key, value) in entries {
        let inner = format!("{field}.{}", key.value);
        match key.value.as_str() {
            "accelerators" => {
                let ask = ask(&inner, value)?;
                if ask.candidates.len() > 1 {
                    return Err(Refusal::new(
                        &inner,
                        value.line,
                        "one `TYPE:N` a candidate: give each as a candidate of its own",
                    ));
                }
                gpus = Some(ask.first());
            }
            "use_spot" if matches!(value.value, Node::Bool(_)) => {
                spot = value.value == Node::Bool(true);
            }
            k if PLACES.contains(&k) => r.notice(
                &inner,
                "a candidate's place in a cloud: every candidate is looked for on this cluster",
            ),
            _ => {
                return Err(Refusal::new(
                    &inner,
                    key.line,
                    format!(
                        "only `accelerators` may differ between candidates here: give `{}` beside `{}`, for every candidate",
                        key.value,
                        field.trim_start_matches("resources.")
                    ),
                ));
            }
        }
    }
    Ok((gpus, spot))
}

/// `A100:8`, `A100` (one), `{A100: 8}`, a set `{A100:8, H100:8}` (or `{A100: 8, H100: 8}`),
/// a list `[A100:8, H100:8]`.
fn ask(field: &str, value: &Line<Node>) -> Result<GpuAsk, Refusal> {
    let bad = |line: u32, why: String| Refusal::new(field, line, why);
    let one = |text: &str, count: Option<&Line<Node>>, line: u32| -> Result<GpuRequest, Refusal> {
        let written = match count {
            None => match text.rsplit_once(':') {
                Some(_) => text.trim().to_owned(),
                None => format!("{}:1", text.trim()),
            },
            Some(n) => match n.value.scalar_text() {
                Some(n) => format!("{}:{n}", text.trim()),
                None => {
                    return Err(bad(
                        n.line,
                        format!("the count of `{text}` is {}: give a number", n.value.kind()),
                    ));
                }
            },
        };
        written.parse::<GpuRequest>().map_err(|why| bad(line, why))
    };
    let (candidates, pick) = match &value.value {
        Node::Str(s) => (vec![one(s, None, value.line)?], Pick::InOrder),
        Node::Map(entries) => {
            let mut all = Vec::new();
            for (k, n) in entries {
                let count = (n.value != Node::Null).then_some(n);
                all.push(one(&k.value, count, k.line)?);
            }
            (all, Pick::MostFree)
        }
        Node::Seq(items) => {
            let mut all = Vec::new();
            for item in items {
                match &item.value {
                    Node::Str(s) => all.push(one(s, None, item.line)?),
                    // `- V100: null` is one, as SkyPilot reads it.
                    Node::Map(e) if e.len() == 1 => {
                        let count = (e[0].1.value != Node::Null).then_some(&e[0].1);
                        all.push(one(&e[0].0.value, count, item.line)?);
                    }
                    other => {
                        return Err(bad(
                            item.line,
                            format!(
                                "a candidate is {}: give `TYPE:N`, e.g. `A100:8`",
                                other.kind()
                            ),
                        ));
                    }
                }
            }
            (all, Pick::InOrder)
        }
        other => {
            return Err(bad(
                value.line,
                format!("is {}: give `TYPE:N`, e.g. `A100:8`", other.kind()),
            ));
        }
    };
    if candidates.is_empty() {
        return Err(bad(
            value.line,
            "names no GPUs: give `TYPE:N`, e.g. `A100:8`".into(),
        ));
    }
    Ok(GpuAsk { candidates, pick })
}

#[cfg(test)]
mod tests {
    use super::super::read;

    /// The `--num-gpus` value `resources` (YAML under `resources:`) gives, or the refusal.
    fn gpus(resources: &str) -> Result<Option<String>, String> {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("task.yaml");
        std::fs::write(&path, format!("run: x\nresources:\n{resources}")).unwrap();
        let task = read(&path, tmp.path()).map_err(|e| e.message)?;
        Ok(task
            .given
            .iter()
            .find(|g| g.long == "num-gpus")
            .map(|g| format!("{:?} {}", g.value, g.field)))
    }

    fn taken(resources: &str) -> String {
        gpus(resources)
            .unwrap_or_else(|e| panic!("{resources}: {e}"))
            .unwrap_or_default()
    }

    #[test]
    fn every_form_of_accelerators_is_one_value() {
        for (yaml, want) in [
            ("  accelerators: L4\n", "L4:1"),
            ("  accelerators: A100-80GB:8\n", "A100-80GB:8"),
            ("  accelerators: {A100: 2}\n", "A100:2"),
            ("  accelerators: {A100:8, H100:8}\n", "{A100:8,H100:8}"),
            ("  accelerators: {A100: 8, H100: 4}\n", "{A100:8,H100:4}"),
            ("  accelerators: [A100:8, H100:8]\n", "[A100:8,H100:8]"),
            ("  accelerators:\n    - L4:1\n    - H100\n", "[L4:1,H100:1]"),
            (
                "  accelerators:\n    - T4: 1\n    - V100: null\n    - \"A100:2\"\n",
                "[T4:1,V100:1,A100:2]",
            ),
        ] {
            let got = taken(yaml);
            assert!(got.contains(&format!("{want:?}")), "{yaml}: {got}");
            assert!(got.ends_with("resources.accelerators"), "{got}");
        }
    }

    #[test]
    fn any_of_and_ordered_are_candidates_with_the_default_beside_them() {
        let got = taken(
            "  accelerators: H100:8\n  any_of:\n    - accelerators: A100-80GB:4\n    - infra: gcp\n",
        );
        assert!(
            got.contains("{A100-80GB:4,H100:8}") && got.ends_with("resources.any_of"),
            "{got}"
        );
        let got = taken("  ordered:\n    - accelerators: H100:8\n    - accelerators: L4:1\n");
        assert!(
            got.contains("[H100:8,L4:1]") && got.ends_with("resources.ordered"),
            "{got}"
        );
        // Candidates that differ only in their cloud: the one request.
        let got = taken("  accelerators: H100\n  any_of:\n    - infra: aws\n    - infra: gcp\n");
        assert!(
            got.contains("\"H100:1\"") && got.ends_with("resources.accelerators"),
            "{got}"
        );
        assert_eq!(gpus("  any_of:\n    - infra: aws\n").unwrap(), None);
        // Spot or not, whichever comes: not spot.
        let got = taken(
            "  accelerators: {H200:8, A100-80GB:8}\n  any_of:\n    - use_spot: true\n    - use_spot: false\n",
        );
        assert!(
            got.contains("\"A100-80GB:8\"") || got.contains("{H200:8,A100-80GB:8}"),
            "{got}"
        );
    }

    #[test]
    fn what_a_candidate_cannot_say_is_refused() {
        for (yaml, why) in [
            ("  accelerators: A100:0.5\n", "asks for a part of a GPU"),
            ("  accelerators: {A100: 0.5}\n", "ask for `A100:1`"),
            ("  accelerators: 8\n", "is a number: give `TYPE:N`"),
            ("  accelerators: []\n", "names no GPUs"),
            (
                "  any_of:\n    - cpus: 4\n",
                "only `accelerators` may differ",
            ),
            ("  any_of: H100\n", "give a list of candidates"),
            (
                "  any_of:\n    - use_spot: true\n",
                "give `use_spot: true` beside `any_of`",
            ),
            ("  any_of:\n    - H100\n", "give a mapping"),
            (
                "  any_of:\n    - accelerators: {A:1, B:1}\n",
                "one `TYPE:N` a candidate",
            ),
            (
                "  any_of:\n    - accelerators: A:1\n  ordered:\n    - accelerators: B:1\n",
                "give one list",
            ),
        ] {
            let e = gpus(yaml).expect_err(yaml);
            assert!(e.contains(why), "{yaml}: {e}");
            assert!(e.contains("task.yaml:"), "{e}");
        }
    }
}
