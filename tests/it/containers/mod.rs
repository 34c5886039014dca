//! Runs in a container image (`--container-*`): the scripts and refusals on the login side,
//! task files' images, and, end to end in their own step of tests/run.sh
//! (`RAYSLURM_TEST_CONTAINERS=1`, the filter `containers::e2e_`), runs in Charliecloud and in
//! pyxis with enroot.

mod cli;
mod e2e_charliecloud;
mod e2e_file_mounts;
mod e2e_pyxis;
mod task_file;
