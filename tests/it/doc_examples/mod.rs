//! The docs stay true: every shell example of README.md and docs/*.md is marked (`marks.rs`),
//! docs/options.md lists every option and its examples print what they show (`options.rs`),
//! and the examples marked to run are run on the test cluster as a user types them
//! (`e2e_doc_examples.rs`).

mod e2e_doc_examples;
mod marks;
mod options;
