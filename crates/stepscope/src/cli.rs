//! Command-line arguments: the subcommands. Each subcommand's help is written beside its
//! arguments, in its module under `commands/`.

use crate::commands::{
    AnalyzeArgs, BenchArgs, ConfigArgs, DemoArgs, DiffArgs, EnvArgs, GradeArgs, ProfileArgs,
};
use clap::{Parser, Subcommand, ValueEnum};

/// Check that every CUDA/HIP graph replay was recorded, and read LLM-serving profiles fast.
#[derive(Debug, Parser)]
#[command(name = "stepscope", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    Analyze(AnalyzeArgs),
    Diff(DiffArgs),
    Demo(DemoArgs),
    Env(EnvArgs),
    Config(ConfigArgs),
    Bench(BenchArgs),
    Grade(GradeArgs),
    Profile(ProfileArgs),
}

/// When to colour the terminal report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}
