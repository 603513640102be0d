//! `stepscope`: check that every CUDA/HIP graph replay was recorded, and read LLM-serving
//! profiles fast. This crate is the command line: it parses arguments, runs the commands
//! over the library crates and reports errors. [`run_cli`] is the whole command (the binary
//! and the Python package's `stepscope` script call it); [`api`] gives in-process callers
//! (the Python package) the documents the commands write.

pub mod api;
pub mod app;
mod cli;
mod commands;
mod output;

use clap::Parser;
use std::ffi::OsString;

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

/// Runs the command line `args` (the program name first, as `std::env::args_os` gives it)
/// and returns the exit code: clap's own for a usage error, `--help` or `--version`.
pub fn run_cli(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(2);
        }
    };
    match commands::run(cli) {
        Ok(outcome) => outcome.code(),
        Err(error) if output::is_broken_pipe(&error) => 0,
        Err(error) if output::is_write_failure(&error) => {
            output::print_error(&error);
            2
        }
        Err(error) => {
            output::print_error(&error);
            1
        }
    }
}

impl Outcome {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::InputError => 2,
            Outcome::VerdictFailed => 3,
            Outcome::Interrupted => 130,
            Outcome::Signalled(signal) => u8::try_from(128 + signal).unwrap_or(130),
            Outcome::RunFailed => 4,
            Outcome::Inconclusive => 5,
        }
    }
}
