//! Profile windows: opening and closing a framework's torch-profiler window over HTTP
//! (`/start_profile` and `/stop_profile` of SGLang, vLLM and ATOM).
//!
//! SGLang takes the window's length in `/start_profile` (`num_steps`, `profile_by_stage`,
//! `output_dir`) and closes it by itself; vLLM and ATOM record from `/start_profile` until
//! `/stop_profile`, which blocks while the trace is written (minutes on big windows, so its
//! timeout is the caller's and generous). A server whose profiler is not enabled answers 404
//! (the route is not registered) or an error: [`WindowError::ProfilerDisabled`] says how to
//! enable it for that framework.

use crate::config::{Framework, ProfileWindow};
use crate::server::agent;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A server's profile endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileEndpoint {
    /// The framework, which decides the protocol.
    pub framework: Framework,
    /// Base URL, e.g. `http://127.0.0.1:8000`.
    pub base_url: String,
    /// Where the server writes traces (SGLang takes it per window; vLLM and ATOM at boot).
    pub trace_dir: PathBuf,
}

/// How an opened window ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowEnd {
    /// The server closes it after its steps (SGLang `num_steps`).
    BySteps,
    /// [`stop_window`] closes it (vLLM, ATOM).
    ByStop,
}

/// What `/stop_profile` answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopAnswer {
    /// Trace files the server named (ATOM's `traces`), if it named any.
    pub traces: Vec<String>,
}

/// Why a window could not be opened or closed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WindowError {
    /// The server's profiler is off.
    #[error("{framework}'s profiler is not enabled: {url} answered {status}\nhint: {hint}")]
    ProfilerDisabled {
        /// The framework.
        framework: &'static str,
        /// The endpoint.
        url: String,
        /// Its status.
        status: u16,
        /// How to enable the profiler.
        hint: &'static str,
    },
    /// Another error status.
    #[error("{url} answered {status}: {body}")]
    Status {
        /// The endpoint.
        url: String,
        /// Its status.
        status: u16,
        /// The start of its body.
        body: String,
    },
    /// No answer.
    #[error("{url}: {message}\nhint: is the server running, and is this its address?")]
    Connect {
        /// The endpoint.
        url: String,
        /// What the HTTP client said.
        message: String,
    },
}

/// Opens a window. SGLang gets the window's steps and the trace folder and closes it by
/// itself; vLLM gets the steps as its own limit (`max_iterations`: vLLM 0.32 honours it,
/// measured; a version whose route takes no body ignores it) and, like ATOM, records until
/// [`stop_window`].
pub fn start_window(
    endpoint: &ProfileEndpoint,
    window: ProfileWindow,
) -> Result<WindowEnd, WindowError> {
    let url = format!("{}/start_profile", endpoint.base_url.trim_end_matches('/'));
    let (body, end) = match endpoint.framework {
        Framework::Sglang => (
            Some(sglang_body(window, &endpoint.trace_dir)),
            WindowEnd::BySteps,
        ),
        Framework::Vllm => (
            Some(serde_json::json!({"max_iterations": window_steps(window)})),
            WindowEnd::ByStop,
        ),
        Framework::Atom => (None, WindowEnd::ByStop),
    };
    post(
        endpoint.framework,
        &url,
        body.as_ref(),
        Duration::from_secs(60),
    )?;
    Ok(end)
}

/// Opens a window with no step limit, closed by [`stop_window`] (SGLang too): the profiled
/// phases of a throughput comparison.
pub fn start_open_window(endpoint: &ProfileEndpoint) -> Result<(), WindowError> {
    let url = format!("{}/start_profile", endpoint.base_url.trim_end_matches('/'));
    let body = (endpoint.framework == Framework::Sglang).then(|| {
        let mut body = sglang_body(ProfileWindow::Steps(1), &endpoint.trace_dir);
        if let Some(fields) = body.as_object_mut() {
            fields.remove("num_steps");
        }
        body
    });
    post(
        endpoint.framework,
        &url,
        body.as_ref(),
        Duration::from_secs(60),
    )?;
    Ok(())
}

/// The steps a window asks for (`single_step`: 1; `by_stage: N`: N of each stage).
pub fn window_steps(window: ProfileWindow) -> u32 {
    match window {
        ProfileWindow::Steps(n) | ProfileWindow::ByStage(n) => n,
        ProfileWindow::SingleStep => 1,
    }
}

/// Closes a window (`/stop_profile`); vLLM and ATOM block while they write the trace, up to
/// `timeout`.
pub fn stop_window(
    endpoint: &ProfileEndpoint,
    timeout: Duration,
) -> Result<StopAnswer, WindowError> {
    let url = format!("{}/stop_profile", endpoint.base_url.trim_end_matches('/'));
    let text = post(endpoint.framework, &url, None, timeout)?;
    let traces = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("traces").cloned())
        .and_then(|t| serde_json::from_value::<Vec<String>>(t).ok())
        .unwrap_or_default();
    Ok(StopAnswer { traces })
}

