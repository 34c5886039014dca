//! Ray's cluster YAML (`rayslurm up cluster.yaml`, docs/clusters.md "From `ray up`"): the
//! file read into `up`'s flags, a cloud's file refused by line, and the commands that take the
//! file for its cluster's name.

mod cli;
mod e2e_from_laptop;
mod e2e_ray_yaml;
mod e2e_two_users;
