//! Task files (`launch TASK.yaml`, docs/task-files.md): what each field becomes and each
//! refusal, and, end to end, the seeds' tasks run on the test cluster.

mod cli;
mod cli_stages;
mod code_and_files;
mod e2e_code_and_files;
mod e2e_root_view;
mod e2e_skypilot_shapes;
mod e2e_stages;
mod e2e_task_file;
