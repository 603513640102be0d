//! One module per subcommand, each holding its clap `*Args` (whose doc comments are the help
//! text) and resolving them into settings; no library crate sees clap.

pub(crate) mod analyze;
mod bench;
pub(crate) mod config;
mod demo;
pub(crate) mod diff;
pub(crate) mod env;
mod grade;
mod grade_live;
mod grade_page;
pub(crate) mod inputs;
mod lines;
mod outputs;
mod profile;
mod progress;
mod read_args;

pub use analyze::AnalyzeArgs;
pub use bench::BenchArgs;
pub use config::ConfigArgs;
pub use demo::DemoArgs;
pub use diff::DiffArgs;
pub use env::EnvArgs;
pub use grade::GradeArgs;
pub use profile::ProfileArgs;

use crate::Outcome;
use crate::cli::{Cli, Command};

/// Runs the chosen subcommand.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Analyze(args) => analyze::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Env(args) => env::run(args),
        Command::Config(args) => config::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Grade(args) => grade::run(&args),
        Command::Profile(args) => profile::run(args),
    }
}
