//! The `stepscope` command: [`stepscope::run_cli`] over the process's arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(stepscope::run_cli(std::env::args_os()))
}
