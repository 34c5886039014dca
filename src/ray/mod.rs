//! Clients of Ray that both sides use: the login node (`exec`, `queue`, `down`, `logs` of a
//! cluster) and the head inside the allocation (serving jobs, autostop). Like `slurm`, a layer
//! below the commands and the bootstrap; it uses only `sys`.

pub(crate) mod jobs_api;
