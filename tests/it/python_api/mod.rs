//! The Python API on the test cluster (its package's own tests are `python_package.rs`).

mod e2e_python;
