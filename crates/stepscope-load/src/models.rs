//! The model a run sends and its context length, from `GET /v1/models`
//! (`{"data": [{"id": …, "max_model_len": …}, …]}`). With no model named, the first id is the
//! model, as `vllm bench serve` picks it, and the list must be read. With a model named, the
//! list is only asked for that model's `max_model_len` (vLLM and SGLang report it), and a
//! list that cannot be read costs nothing but that number. The model's entry is kept in the
//! report ([`ServedModel`]: vLLM's `root` is the weights' path, so two servers that call
//! different weights by one name are told apart).

use crate::error::LoadError;
use crate::http1::{BodyDecoder, Endpoint, Http1Client, Step};
use crate::options::BenchOptions;
use crate::quote::{quote, quote_text};
use serde::{Deserialize, Serialize};
use std::time::Duration as StdDuration;

/// The longest the model list may take when it names the model (or the run's timeout, when
/// shorter).
const LIST_TIMEOUT: StdDuration = StdDuration::from_secs(30);
/// The longest it may take when it only gives a named model's context length.
const CONTEXT_TIMEOUT: StdDuration = StdDuration::from_secs(10);
/// A model list longer than this is not one.
const MAX_BODY_BYTES: usize = 4 << 20;

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
    /// Read as any value: a server that writes something odd here loses the field, not its
    /// model list.
    #[serde(default)]
    root: Option<serde_json::Value>,
    #[serde(default)]
    max_model_len: Option<serde_json::Value>,
}

/// A model as the server lists it on `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedModel {
    /// The name requests give in `model`.
    pub id: String,
    /// What the name stands for (vLLM: the weights' path or hub id), when listed.
    pub root: Option<String>,
    /// Prompt and output tokens of one request together, when listed.
    pub max_model_len: Option<u64>,
}

impl ServedModel {
    fn context(&self) -> Option<ModelContext> {
        Some(ModelContext {
            max_model_len: self.max_model_len?,
        })
    }
}

impl From<ModelEntry> for ServedModel {
    fn from(entry: ModelEntry) -> Self {
        let text = |value: Option<serde_json::Value>| {
            value.and_then(|v| {
                v.as_str()
                    .map(stepscope_model::text::escape_controls)
                    .map(|t| t.into_owned())
            })
        };
        ServedModel {
            id: stepscope_model::text::escape_controls(&entry.id).into_owned(),
            root: text(entry.root),
            max_model_len: entry
                .max_model_len
                .and_then(|v| v.as_u64())
                .filter(|&n| n > 0),
        }
    }
}

/// The context length a server reported for the model of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelContext {
    /// `max_model_len` of the model's entry in `GET /v1/models`: prompt and output tokens
    /// of one request together.
    pub(crate) max_model_len: u64,
}

/// The model to send and its entry in the server's list, when it has one.
pub(crate) async fn served_model(
    options: &BenchOptions,
) -> Result<(String, Option<ServedModel>), LoadError> {
    if !options.model.is_empty() {
        let listed = list(options, CONTEXT_TIMEOUT).await.ok();
        let served = listed
            .into_iter()
            .flatten()
            .find(|entry| entry.id == options.model)
            .map(ServedModel::from);
        return Ok((options.model.clone(), served));
    }
    let endpoint = options.models_url()?;
    let failed = |problem: String| LoadError::ModelDiscovery {
        url: endpoint.to_string(),
        hint: crate::error::model_list_hint(&problem),
        problem,
    };
    let first = list(options, LIST_TIMEOUT)
        .await
        .map_err(failed)?
        .into_iter()
        .next()
        .ok_or_else(|| failed("the list is empty".to_owned()))?;
    let served = ServedModel::from(first);
    Ok((served.id.clone(), Some(served)))
}

/// The model a server serves, as `GET <root>/v1/models` lists it: the entry named
/// `options.model`, or the first with none named. The error says what went wrong.
///
/// # Errors
///
/// The list cannot be read, is empty, or does not hold the model named.
pub async fn list_model(options: &BenchOptions) -> Result<ServedModel, String> {
    let entries = list(options, LIST_TIMEOUT).await?;
    let found = if options.model.is_empty() {
        entries.into_iter().next()
    } else {
        entries.into_iter().find(|entry| entry.id == options.model)
    };
    found.map(ServedModel::from).ok_or_else(|| {
        if options.model.is_empty() {
            "the list is empty".to_owned()
        } else {
            format!(
                "it does not list `{}`",
                stepscope_model::text::escape_controls(&options.model)
            )
        }
    })
}

/// Context of the model a run sends, from its list entry.
pub(crate) fn context_of(served: Option<&ServedModel>) -> Option<ModelContext> {
    served.and_then(ServedModel::context)
}

/// The entries of `GET <root>/v1/models`; the error says what went wrong, server text quoted.
async fn list(options: &BenchOptions, limit: StdDuration) -> Result<Vec<ModelEntry>, String> {
    let endpoint = options.models_url().map_err(|error| error.to_string())?;
    let limit = options.timeout.min(limit);
    let (status, body) = tokio::time::timeout(limit, get(&endpoint))
        .await
        .map_err(|_| format!("no answer within {} s", limit.as_secs_f64()))??;
    if !(200..300).contains(&status) {
        return Err(format!("HTTP {status}: {}", quote(&body)));
    }
    let list: ModelList = serde_json::from_slice(&body).map_err(|error| {
        let error = quote_text(&error.to_string());
        format!("not a model list ({error}): {}", quote(&body))
    })?;
    Ok(list.data)
}

/// `GET endpoint`: the status and the body (at most [`MAX_BODY_BYTES`]).
async fn get(endpoint: &Endpoint) -> Result<(u16, Vec<u8>), String> {
    let client = Http1Client::new(endpoint, 0)
        .await
        .map_err(|error| format!("failed to resolve `{}`: {error}", endpoint.host))?;
    let mut connection = client
        .connect()
        .await
        .map_err(|error| format!("failed to connect: {error}"))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: stepscope/{}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
        endpoint.path,
        endpoint.authority(),
        env!("CARGO_PKG_VERSION")
    );
    let broken = |error: std::io::Error| format!("the connection broke: {error}");
    connection.send(request.as_bytes()).await.map_err(broken)?;
    let head = match connection.read_head().await {
        Ok(Some(head)) => head,
        Ok(None) => return Err("the server closed the connection without an answer".to_owned()),
        Err(crate::http1::HeadError::Io(error)) => return Err(broken(error)),
        Err(crate::http1::HeadError::Invalid(problem)) => {
            return Err(format!("the answer is not HTTP/1.1: {problem}"));
        }
    };
    let mut decoder = BodyDecoder::new(head.body);
    let mut body = Vec::new();
    loop {
        let input = connection.buffered();
        let mut position = 0;
        let ended = loop {
            match decoder.step(input, &mut position) {
                Ok(Step::Data { start, len }) => body.extend_from_slice(&input[start..start + len]),
                Ok(Step::NeedMore) => break false,
                Ok(Step::End) => break true,
                Err(problem) => return Err(format!("the answer is not HTTP/1.1: {problem}")),
            }
        };
        connection.consume(position);
        if ended || body.len() > MAX_BODY_BYTES {
            return Ok((head.status, body));
        }
        match connection.read_more().await.map_err(broken)? {
            0 if decoder.ends_at_close() => return Ok((head.status, body)),
            0 => return Err("the connection closed inside the answer".to_owned()),
            _ => {}
        }
    }
}
