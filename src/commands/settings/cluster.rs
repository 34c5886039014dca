//! The cluster's flags `launch` and `up` share, resolved into three of the bootstrap's groups:
//! what runs on the nodes, how the nodes come together, what Ray is started with.

use crate::cli::ClusterArgs;
use crate::error::{UsageError, show};
use crate::handoff::cluster::{
    DEFAULT_READY_TIMEOUT, DEFAULT_STOP_GRACE, IpFamily, NodeOptions, ProgramOptions, RayOptions,
    parse_ray_args,
};
use crate::launch::config::{Sources, layered};

/// The groups the cluster's shared flags resolve into.
pub(super) struct SharedGroups {
    pub(super) program: ProgramOptions,
    pub(super) nodes: NodeOptions,
    pub(super) ray: RayOptions,
}

/// The cluster's flags (with the files' values and the defaults) into their groups: `launch`'s
/// and `up`'s.
pub(super) fn resolve(
    args: &ClusterArgs,
    num_nodes: u32,
    src: &Sources,
) -> Result<SharedGroups, UsageError> {
    let ClusterArgs {
        no_ray,
        per_node,
        setup,
        setup_timeout,
        no_prefix,
        interface,
        ip_family,
        min_nodes,
        ready_timeout,
        object_store_memory,
        ray_args,
        ray_head_args,
        port_base,
        stop_grace,
        no_ray_auth,
        ray_metrics,
    } = args;
    let (p, u) = (&src.project, &src.user);
    // Whether the command line (or a variable) gave each, for errors that say where from.
    let typed = [
        ("interface", interface.is_some()),
        ("ray_args", ray_args.is_some()),
        ("ray_head_args", ray_head_args.is_some()),
    ];
    let interface = layered(interface.clone(), &p.interface, &u.interface);
    let ray_args = layered(ray_args.clone(), &p.ray_args, &u.ray_args);
    let ray_head_args = layered(ray_head_args.clone(), &p.ray_head_args, &u.ray_head_args);
    check_text(
        interface.as_deref(),
        ray_args.as_deref(),
        ray_head_args.as_deref(),
    )
    .map_err(|e| super::job::from_where(e, &typed, src))?;
    check_flags(args, num_nodes)?;
    // Ray's options from config files mean nothing to a run without Ray.
    let for_ray = |o: Option<String>| o.filter(|_| !*per_node);
    Ok(SharedGroups {
        program: ProgramOptions {
            no_ray: *no_ray,
            per_node: *per_node,
            setup: setup.clone(),
            setup_timeout: layered(*setup_timeout, &p.setup_timeout, &u.setup_timeout)
                .filter(|_| setup.is_some()),
            no_prefix: *no_prefix,
        },
        nodes: NodeOptions {
            interface,
            ip_family: layered(*ip_family, &p.ip_family, &u.ip_family).unwrap_or(IpFamily::Auto),
            min_nodes: *min_nodes,
            ready_timeout: layered(*ready_timeout, &p.ready_timeout, &u.ready_timeout)
                .unwrap_or(DEFAULT_READY_TIMEOUT),
            port_base: *port_base,
            stop_grace: layered(*stop_grace, &p.stop_grace, &u.stop_grace)
                .unwrap_or(DEFAULT_STOP_GRACE),
        },
        ray: RayOptions {
            object_store_memory: layered(
                *object_store_memory,
                &p.object_store_memory,
                &u.object_store_memory,
            )
            .filter(|_| !*per_node),
            ray_args: for_ray(ray_args),
            ray_head_args: for_ray(ray_head_args),
            no_ray_auth: *no_ray_auth || layered(None, &p.ray_auth, &u.ray_auth) == Some(false),
            ray_metrics: *ray_metrics,
        },
    })
}

/// The cluster's text values, checked: the interface's name, `ray start`'s arguments.
fn check_text(
    interface: Option<&str>,
    ray_args: Option<&str>,
    ray_head_args: Option<&str>,
) -> Result<(), UsageError> {
    if let Some(i) = interface
        && (i.is_empty()
            || i.len() > 15
            || i.contains(['/', ' '])
            || i.chars().any(char::is_control))
    {
        return Err(UsageError::new(format!("invalid --interface {}", show(i)))
            .hint("give a network interface name as `ip link` shows it, e.g. `ib0` or `eth0`"));
    }
    if let Some(r) = ray_args {
        parse_ray_args("--ray-args", r)?;
    }
    if let Some(r) = ray_head_args {
        parse_ray_args("--ray-head-args", r)?;
    }
    Ok(())
}

/// The cluster's flags that do not go together, or with `--num-nodes`.
fn check_flags(args: &ClusterArgs, num_nodes: u32) -> Result<(), UsageError> {
    let ClusterArgs {
        per_node,
        setup,
        no_prefix,
        min_nodes,
        object_store_memory,
        ray_args,
        ray_head_args,
        ..
    } = args;
    if *per_node {
        for (flag, given) in [
            ("--min-nodes", min_nodes.is_some()),
            ("--ray-args", ray_args.is_some()),
            ("--ray-head-args", ray_head_args.is_some()),
            ("--object-store-memory", object_store_memory.is_some()),
        ] {
            if given {
                return Err(UsageError::new(format!(
                    "{flag} is a Ray option, and --per-node runs the command without Ray"
                ))
                .hint(format!(
                    "drop {flag}, or drop --per-node to run a Ray cluster"
                )));
            }
        }
    }
    if *per_node && args.no_ray {
        return Err(UsageError::new(
            "--per-node and --no-ray ask for different runs: --per-node runs the command on every node, --no-ray on the head node alone (neither starts Ray)",
        )
        .hint("drop --no-ray to run on every node, or --per-node to run once"));
    }
    if *no_prefix && !*per_node {
        return Err(UsageError::new("--no-prefix goes with --per-node")
            .hint("only --per-node prefixes output lines with `[RANK NODE]`"));
    }
    if let Some(s) = setup
        && s.trim().is_empty()
    {
        return Err(UsageError::new("--setup is empty")
            .hint("give the command to run on every node first, e.g. `--setup \"pip install -r requirements.txt\"`"));
    }
    if let Some(m) = *min_nodes
        && m > num_nodes
    {
        return Err(UsageError::new(format!(
            "--min-nodes {m} is more than --num-nodes {num_nodes}"
        ))
        .hint("--min-nodes counts the head too and must be at most --num-nodes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interface name as the kernel allows it: 1 to 15 characters, no `/`, space or control
    /// character.
    #[test]
    fn interface_names_are_checked_as_the_kernel_allows_them() {
        assert!(check_text(Some("ib0"), None, None).is_ok());
        assert!(check_text(Some(&"x".repeat(15)), None, None).is_ok());
        for bad in [
            String::new(),
            "x".repeat(16),
            "a/b".into(),
            "a b".into(),
            "a\tb".into(),
        ] {
            let err = check_text(Some(&bad), None, None).unwrap_err();
            assert!(err.message.starts_with("invalid --interface"), "{bad:?}");
        }
    }
}
