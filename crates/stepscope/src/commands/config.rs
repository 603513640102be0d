//! `stepscope config check|render|fingerprint`: the shipped and user server configs.
//!
//! Exit codes: `check` exits 3 when it finds a problem (each named by file, line and key)
//! and 2 when a file cannot be read or parsed; `render` and `fingerprint` exit 2 on a bad
//! config.

use crate::Outcome;
use crate::output;
use clap::{Args, Subcommand, ValueEnum};
use std::fmt::Write as _;
use std::path::PathBuf;
use stepscope_serving::{
    ConfigFile, Fingerprint, RenderTarget, ServingError, canonical_document, check_configs,
    config_paths, load_config, render,
};

/// `stepscope config`.
pub fn run(args: ConfigArgs) -> anyhow::Result<Outcome> {
    let ConfigArgs { command } = args;
    match command {
        ConfigCommand::Check(args) => check(&args.inputs),
        ConfigCommand::Render(args) => {
            let target = match args.target {
                LaunchTarget::Shell => RenderTarget::Shell,
                LaunchTarget::Docker => RenderTarget::Docker,
            };
            render_one(args.config, target)
        }
        ConfigCommand::Fingerprint(args) => fingerprint(&args.inputs, args.explain),
    }
}

/// Loads every config the inputs name; prints each failure and counts it.
fn load_all(inputs: &[PathBuf]) -> (Vec<ConfigFile>, usize) {
    let paths = match config_paths(inputs) {
        Ok(paths) => paths,
        Err(error) => {
            report(error);
            return (Vec::new(), 1);
        }
    };
    let mut files = Vec::new();
    let mut failed = 0;
    for path in paths {
        match load_config(&path) {
            Ok(file) => files.push(file),
            Err(error) => {
                report(error);
                failed += 1;
            }
        }
    }
    (files, failed)
}

fn report(error: ServingError) {
    output::print_error(&anyhow::Error::new(error));
}

fn check(inputs: &[PathBuf]) -> anyhow::Result<Outcome> {
    let (files, failed) = load_all(inputs);
    let findings = check_configs(&files);
    let mut out = String::new();
    for file in &files {
        let problems = findings.iter().filter(|f| f.path == file.path).count();
        let status = if problems == 0 { "ok" } else { "FAIL" };
        let _ = writeln!(
            out,
            "{status:<4} {} ({}, {})",
            file.path.display(),
            file.config.kind,
            file.config.framework
        );
    }
    for finding in &findings {
        let _ = writeln!(out, "{finding}");
    }
    let _ = writeln!(
        out,
        "{} config(s) checked: {} problem(s){}",
        files.len(),
        findings.len(),
        if failed > 0 {
            format!(", {failed} unreadable")
        } else {
            String::new()
        }
    );
    // Findings quote the config's own words (keys, env-var names), which may hold anything.
    output::print(&stepscope_model::text::escape_controls_keep_lines(&out))?;
    Ok(if failed > 0 {
        Outcome::InputError
    } else if !findings.is_empty() {
        Outcome::VerdictFailed
    } else {
        Outcome::Success
    })
}

fn render_one(path: PathBuf, target: RenderTarget) -> anyhow::Result<Outcome> {
    let rendered = load_config(&path).and_then(|file| render(&file, target));
    match rendered {
        Ok(text) => {
            output::print(&text)?;
            Ok(Outcome::Success)
        }
        Err(error) => {
            report(error);
            Ok(Outcome::InputError)
        }
    }
}

fn fingerprint(inputs: &[PathBuf], explain: bool) -> anyhow::Result<Outcome> {
    let (files, failed) = load_all(inputs);
    let mut out = String::new();
    for file in &files {
        let _ = writeln!(
            out,
            "{}  {}",
            Fingerprint::of(&file.config),
            file.path.display()
        );
        if explain {
            let _ = writeln!(out, "{}", canonical_document(&file.config));
        }
    }
    // Findings quote the config's own words (keys, env-var names), which may hold anything.
    output::print(&stepscope_model::text::escape_controls_keep_lines(&out))?;
    Ok(if failed > 0 {
        Outcome::InputError
    } else {
        Outcome::Success
    })
}

