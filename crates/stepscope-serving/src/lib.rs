//! The setup half of stepscope: what makes a profile run record every graph replay while a
//! baseline run stays exactly as shipped: the runtime switches go into profile configs only,
//! and a server booted with one set of variables is never reused for the other.
//!
//! - [`config`]: the YAML schema of a profile or baseline run, read with errors that name
//!   the file, the line and the key.
//! - [`check`]: every profile carries the three runtime switches, no baseline carries one,
//!   wherever it could be set ([`switch_sources`]: `envs`, `container_args`, launch words).
//! - [`launch`] and [`mod@render`]: the exact server command, for a shell or `docker run`,
//!   quoted so no value is split or executed.
//! - [`mod@fingerprint`]: a hash over what reaches the server at boot, and [`may_reuse`], which
//!   refuses a server booted for the other kind of run.
//! - [`collect`]: the trace files a profile window wrote, by the framework's names, waited
//!   for until complete and moved into the run directory; incomplete ones reported by name.
//! - [`windows`]: opening and closing profile windows over each framework's HTTP API, with
//!   the fix when the server's profiler is off.
//! - [`server`]: the server as a child process group: started with the config's
//!   environment, ready when it answers a completion, stopped (SIGTERM, then SIGKILL) with
//!   everything it spawned, on success, error or drop.
//! - [`detect`]: which HIP runtime is actually loaded, from process maps, a Python
//!   environment, `/opt/rocm/.info/version`, `hipconfig` or a trace header.
//!
//! The switch table itself lives in [`stepscope_model::switches`].
//!
//! ```
//! use std::path::Path;
//! use stepscope_serving::{Fingerprint, RenderTarget, check_config, may_reuse, parse_config, render};
//!
//! let profile = r#"
//! kind: profile
//! framework: sglang
//! model: Qwen/Qwen3-8B
//! envs:
//!   DEBUG_CLR_GRAPH_PACKET_CAPTURE: "0"
//!   DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING: "0"
//!   DEBUG_HIP_GRAPH_CLASSIC_PATH: "1"
//!   SGLANG_TORCH_PROFILER_DIR: /tmp/traces
//! load: {concurrency: 64, input_len: 1024, output_len: 1024, num_prompts: 640}
//! windows: [{steps: 128}]
//! output_dir: results/profile
//! "#;
//! let file = parse_config(profile, Path::new("profile_example.yaml")).unwrap();
//! assert!(check_config(&file).is_empty());
//! let shell = render(&file, RenderTarget::Shell).unwrap();
//! assert!(shell.contains("export DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\n"));
//! assert!(shell.contains("python3 -m sglang.launch_server \\\n  --model-path Qwen/Qwen3-8B"));
//!
//! let baseline = profile
//!     .replace("kind: profile", "kind: baseline")
//!     .replace("  DEBUG_", "  # DEBUG_");
//! let baseline = parse_config(&baseline, Path::new("baseline_example.yaml")).unwrap();
//! let running = Fingerprint::of(&baseline.config);
//! assert!(may_reuse(&running, &Fingerprint::of(&file.config)).is_err());
//! ```
#![warn(missing_docs)]

pub mod check;
pub mod collect;
pub mod config;
pub mod detect;
mod error;
pub mod fingerprint;
pub mod grade;
pub mod launch;
pub mod profile;
pub mod render;
pub mod server;
pub mod switch_sources;
pub mod windows;
mod yaml_keys;

pub use check::{Finding, check_config, check_configs};
pub use config::{
    ConfigFile, ConfigKind, Framework, LoadSettings, Platform, ProfileWindow, ServerSettings,
    ServingConfig, config_paths, load_config, parse_config,
};
pub use detect::{
    CommandFailure, CommandRunner, CopyStatus, DetectOptions, Detection, DetectionReport,
    DetectionSource, LibraryCopy, ReplayRace, RocmLibrary, SystemCommandRunner, detect_runtime,
    detection_from_header,
};
pub use error::{ConfigProblem, ServingError};
pub use fingerprint::{Fingerprint, canonical_document, may_reuse};
pub use launch::LaunchPlan;
pub use render::{RenderTarget, render, shell_quote};
pub use server::{ManagedServer, ReadyCheck, ServerError, ServerLaunch, StopOutcome};
