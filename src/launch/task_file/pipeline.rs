//! SkyPilot's pipelines: a task file of several YAML documents, each a stage that starts when
//! the one before it has succeeded. The first document may hold only the pipeline's `name`;
//! each stage runs as `PIPELINE-STAGE` (its own `name`, else its place, from 1), so that
//! `status` shows one line a stage. A first document that also holds `dependencies` (or
//! `depends_on`: `STAGE: [STAGES]`) makes the pipeline a graph: each stage starts when those
//! it names have succeeded, side by side with the others.

use super::Refusal;
use super::given::{Given, Value};
use super::node::{Line, Node};
use crate::launch::validate;

/// One task of the file, before it is read.
#[derive(Debug)]
pub(super) struct Stage {
    pub(super) document: Line<Node>,
    /// The run's name when the document has no `name` (the file's stem, or `PIPELINE-N`).
    pub(super) default_name: String,
    /// The pipeline's name, where the file is one.
    pub(super) pipeline: Option<String>,
    /// In a graph, the runs it waits for (`PIPELINE-STAGE` each); `None`: the stage before it.
    pub(super) waits_for: Option<Vec<String>>,
}

/// The first document of a pipeline: its name and, for a graph, each stage's dependencies.
struct Header {
    name: String,
    line: u32,
    graph: Option<Line<Node>>,
}

/// The file's `documents` as its stages: one document is the file's one task; several are a
/// pipeline named by the first when it holds only `name`, else by the file's `stem`.
pub(super) fn split(mut documents: Vec<Line<Node>>, stem: &str) -> Result<Vec<Stage>, Refusal> {
    if documents.len() <= 1 {
        let document = documents.pop().unwrap_or(Line {
            value: Node::Null,
            line: 1,
        });
        return Ok(vec![Stage {
            document,
            default_name: stem.to_owned(),
            pipeline: None,
            waits_for: None,
        }]);
    }
    let Header { name, line, graph } = match header(&documents[0]) {
        Some(header) => {
            documents.remove(0);
            header
        }
        None => Header {
            name: stem.to_owned(),
            line: 0,
            graph: None,
        },
    };
    validate::exp_name(&name).map_err(|e| {
        Refusal::new(
            "name",
            line,
            format!(
                "the pipeline's name: {e}; name it in a first document of its own (`name: NAME`)"
            ),
        )
    })?;
    let waits = match &graph {
        Some(graph) => waits_in_graph(graph, &documents, &name)?,
        None => vec![None; documents.len()],
    };
    Ok(documents
        .into_iter()
        .zip(waits)
        .enumerate()
        .map(|(i, (document, waits_for))| Stage {
            document,
            default_name: format!("{name}-{}", i + 1),
            pipeline: Some(name.clone()),
            waits_for,
        })
        .collect())
}

/// The keys of a graph's header that name each stage's dependencies (SkyPilot writes both).
const GRAPH_KEYS: [&str; 2] = ["dependencies", "depends_on"];

/// SkyPilot's header: a document of `name` alone, or with the graph's dependencies.
fn header(document: &Line<Node>) -> Option<Header> {
    let Node::Map(entries) = &document.value else {
        return None;
    };
    let mut header = None;
    let mut graph = None;
    for (key, value) in entries {
        match key.value.as_str() {
            "name" => header = Some((value.value.scalar_text().unwrap_or_default(), key.line)),
            k if GRAPH_KEYS.contains(&k) => graph = Some(value.clone()),
            _ => return None,
        }
    }
    header.map(|(name, line)| Header { name, line, graph })
}

