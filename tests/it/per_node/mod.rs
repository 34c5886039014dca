//! `--per-node` runs end to end: the command on every node with its rank environment, a real
//! JAX group across the nodes, setup with a barrier, fail-fast and a clean end.

mod e2e_per_node;
