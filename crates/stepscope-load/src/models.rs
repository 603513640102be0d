//! The model a server serves, for a run that names none: the first id of
//! `GET /v1/models` (`{"data": [{"id": …}, …]}`), as `vllm bench serve` picks it.

use crate::error::LoadError;
use crate::http1::{BodyDecoder, Endpoint, Http1Client, Step};
use crate::options::BenchOptions;
use crate::sse::quote;
use serde::Deserialize;
use std::time::Duration as StdDuration;

/// The longest the model list may take (or the run's timeout, when shorter).
const LIST_TIMEOUT: StdDuration = StdDuration::from_secs(30);
/// A model list longer than this is not one.
const MAX_BODY_BYTES: usize = 4 << 20;

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
}

/// The first model `GET <root>/v1/models` lists.
pub(crate) async fn first_model(options: &BenchOptions) -> Result<String, LoadError> {
    let endpoint = options.models_url()?;
    let failed = |problem: String| LoadError::ModelDiscovery {
        url: endpoint.to_string(),
        problem,
    };
    let limit = options.timeout.min(LIST_TIMEOUT);
    let (status, body) = tokio::time::timeout(limit, get(&endpoint))
        .await
        .map_err(|_| failed(format!("no answer within {} s", limit.as_secs_f64())))?
        .map_err(failed)?;
    if !(200..300).contains(&status) {
        return Err(failed(format!("HTTP {status}: {}", quote(&body))));
    }
    let list: ModelList = serde_json::from_slice(&body)
        .map_err(|error| failed(format!("not a model list ({error}): {}", quote(&body))))?;
    list.data
        .into_iter()
        .map(|model| model.id)
        .next()
        .ok_or_else(|| failed("the list is empty".to_owned()))
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
