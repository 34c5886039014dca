//! `rayslurm template`: print the built-in sbatch template.

use std::process::ExitCode;

use crate::printer::Printer;
use crate::template::BUILTIN_SBATCH;

pub(crate) fn run(printer: &Printer) -> ExitCode {
    printer.result(BUILTIN_SBATCH.trim_end());
    ExitCode::SUCCESS
}
