//! The Python API (`python/rayslurm`) held to the command line it runs: every option of
//! `launch`, `up` and `exec` is a parameter of `rayslurm.launch`, `.up` and `.exec` (and each of
//! `launch` one of `rayslurm.Executor.update_parameters`) by the same name (`--num-nodes` is
//! `num_nodes`), of a type that takes the option's values, with no default of its own, and the
//! functions have no parameter the command lacks; the few that differ on purpose are listed
//! below with their reason. A test of `cargo test`, run with `python3` (3.9 or newer) on the
//! source tree's package.

use std::any::TypeId;
use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Arg, ArgAction, CommandFactory};
use serde::Deserialize;

use super::Cli;

/// A command and its Python function (of the same name, or a method of a class).
struct Api {
    command: &'static str,
    /// `rayslurm.FUNCTION` (`Class.method` for a method; its `self` is left out).
    function: &'static str,
    /// Options the function has no parameter for, and why.
    missing: &'static [(&'static str, &'static str)],
    /// Parameters that stand for their option in a way of their own, and how (not compared).
    own_way: &'static [(&'static str, &'static str)],
    /// Parameters of the function's own, for no option of the command, and what they give.
    extra: &'static [(&'static str, &'static str)],
}

const APIS: &[Api] = &[
    Api {
        command: "launch",
        function: "launch",
        missing: &[
            (
                "json",
                "always given: the function returns the result as a Job",
            ),
            ("follow", "job.wait(), job.logs(follow=True)"),
            ("cancel_on_interrupt", "goes with --follow"),
            ("no_exclusive", "exclusive=False"),
            ("args", "the words of a list `command`"),
            ("git_workdir", "not in the Python API yet"),
            ("git_ref", "not in the Python API yet"),
            ("storage", "not in the Python API yet"),
            (
                "array",
                "Executor.map_array() and .batch() give arrays of functions",
            ),
        ],
        own_way: &[],
        extra: &[("host", "the global --host: the login node, over SSH")],
    },
    Api {
        command: "up",
        function: "up",
        missing: &[
            (
                "json",
                "always given: the function returns the result as a Cluster",
            ),
            ("no_exclusive", "exclusive=False"),
            ("no_ray", "refused by `up`: a cluster runs Ray"),
            ("per_node", "refused by `up`: a cluster runs Ray"),
            ("no_prefix", "goes with --per-node"),
        ],
        own_way: &[],
        extra: &[("host", "the global --host: the login node, over SSH")],
    },
    Api {
        command: "exec",
        function: "exec",
        missing: &[
            (
                "json",
                "always given: the function returns the result as an ExecJob",
            ),
            (
                "detach",
                "always given: ExecJob.wait() and .logs() follow the job",
            ),
            ("args", "the words of a list `command`"),
            ("task", "not in the Python API yet"),
            ("snapshot", "not in the Python API yet"),
            ("workdir", "not in the Python API yet"),
            ("snapshot_max_size", "not in the Python API yet"),
        ],
        own_way: &[(
            "command",
            "required: a str is --command, a list the words after `--`",
        )],
        extra: &[("host", "the global --host: the login node, over SSH")],
    },
    Api {
        command: "launch",
        function: "Executor.update_parameters",
        missing: &[
            ("json", "always given: submit() returns a FunctionJob"),
            ("follow", "job.result() waits"),
            ("cancel_on_interrupt", "goes with --follow"),
            ("no_exclusive", "exclusive=False"),
            ("command", "the submitted function is the command"),
            ("args", "the submitted function is the command"),
            ("task", "the submitted function is what runs"),
            ("again", "submit the function again"),
            ("per_node", "the function runs once, on the head"),
            ("no_prefix", "goes with --per-node"),
            ("dry_run", "a submitted function has a result to wait for"),
            ("check", "goes with --dry-run"),
            ("git_workdir", "not in the Python API yet"),
            ("git_ref", "not in the Python API yet"),
            ("file_mount", "submit() gives its own, the call"),
            ("storage", "not in the Python API yet"),
            (
                "array",
                "map_array() and batch() give it: one task a call, %N from array_parallelism",
            ),
        ],
        own_way: &[],
        extra: &[(
            "array_parallelism",
            "--array's %N for the arrays of map_array() and batch()",
        )],
    },
];

