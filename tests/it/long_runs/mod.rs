//! Long runs: `cancel --signal` and `launch --after` chains on the login side, and, end to end,
//! the time limit's warning, checkpoints, requeue and resume.

mod chains;
mod e2e_long_runs;
mod signals;
