//! One module per subcommand; nothing below here sees clap types except to resolve them.

mod analyze;
mod bench;
mod config;
mod demo;
mod env;
mod inputs;
mod progress;

use crate::Outcome;
use crate::cli::{Cli, Command};

/// Runs the chosen subcommand.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Analyze(args) => analyze::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Env(args) => env::run(args),
        Command::Config(args) => config::run(args),
        Command::Bench(args) => bench::run(args),
    }
}
