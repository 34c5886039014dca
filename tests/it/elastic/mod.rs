//! Elastic clusters (`up --max-nodes`, `scale`): the login side against fake Slurm commands,
//! and, end to end, a cluster that grows with demand, shrinks when idle and replaces a lost
//! worker job.

mod cli;
pub(crate) mod e2e_elastic;
mod e2e_worker_types;
