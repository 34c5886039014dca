//! On the login node, from flags to a submitted job: arguments resolved into a
//! [`config::LaunchConfig`], the template context ([`job_spec::JobSpec`]), the rendered script
//! ([`template::Template`]), its files ([`script_files`]) and the node-visible copy of this
//! binary ([`node_binary`]), the log directory ([`log_dir`]). Submission itself is `slurm::sbatch`.

pub(crate) mod array_spec;
pub(crate) mod config;
pub(crate) mod digest_check;
pub(crate) mod file_mounts;
pub(crate) mod git_workdir;
pub(crate) mod gpu_directive;
pub(crate) mod gpu_names;
pub(crate) mod job_spec;
pub(crate) mod log_dir;
pub(crate) mod node_binary;
pub(crate) mod owned_directives;
pub(crate) mod ray_yaml;
pub(crate) mod script_files;
pub(crate) mod skyignore;
pub(crate) mod snapshot;
pub(crate) mod storage;
pub(crate) mod task_file;
pub(crate) mod template;
pub(crate) mod validate;
pub(crate) mod worker_type;
