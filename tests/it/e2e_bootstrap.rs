//! End-to-end tests of the bootstrap on the real test cluster.
