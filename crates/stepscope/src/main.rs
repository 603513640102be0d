//! `stepscope`: check that every CUDA/HIP graph replay was recorded, and read LLM-serving
//! profiles fast. The binary only parses arguments and reports errors; the work is in the
//! library crates.

mod cli;
mod commands;
mod output;

use clap::Parser;
use std::process::ExitCode;

/// Exit codes, distinct so pipelines can tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done.
    Success,
    /// A bad input or usage (2).
    InputError,
    /// `--fail-on-incomplete` and replays are missing, or `diff` refused a stage (3).
    VerdictFailed,
    /// Stopped by Ctrl-C after writing what was measured (130, as shells report SIGINT).
    Interrupted,
    /// Stopped by this signal after writing what was done (128 + signal, as shells report).
    Signalled(i32),
    /// `profile`: a phase failed (server, window, collection, load); results.json says which (4).
    RunFailed,
    /// `grade`: INCONCLUSIVE, neither KEEP nor REVERT beyond noise (5).
    Inconclusive,
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::InputError) => ExitCode::from(2),
        Ok(Outcome::VerdictFailed) => ExitCode::from(3),
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        Ok(Outcome::Signalled(signal)) => ExitCode::from(u8::try_from(128 + signal).unwrap_or(130)),
        Ok(Outcome::RunFailed) => ExitCode::from(4),
        Ok(Outcome::Inconclusive) => ExitCode::from(5),
        Err(error) if output::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) if output::is_write_failure(&error) => {
            output::print_error(&error);
            ExitCode::from(2)
        }
        Err(error) => {
            output::print_error(&error);
            ExitCode::from(1)
        }
    }
}