/// Prints each function's parameters as JSON: name, annotation as written, what it takes
/// (`kinds`, its Union flattened), default (`required` without one).
const SIGNATURES: &str = r#"
import collections.abc, inspect, json, os, sys, typing
import rayslurm

def kinds(t, names):
    if isinstance(t, str) or isinstance(t, typing.ForwardRef):
        return kinds(eval(getattr(t, "__forward_arg__", t), names), names)
    if typing.get_origin(t) is typing.Union:
        return set().union(*(kinds(a, names) for a in typing.get_args(t)))
    simple = {type(None): "none", bool: "bool", int: "int", float: "float", str: "str"}
    origin = typing.get_origin(t) or t
    if origin in simple:
        return {simple[origin]}
    if origin is os.PathLike:
        return {"path"}
    if origin in (collections.abc.Sequence, list, tuple):
        return {"list"}
    if origin in (collections.abc.Mapping, dict):
        return {"mapping"}
    return {origin.__name__}

out = {}
for name in sys.argv[1:]:
    function = rayslurm
    for part in name.split("."):
        function = getattr(function, part)
    names = {**vars(typing), **vars(rayslurm), **function.__globals__}
    out[name] = [
        {
            "name": p.name,
            "annotation": p.annotation,
            "kinds": sorted(kinds(p.annotation, names)),
            "default": None if p.default is p.empty else p.default,
            "required": p.default is p.empty,
        }
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    ]
print(json.dumps(out))
"#;

#[derive(Debug, Deserialize)]
struct Parameter {
    name: String,
    annotation: String,
    kinds: Vec<String>,
    default: serde_json::Value,
    required: bool,
}

