//! The `--help` headings of `launch` and `up`, in the order they are shown (clap orders
//! headings by their first option, so each struct lists its options heading by heading).

pub(crate) const JOB: &str = "Job";
pub(crate) const RESOURCES: &str = "Resources";
pub(crate) const ENVIRONMENT: &str = "Command environment";
pub(crate) const CONTAINER: &str = "Container";
pub(crate) const INSIDE: &str = "Inside the job";
pub(crate) const RAY: &str = "Ray";
pub(crate) const ELASTIC: &str = "Elastic cluster";
pub(crate) const OUTPUT: &str = "Output";
pub(crate) const LONG_RUNS: &str = "Long runs";