/// Each stage's dependencies in the graph, as the runs it waits for. A stage is named by its
/// document's `name`; each it depends on must come before it in the file (the order the
/// stages are submitted in).
fn waits_in_graph(
    graph: &Line<Node>,
    documents: &[Line<Node>],
    pipeline: &str,
) -> Result<Vec<Option<Vec<String>>>, Refusal> {
    let field = "dependencies";
    let names: Vec<Option<String>> = documents.iter().map(stage_name).collect();
    let entries = match &graph.value {
        Node::Map(entries) => entries.clone(),
        Node::Null => Vec::new(),
        other => {
            return Err(Refusal::new(
                field,
                graph.line,
                format!(
                    "is {}: give `STAGE: [STAGES it waits for]` lines",
                    other.kind()
                ),
            ));
        }
    };
    let place = |stage: &str, line: u32| {
        names
            .iter()
            .position(|n| n.as_deref() == Some(stage))
            .ok_or_else(|| {
                Refusal::new(
                    field,
                    line,
                    format!("`{stage}` is not the `name` of a stage of this pipeline"),
                )
            })
    };
    let mut waits: Vec<Option<Vec<String>>> = vec![Some(Vec::new()); documents.len()];
    for (stage, deps) in entries {
        let at = place(&stage.value, stage.line)?;
        let deps: Vec<Line<Node>> = match deps.value {
            Node::Seq(items) => items,
            Node::Null => Vec::new(),
            _ => vec![deps],
        };
        for dep in deps {
            let dep_name = dep.value.scalar_text().unwrap_or_default();
            if place(&dep_name, dep.line)? >= at {
                return Err(Refusal::new(
                    field,
                    dep.line,
                    format!(
                        "`{}` waits for `{dep_name}`, which comes after it in the file: put each stage after those it waits for (the order they are submitted in)",
                        stage.value
                    ),
                ));
            }
            if let Some(list) = &mut waits[at] {
                list.push(format!("{pipeline}-{dep_name}"));
            }
        }
    }
    Ok(waits)
}

/// A stage's own `name`, as its document gives it.
fn stage_name(document: &Line<Node>) -> Option<String> {
    let Node::Map(entries) = &document.value else {
        return None;
    };
    entries
        .iter()
        .find(|(k, _)| k.value == "name")
        .and_then(|(_, v)| v.value.scalar_text())
}