/// `config`'s line in its parent's command list.
const ABOUT: &str = "Check, render and fingerprint profile and baseline server configs";

/// `config --help`: each paragraph is one line, wrapped to the terminal's width.
const LONG_ABOUT: &str = "\
Check, render and fingerprint profile and baseline server configs (YAML).

A profile config carries all three runtime switches; a baseline carries none. The schema \
is in configs/README.md.

EXAMPLES:
  # exit 3 when a profile lacks a switch or a baseline has one
  stepscope config check configs/
  stepscope config render configs/profile_sglang.yaml --target shell
  stepscope config render configs/profile_vllm.yaml --target docker
  stepscope config fingerprint configs/profile_sglang.yaml \\
      configs/baseline_sglang.yaml";

/// Arguments of `config`.
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
pub struct ConfigArgs {
    /// What to do with the configs.
    #[command(subcommand)]
    pub command: ConfigCommand,
}

/// `config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    Check(ConfigCheckArgs),
    Render(ConfigRenderArgs),
    Fingerprint(ConfigFingerprintArgs),
}

/// `check`'s line in its parent's command list.
const CHECK_ABOUT: &str = "Check that profile configs carry the switches and baselines none";

/// `check --help`: each paragraph is one line, wrapped to the terminal's width.
const CHECK_LONG_ABOUT: &str = "\
Check that every profile config carries the three switches and no baseline has one.

Exit codes: 0 all good; 3 a problem was found (each names file, line and key); 2 a file \
cannot be read or parsed.

EXAMPLES:
  stepscope config check configs/
  stepscope config check my_profile.yaml my_baseline.yaml";

/// Arguments of `config check`.
#[derive(Debug, Args)]
#[command(about = CHECK_ABOUT, long_about = CHECK_LONG_ABOUT)]
pub struct ConfigCheckArgs {
    /// Config files, or folders of `.yaml` / `.yml` files.
    #[arg(required = true, value_name = "CONFIG_OR_DIR")]
    pub inputs: Vec<PathBuf>,
}

/// Where a rendered launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LaunchTarget {
    /// A POSIX shell on the host.
    Shell,
    /// `docker run` with the config's image.
    Docker,
}

/// `render`'s line in its parent's command list.
const RENDER_ABOUT: &str = "Print the exact launch command of a config (shell or docker run)";

/// `render --help`: each paragraph is one line, wrapped to the terminal's width.
const RENDER_LONG_ABOUT: &str = "\
Print the exact launch command of a config: export lines and the server command, or one \
`docker run`.

EXAMPLES:
  stepscope config render configs/profile_sglang.yaml > launch.sh
  bash launch.sh
  stepscope config render configs/baseline_vllm.yaml --target docker";

/// Arguments of `config render`.
#[derive(Debug, Args)]
#[command(about = RENDER_ABOUT, long_about = RENDER_LONG_ABOUT)]
pub struct ConfigRenderArgs {
    /// The config file.
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    /// Where the command runs.
    #[arg(long, value_enum, default_value_t = LaunchTarget::Shell)]
    pub target: LaunchTarget,
}

/// `fingerprint`'s line in its parent's command list.
const FINGERPRINT_ABOUT: &str = "Print each config's reuse fingerprint";

/// `fingerprint --help`: each paragraph is one line, wrapped to the terminal's width.
const FINGERPRINT_LONG_ABOUT: &str = "\
Print each config's reuse fingerprint: a hash over what reaches the server at boot \
(framework, model, image, launch arguments, environment), not load, windows or output.

EXAMPLES:
  stepscope config fingerprint configs/profile_sglang.yaml
  # also the hashed document
  stepscope config fingerprint configs/ --explain";

/// Arguments of `config fingerprint`.
#[derive(Debug, Args)]
#[command(about = FINGERPRINT_ABOUT, long_about = FINGERPRINT_LONG_ABOUT)]
pub struct ConfigFingerprintArgs {
    /// Config files, or folders of them.
    #[arg(required = true, value_name = "CONFIG_OR_DIR")]
    pub inputs: Vec<PathBuf>,
    /// Also print the canonical document that is hashed.
    #[arg(long)]
    pub explain: bool,
}
