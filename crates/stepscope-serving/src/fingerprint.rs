//! Reuse fingerprint: which booted server may serve which run.
//!
//! What it hashes: everything that reaches the server at boot — framework, model, container
//! image, platform and container arguments, the exact argv (launcher, port, host, launch
//! arguments, so a profiler directory passed as a flag counts) and the environment,
//! switches and profiler-directory variables included. Not hashed: `kind`, `load`,
//! `windows` and `output_dir`, which stepscope uses and the server never sees. Why: HIP
//! reads the switches once, at load, so a server booted as a baseline replays without them
//! forever after; reusing it for a profile would record 1 replay in 127 again.
//!
//! How: a canonical JSON document (fixed field order, environment sorted by name, so the
//! order of keys in the YAML does not matter) hashed with SHA-256, written `sha256:<hex>`.

use crate::ServingError;
use crate::config::ServingConfig;
use crate::launch::LaunchPlan;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;

/// A server's identity: `sha256:` and 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(String);

#[derive(Serialize)]
struct Canonical<'a> {
    fingerprint_version: u32,
    framework: &'a str,
    model: &'a str,
    platform: &'a str,
    image: Option<&'a str>,
    container_args: &'a [String],
    argv: &'a [String],
    envs: &'a BTreeMap<String, String>,
}

impl Fingerprint {
    /// The fingerprint of the server `config` boots.
    pub fn of(config: &ServingConfig) -> Self {
        let text = canonical_document(config);
        let digest = Sha256::digest(text.as_bytes());
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        Self(format!("sha256:{hex}"))
    }

    /// Reads a fingerprint as [`Fingerprint::as_str`] writes it (`sha256:` + 64 hex digits).
    pub fn parse(text: &str) -> Option<Self> {
        let hex = text.trim().strip_prefix("sha256:")?;
        (hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .then(|| Self(format!("sha256:{hex}")))
    }

    /// `sha256:<hex>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The document the fingerprint hashes, for `config fingerprint --explain` and for tests.
pub fn canonical_document(config: &ServingConfig) -> String {
    let plan = LaunchPlan::from_config(config);
    let canonical = Canonical {
        fingerprint_version: 1,
        framework: config.framework.as_str(),
        model: &config.model,
        platform: plan.platform.as_str(),
        image: plan.image.as_deref(),
        container_args: &plan.container_args,
        argv: &plan.argv,
        envs: &plan.envs,
    };
    // Serializing strings, string lists and a string map cannot fail.
    serde_json::to_string_pretty(&canonical).unwrap_or_default()
}

/// Whether a server booted with `running` may serve a run that needs `wanted`: only when
/// they are equal; otherwise [`ServingError::ReuseRefused`].
pub fn may_reuse(running: &Fingerprint, wanted: &Fingerprint) -> Result<(), ServingError> {
    if running == wanted {
        Ok(())
    } else {
        Err(ServingError::ReuseRefused {
            running: running.to_string(),
            wanted: wanted.to_string(),
        })
    }
}