/// A stage's own `name` as `PIPELINE-NAME` (the run's name, one a stage).
pub(super) fn name_stage(given: &mut [Given], pipeline: Option<&str>) -> Result<(), Refusal> {
    let Some(pipeline) = pipeline else {
        return Ok(());
    };
    for g in given
        .iter_mut()
        .filter(|g| g.long == "exp-name" && g.field == "name" && g.line > 0)
    {
        if let Value::Values(values) = &mut g.value {
            for v in values.iter_mut() {
                *v = format!("{pipeline}-{v}");
                validate::exp_name(v).map_err(|e| Refusal::new("name", g.line, e.to_string()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::task_file::node::parse_all;

    fn names(text: &str, stem: &str) -> Vec<(String, Option<String>)> {
        split(parse_all(text).unwrap(), stem)
            .unwrap()
            .into_iter()
            .map(|s| (s.default_name, s.pipeline))
            .collect()
    }

    /// One document is a task; several are a pipeline, named by a first document that holds
    /// only `name`, else by the file.
    #[test]
    fn documents_are_stages_of_a_pipeline_named_by_its_header() {
        assert_eq!(names("run: x\n", "t"), [("t".into(), None)]);
        assert_eq!(names("", "t"), [("t".into(), None)]);
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            names("name: pipe\n---\nrun: a\n---\nrun: b\n", "t"),
            [
                ("pipe-1".into(), some("pipe")),
                ("pipe-2".into(), some("pipe"))
            ]
        );
        assert_eq!(
            names("name: a\nrun: a\n---\nrun: b\n", "t"),
            [("t-1".into(), some("t")), ("t-2".into(), some("t"))]
        );
    }

    /// A graph's header gives each stage the runs it waits for; a stage waiting for one after
    /// it, or for none of the pipeline's, is refused at its line.
    #[test]
    fn a_graph_gives_each_stage_what_it_waits_for() {
        let text = "name: g\ndepends_on:\n  b: [a]\n  c: a\n  d:\n    - b\n    - c\n---\nname: a\nrun: x\n---\nname: b\nrun: x\n---\nname: c\nrun: x\n---\nname: d\nrun: x\n";
        let waits: Vec<Option<Vec<String>>> = split(parse_all(text).unwrap(), "t")
            .unwrap()
            .into_iter()
            .map(|s| s.waits_for)
            .collect();
        let list = |l: &[&str]| Some(l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert_eq!(
            waits,
            [
                list(&[]),
                list(&["g-a"]),
                list(&["g-a"]),
                list(&["g-b", "g-c"])
            ]
        );
        let late = "name: g\ndependencies:\n  a: [b]\n---\nname: a\nrun: x\n---\nname: b\nrun: x\n";
        let err = split(parse_all(late).unwrap(), "t").unwrap_err();
        assert_eq!(err.line, 3, "{err:?}");
        assert!(err.why.contains("comes after it in the file"), "{err:?}");
        let unknown = "name: g\ndependencies:\n  a: [zz]\n---\nname: a\nrun: x\n---\nrun: y\n";
        let err = split(parse_all(unknown).unwrap(), "t").unwrap_err();
        assert!(
            err.why.contains("`zz` is not the `name` of a stage"),
            "{err:?}"
        );
    }

    /// A pipeline's name must be a run's name: refused at its line.
    #[test]
    fn a_pipeline_name_that_is_no_run_name_is_refused() {
        let err = split(
            parse_all("name: a/b\n---\nrun: a\n---\nrun: b\n").unwrap(),
            "t",
        )
        .unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("name", 1));
    }

    /// A stage's own `name` is prefixed by the pipeline's; one without keeps `PIPELINE-N`.
    #[test]
    fn a_stage_name_is_prefixed_by_the_pipelines() {
        let mut given = vec![
            Given::one("name", 3, "exp-name", "train"),
            Given::one("name", 0, "exp-name", "pipe-2"),
        ];
        name_stage(&mut given, Some("pipe")).unwrap();
        assert_eq!(given[0].value, Value::Values(vec!["pipe-train".into()]));
        assert_eq!(given[1].value, Value::Values(vec!["pipe-2".into()]));
    }

    /// A task file in `dir`, named `task.yaml`, holding `text`.
    fn task(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
        let path = dir.join("task.yaml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A file of several YAML documents is a pipeline: each stage read as a task, named
    /// PIPELINE-STAGE; `read` (for `up` and `exec`) refuses it.
    #[test]
    fn a_pipeline_is_read_stage_by_stage() {
        let tmp = tempfile::tempdir().unwrap();
        let path = task(
            tmp.path(),
            "name: pipe\n---\nname: train\nrun: a\n---\nrun: b\nresources:\n  cpus: 1\n",
        );
        let stages = crate::launch::task_file::read_stages(&path, tmp.path()).unwrap();
        let names: Vec<String> = stages
            .iter()
            .map(|s| {
                let g = s.given.iter().find(|g| g.long == "exp-name").unwrap();
                format!("{:?}", g.value)
            })
            .collect();
        assert_eq!(
            names,
            [r#"Values(["pipe-train"])"#, r#"Values(["pipe-2"])"#]
        );
        assert!(stages.iter().all(|s| s.pipeline.as_deref() == Some("pipe")));
        // A refusal in a later stage names its line in the file.
        let path = task(tmp.path(), "run: a\n---\nrun: b\ncloud: aws\n");
        let err = crate::launch::task_file::read_stages(&path, tmp.path()).unwrap_err();
        assert!(
            err.message
                .starts_with(&format!("{}:4: cloud", path.display())),
            "{}",
            err.message
        );
        let path = task(tmp.path(), "run: a\n---\nrun: b\n");
        let err = crate::launch::task_file::read(&path, tmp.path()).unwrap_err();
        assert!(
            err.message.contains("only `launch` runs a pipeline"),
            "{}",
            err.message
        );
    }
}