/// Engine steps a vLLM server has run: the count of its `vllm:iteration_tokens_total`
/// histogram on `/metrics` (one observation per engine step that scheduled tokens), summed
/// over engines. vLLM's `/start_profile` takes no step count, so a `{steps: N}` window on a
/// server booted without `max_iterations` is closed once this has grown by N.
pub fn vllm_engine_steps(base_url: &str) -> Result<u64, WindowError> {
    let url = format!("{}/metrics", base_url.trim_end_matches('/'));
    let mut response = agent(Duration::from_secs(30))
        .get(&url)
        .call()
        .map_err(|e| WindowError::Connect {
            url: url.clone(),
            message: e.to_string(),
        })?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    if status != 200 {
        return Err(WindowError::Status {
            url,
            status,
            body: text.chars().take(300).collect(),
        });
    }
    prometheus_count(&text, "vllm:iteration_tokens_total_count").ok_or(WindowError::Status {
        url,
        status,
        body: "no vllm:iteration_tokens_total_count in the metrics".to_owned(),
    })
}

/// Waits until a vLLM server has run `steps` engine steps since `from` (a
/// [`vllm_engine_steps`] reading); returns the steps counted. Fails when the count does not
/// reach it within `timeout` (the load stopped, or the server stalls), saying how far it got.
pub fn wait_for_engine_steps(
    base_url: &str,
    from: u64,
    steps: u64,
    timeout: Duration,
    poll: Duration,
) -> Result<u64, WindowError> {
    let started = std::time::Instant::now();
    loop {
        let done = vllm_engine_steps(base_url)?.saturating_sub(from);
        if done >= steps {
            return Ok(done);
        }
        if started.elapsed() >= timeout {
            return Err(WindowError::Status {
                url: format!("{}/metrics", base_url.trim_end_matches('/')),
                status: 200,
                body: format!(
                    "only {done} of {steps} engine steps in {} s: is the load still running?",
                    timeout.as_secs()
                ),
            });
        }
        std::thread::sleep(poll);
    }
}

/// The sum of every sample of `metric` (any labels) in Prometheus text, if it has one.
pub fn prometheus_count(text: &str, metric: &str) -> Option<u64> {
    let mut total: Option<f64> = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(metric) else {
            continue;
        };
        let value = match rest.chars().next() {
            Some('{') => rest.rsplit_once('}').map(|(_, v)| v),
            Some(' ') => Some(rest),
            _ => None,
        };
        let number = value
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok());
        if let Some(number) = number {
            *total.get_or_insert(0.0) += number;
        }
    }
    total.map(|t| t.max(0.0).round() as u64)
}

/// SGLang's `/start_profile` body for a window.
pub fn sglang_body(window: ProfileWindow, trace_dir: &Path) -> serde_json::Value {
    let (num_steps, by_stage) = match window {
        ProfileWindow::Steps(n) => (n, false),
        ProfileWindow::ByStage(n) => (n, true),
        ProfileWindow::SingleStep => (1, false),
    };
    serde_json::json!({
        "output_dir": trace_dir.display().to_string(),
        "num_steps": num_steps,
        "profile_by_stage": by_stage,
        "activities": ["CPU", "GPU"],
        "record_shapes": false,
        "with_stack": false,
    })
}

/// POSTs (with a JSON body or none); returns the body of a 2xx answer.
fn post(
    framework: Framework,
    url: &str,
    body: Option<&serde_json::Value>,
    timeout: Duration,
) -> Result<String, WindowError> {
    let request = agent(timeout).post(url);
    let answer = match body {
        Some(body) => request.send_json(body),
        None => request.send_empty(),
    };
    let mut response = answer.map_err(|e| WindowError::Connect {
        url: url.to_owned(),
        message: e.to_string(),
    })?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    match status {
        200..=299 => Ok(text),
        404 | 405 => Err(WindowError::ProfilerDisabled {
            framework: framework.as_str(),
            url: url.to_owned(),
            status,
            hint: enable_hint(framework),
        }),
        _ => Err(WindowError::Status {
            url: url.to_owned(),
            status,
            body: text.chars().take(300).collect(),
        }),
    }
}

/// How to turn a framework's profiler on.
pub fn enable_hint(framework: Framework) -> &'static str {
    match framework {
        Framework::Vllm => {
            "start vLLM with --profiler-config '{\"profiler\": \"torch\", \"torch_profiler_dir\": \"DIR\"}' (older versions: VLLM_TORCH_PROFILER_DIR=DIR); /start_profile and /stop_profile exist only then"
        }
        Framework::Sglang => {
            "use an SGLang build with /start_profile (set SGLANG_TORCH_PROFILER_DIR=DIR for the default folder)"
        }
        Framework::Atom => {
            "start ATOM with --torch-profiler-dir DIR (or ATOM_TORCH_PROFILER_DIR=DIR)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_steps_sum_every_engine_and_skip_other_metrics() {
        let text = "\
# HELP vllm:iteration_tokens_total Histogram of number of tokens per engine_step.
# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"1.0\",model_name=\"tiny\"} 0.0
vllm:iteration_tokens_total_count{engine=\"0\",model_name=\"tiny\"} 117.0
vllm:iteration_tokens_total_count{engine=\"1\",model_name=\"tiny\"} 3.0
vllm:iteration_tokens_total_sum{engine=\"0\",model_name=\"tiny\"} 4096.0
vllm:iteration_tokens_total_counter_like 9
";
        assert_eq!(
            prometheus_count(text, "vllm:iteration_tokens_total_count"),
            Some(120)
        );
        assert_eq!(prometheus_count("x_count 5\n", "x_count"), Some(5));
        assert_eq!(prometheus_count("other 5\n", "x_count"), None);
    }
}