fn signatures(functions: &[&str]) -> BTreeMap<String, Vec<Parameter>> {
    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python");
    let out = std::process::Command::new("python3")
        .args(["-c", SIGNATURES])
        .args(functions)
        .env("PYTHONPATH", package)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs (the Python API is checked with it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python3 failed:\n{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

/// The parameter's name for an option: its long name with `_` for `-`, or a positional's id.
fn python_name(arg: &Arg) -> String {
    arg.get_long()
        .map_or_else(|| arg.get_id().to_string(), |long| long.replace('-', "_"))
}

/// What a parameter must take for the option's values to pass.
fn needed_kind(arg: &Arg) -> &'static str {
    let value = arg.get_value_parser().type_id();
    if matches!(arg.get_action(), ArgAction::Append) {
        "list"
    } else if [
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
    ]
    .iter()
    .any(|t| value == *t)
    {
        "int"
    } else if value == TypeId::of::<f64>() {
        "float"
    } else if value == TypeId::of::<PathBuf>() {
        "path"
    } else {
        // Text, and the values of an enum or of a parser of its own (`a100:4`, `USR1`).
        "str"
    }
}

/// What a parameter must be to stand for an option.
enum Want {
    /// A flag: `bool`, False by default (the flag left out).
    Flag,
    /// A flag with a `--no-` twin: `Optional[bool]`, None by default (neither given).
    Twin,
    /// A value: takes this kind (and never a bool), None by default (the option left out).
    Value(&'static str),
}

/// What is wrong with `parameter` as the Python side of `arg`, if anything.
fn mismatch(command: &clap::Command, arg: &Arg, parameter: &Parameter) -> Option<String> {
    let name = &parameter.name;
    let option = describe(command, arg);
    let kinds: Vec<&str> = parameter.kinds.iter().map(String::as_str).collect();
    let twin = arg.get_long().map(|long| format!("no-{long}"));
    let has_twin = command
        .get_arguments()
        .any(|a| a.get_long().is_some() && a.get_long() == twin.as_deref());
    let want = match arg.get_action() {
        ArgAction::SetTrue if has_twin => Want::Twin,
        ArgAction::SetTrue => Want::Flag,
        _ => Want::Value(needed_kind(arg)),
    };
    let (takes, default) = match want {
        Want::Flag => (kinds == ["bool"], serde_json::Value::Bool(false)),
        Want::Twin => (kinds == ["bool", "none"], serde_json::Value::Null),
        Want::Value(kind) => (
            kinds.contains(&kind) && !kinds.contains(&"bool"),
            serde_json::Value::Null,
        ),
    };
    if !takes {
        let what = match want {
            Want::Flag => "a bool (a flag)",
            Want::Twin => "a bool or None (False for its --no- twin)",
            Want::Value(kind) => kind,
        };
        let annotation = &parameter.annotation;
        return Some(format!(
            "{name}: {option} takes {what}, the parameter is `{annotation}`"
        ));
    }
    if arg.is_required_set() != parameter.required {
        let (cli, python) = if parameter.required {
            ("not ", "is")
        } else {
            ("", "is not")
        };
        return Some(format!(
            "{name}: {option} is {cli}required, the parameter {python}"
        ));
    }
    if !parameter.required && parameter.default != default {
        let cli: Vec<_> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy())
            .collect();
        let cli = if cli.is_empty() {
            "no default".to_owned()
        } else {
            format!("the default {}", cli.join(","))
        };
        let (has, want) = (python(&parameter.default), python(&default));
        return Some(format!(
            "{name}: the parameter's default is {has}, not {want} ({option} has {cli}): {want} \
             leaves the option out, so that the CLI's default, variables, config and task \
             files apply"
        ));
    }
    None
}

/// A default as Python writes it.
fn python(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "None".to_owned(),
        serde_json::Value::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
        other => other.to_string(),
    }
}

fn describe(command: &clap::Command, arg: &Arg) -> String {
    let name = command.get_name();
    match arg.get_long() {
        Some(long) => format!("`rayslurm {name} --{long}`"),
        None => format!("`rayslurm {name}`'s {}", arg.get_id()),
    }
}

/// Every way the Python function and the command disagree.
fn disagreements(command: &clap::Command, parameters: &[Parameter], api: &Api) -> Vec<String> {
    let function = format!("rayslurm.{}()", api.function);
    let listed = |list: &[(&str, &str)], name: &str| list.iter().any(|(n, _)| *n == name);
    let mut wrong = Vec::new();
    let mut seen = Vec::new();
    for arg in command.get_arguments() {
        let name = python_name(arg);
        let missing = listed(api.missing, &name);
        match parameters.iter().find(|p| p.name == name) {
            Some(_) if missing => wrong.push(format!(
                "{name}: {function} has it: take it out of the list of options it lacks"
            )),
            Some(_) if listed(api.own_way, &name) => {}
            Some(parameter) => wrong.extend(mismatch(command, arg, parameter)),
            None if missing => {}
            None => wrong.push(format!(
                "{name}: {} has no parameter `{name}` in {function}",
                describe(command, arg)
            )),
        }
        seen.push(name);
    }
    for (name, _) in api.missing.iter().chain(api.own_way) {
        if !seen.iter().any(|s| s == name) {
            wrong.push(format!(
                "{name}: listed as an option of `rayslurm {}`, which has none",
                api.command
            ));
        }
    }
    for (name, _) in api.extra {
        if seen.iter().any(|s| s == name) {
            wrong.push(format!(
                "{name}: `rayslurm {}` has it: take it out of {function}'s own parameters",
                api.command
            ));
        } else if !parameters.iter().any(|p| p.name == *name) {
            wrong.push(format!(
                "{name}: listed as {function}'s own, which it lacks"
            ));
        }
    }
    for parameter in parameters {
        if !seen.contains(&parameter.name) && !listed(api.extra, &parameter.name) {
            wrong.push(format!(
                "{}: {function} has it, but `rayslurm {}` has no such option",
                parameter.name, api.command
            ));
        }
    }
    wrong
}

#[test]
fn the_python_api_takes_every_option_of_launch_up_and_exec() {
    let names: Vec<&str> = APIS.iter().map(|api| api.function).collect();
    let mut signatures = signatures(&names);
    let cli = Cli::command();
    let mut wrong = Vec::new();
    for api in APIS {
        let command = cli.find_subcommand(api.command).unwrap();
        let parameters = signatures.remove(api.function).unwrap();
        assert!(parameters.len() > 5, "{}: {parameters:?}", api.function);
        wrong.extend(disagreements(command, &parameters, api));
    }
    assert!(
        wrong.is_empty(),
        "the Python API and the CLI disagree:\n{}",
        wrong.join("\n")
    );
}
