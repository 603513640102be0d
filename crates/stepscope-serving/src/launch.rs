//! The exact command that starts a config's server, as data: argv, environment, container.

use crate::config::{Framework, Platform, ServingConfig};
use std::collections::BTreeMap;

/// Everything that starts the server: what [`mod@crate::render`] writes out and what
/// [`mod@crate::fingerprint`] hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The server command, program first.
    pub argv: Vec<String>,
    /// The server's environment (switches included), sorted by name.
    pub envs: BTreeMap<String, String>,
    /// Container image, when the config names one.
    pub image: Option<String>,
    /// GPU stack, for the container's device flags.
    pub platform: Platform,
    /// Extra `docker run` arguments.
    pub container_args: Vec<String>,
}

/// The framework's default port.
pub fn default_port(framework: Framework) -> u16 {
    match framework {
        Framework::Sglang => 30000,
        Framework::Vllm | Framework::Atom => 8000,
    }
}

/// The framework's command, before the model.
pub fn default_launcher(framework: Framework) -> &'static [&'static str] {
    match framework {
        Framework::Sglang => &["python3", "-m", "sglang.launch_server"],
        Framework::Vllm => &["vllm", "serve"],
        Framework::Atom => &["python3", "-m", "atom.entrypoints.openai_server"],
    }
}

impl LaunchPlan {
    /// The launch of `config`:
    /// SGLang `python3 -m sglang.launch_server --model-path M --port P [--host H] ARGS`,
    /// vLLM `vllm serve M --port P [--host H] ARGS`,
    /// ATOM `python3 -m atom.entrypoints.openai_server --model M --server-port P [--host H] ARGS`.
    pub fn from_config(config: &ServingConfig) -> Self {
        let server = &config.server;
        let mut argv: Vec<String> = match &server.launcher {
            Some(words) => words.clone(),
            None => default_launcher(config.framework)
                .iter()
                .map(|word| (*word).to_owned())
                .collect(),
        };
        let port = server
            .port
            .unwrap_or_else(|| default_port(config.framework))
            .to_string();
        let (model_flag, port_flag) = match config.framework {
            Framework::Sglang => (Some("--model-path"), "--port"),
            Framework::Vllm => (None, "--port"),
            Framework::Atom => (Some("--model"), "--server-port"),
        };
        argv.extend(model_flag.map(str::to_owned));
        argv.push(config.model.clone());
        argv.push(port_flag.to_owned());
        argv.push(port);
        if let Some(host) = &server.host {
            argv.push("--host".to_owned());
            argv.push(host.clone());
        }
        argv.extend(server.args.iter().cloned());
        Self {
            argv,
            envs: config.envs.clone(),
            image: config.image.clone(),
            platform: config.platform,
            container_args: config.container_args.clone(),
        }
    }
}
