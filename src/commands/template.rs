//! `rayslurm template`: print the built-in sbatch template.

use std::process::ExitCode;

use crate::launch::template::BUILTIN_SBATCH;
use crate::printer::Printer;

pub(crate) fn run(printer: &Printer) -> ExitCode {
    printer.result(BUILTIN_SBATCH.trim_end());
    ExitCode::SUCCESS
}
