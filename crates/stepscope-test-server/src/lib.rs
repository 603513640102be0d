//! **A test and benchmark helper, not a server to measure**: an OpenAI-compatible streaming
//! server on 127.0.0.1 that answers every request at once — `max_tokens` token chunks, the
//! usage chunk and `data: [DONE]` in one write — so a benchmark against it measures only the
//! client. It speaks real HTTP/1.1 with chunked transfer encoding and server-sent events,
//! like vLLM, on its own thread and Tokio runtime.
//!
//! Options pace the chunks (one every `chunk_interval`, recording when each was sent, for
//! the client's timing error) or make it misbehave ([`Fault`]) for failure tests, or lie and
//! change in the ways a grading must catch: usage that claims more tokens than streamed,
//! other answers to the same prompt (`output_salt`), a slow first token on some requests.
//!
//! Answers are a function of the prompt, as greedy decoding is: token `i` of the answer to a
//! prompt is a hash of the prompt, `i` and `output_salt`, its text ` t<id>`; with
//! `return_token_ids` in the request each chunk lists its id, as vLLM does.
//! [`ServerStats`] counts requests and the most that were in flight at once; every request's
//! method, path and `model` field is logged ([`InstantServer::seen_requests`]). `GET
//! /v1/models` lists [`InstantServerOptions::models`].

use serde_json::Value;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration as StdDuration, Instant};
use stepscope_model::Timestamp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A way to misbehave, applied to every `fault_every`-th request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Answer with this HTTP status and a JSON error body.
    Status(u16),
    /// Close the connection after this many token chunks.
    CloseAfter(usize),
    /// Send this many token chunks, then nothing (for up to five minutes).
    StallAfter(usize),
    /// After this many token chunks, send a line that is not SSE.
    BadLineAfter(usize),
    /// After this many token chunks, send an error object as an event.
    ErrorEventAfter(usize),
    /// End the stream properly but without `data: [DONE]`.
    NoDone,
}

/// How the server answers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InstantServerOptions {
    /// `None` (default): the whole answer in one write. `Some(gap)`: one chunk every `gap`.
    pub chunk_interval: Option<StdDuration>,
    /// Misbehave (default: never).
    pub fault: Option<Fault>,
    /// The fault hits requests number `fault_every`, `2 × fault_every`, … (default 1: all).
    pub fault_every: u64,
    /// Send the usage chunk when `stream_options.include_usage` asks for it (default true).
    pub usage: bool,
    /// Record when each token chunk was written, in nanoseconds since this instant.
    pub send_log_origin: Option<Instant>,
    /// Close a kept-alive connection that carries no new request for this long, as
    /// uvicorn does after 5 s (default: never).
    pub idle_close: Option<StdDuration>,
    /// The ids `GET /v1/models` lists (default: `["instant"]`).
    pub models: Vec<String>,
    /// The `root` each listed model gives (vLLM: the weights' path; default: none).
    pub model_root: Option<String>,
    /// `usage.completion_tokens` is the streamed count times this (default 1: honest).
    pub usage_scale: u64,
    /// Mixed into every answer's tokens: another salt, other answers (default 0).
    pub output_salt: u64,
    /// Waited before the first token of every answer (default: none).
    pub first_token_delay: Option<StdDuration>,
    /// Every `.0`-th request waits `.1` more before its first token (default: none).
    pub slow_first_token: Option<(u64, StdDuration)>,
}

impl Default for InstantServerOptions {
    fn default() -> Self {
        Self {
            chunk_interval: None,
            fault: None,
            fault_every: 1,
            usage: true,
            send_log_origin: None,
            idle_close: None,
            models: vec!["instant".to_owned()],
            model_root: None,
            usage_scale: 1,
            output_salt: 0,
            first_token_delay: None,
            slow_first_token: None,
        }
    }
}

impl InstantServerOptions {
    /// One token chunk every `interval`.
    pub fn with_chunk_interval(mut self, interval: StdDuration) -> Self {
        self.chunk_interval = Some(interval);
        self
    }

    /// `fault` on requests number `every`, `2 × every`, … (1: all).
    pub fn with_fault(mut self, fault: Fault, every: u64) -> Self {
        self.fault = Some(fault);
        self.fault_every = every;
        self
    }

    /// Never send the usage chunk.
    pub fn without_usage(mut self) -> Self {
        self.usage = false;
        self
    }

    /// Close connections idle for `after`.
    pub fn with_idle_close(mut self, after: StdDuration) -> Self {
        self.idle_close = Some(after);
        self
    }

    /// Record send times since `origin`.
    pub fn with_send_log(mut self, origin: Instant) -> Self {
        self.send_log_origin = Some(origin);
        self
    }

    /// List these model ids on `GET /v1/models` (none: an empty list).
    pub fn with_models(mut self, models: &[&str]) -> Self {
        self.models = models.iter().map(|&model| model.to_owned()).collect();
        self
    }

    /// Give each listed model this `root`.
    pub fn with_model_root(mut self, root: &str) -> Self {
        self.model_root = Some(root.to_owned());
        self
    }

    /// Claim `scale` times the streamed tokens in `usage.completion_tokens`.
    pub fn with_usage_scale(mut self, scale: u64) -> Self {
        self.usage_scale = scale;
        self
    }

    /// Answer every prompt differently from a server with another salt.
    pub fn with_output_salt(mut self, salt: u64) -> Self {
        self.output_salt = salt;
        self
    }

    /// Wait `delay` before every answer's first token.
    pub fn with_first_token_delay(mut self, delay: StdDuration) -> Self {
        self.first_token_delay = Some(delay);
        self
    }

    /// Every `every`-th request waits `extra` more before its first token.
    pub fn with_slow_first_token(mut self, every: u64, extra: StdDuration) -> Self {
        self.slow_first_token = Some((every, extra));
        self
    }
}

/// Counters of the server, updated as requests come and go.
#[derive(Debug, Default)]
pub struct ServerStats {
    connections: AtomicU64,
    requests: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    faults: AtomicU64,
    token_chunks: AtomicU64,
}

impl ServerStats {
    /// Connections accepted.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
    /// Completion requests received.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
    /// The most completion requests being answered at one time.
    pub fn max_in_flight(&self) -> u64 {
        self.max_in_flight.load(Ordering::SeqCst)
    }
    /// Requests answered with a fault.
    pub fn faults(&self) -> u64 {
        self.faults.load(Ordering::SeqCst)
    }
    /// Token chunks written.
    pub fn token_chunks(&self) -> u64 {
        self.token_chunks.load(Ordering::SeqCst)
    }
}

/// When the token chunks of one request were written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendLog {
    /// [`prompt_key`] of the request's prompt.
    pub prompt_key: u64,
    /// Just before each token chunk's write, since `send_log_origin`.
    pub send_times: Vec<Timestamp>,
}

/// One request as the server read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target, e.g. `/v1/completions`.
    pub path: String,
    /// The body's `model` field, when the body is JSON with one.
    pub model: Option<String>,
}

/// The request log keeps the first this many requests (a bound for the long `serve` runs).
const MAX_SEEN_REQUESTS: usize = 100_000;

/// FNV-1a over a token-id prompt: how a [`SendLog`] names its request.
pub fn prompt_key(ids: &[u32]) -> u64 {
    ids.iter()
        .flat_map(|id| id.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

#[derive(Debug)]
struct Shared {
    options: InstantServerOptions,
    stats: ServerStats,
    log: Mutex<Vec<SendLog>>,
    seen: Mutex<Vec<SeenRequest>>,
}

impl Shared {
    fn see(&self, request: &HttpRequest, body: Option<&Value>) {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if seen.len() < MAX_SEEN_REQUESTS {
            seen.push(SeenRequest {
                method: request.method.clone(),
                path: request.path.clone(),
                model: body.and_then(|body| body["model"].as_str().map(str::to_owned)),
            });
        }
    }
}

/// A running instant server; dropping it stops it.
#[derive(Debug)]
pub struct InstantServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl InstantServer {
    /// Starts a server on a free port of 127.0.0.1.
    pub fn start(options: InstantServerOptions) -> io::Result<Self> {
        Self::start_on(options, SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// Starts a server on `address` (port 0: a free one).
    pub fn start_on(options: InstantServerOptions, address: SocketAddr) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(address)?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            options,
            stats: ServerStats::default(),
            log: Mutex::new(Vec::new()),
            seen: Mutex::new(Vec::new()),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (shutdown, stopped) = oneshot::channel();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("instant-server".to_owned())
            .spawn(move || runtime.block_on(accept_loop(listener, thread_shared, stopped)))?;
        Ok(Self {
            address,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Its counters.
    pub fn stats(&self) -> &ServerStats {
        &self.shared.stats
    }

    /// The send times recorded so far (with `send_log_origin`), emptying the log.
    pub fn take_send_log(&self) -> Vec<SendLog> {
        let mut log = self
            .shared
            .log
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        std::mem::take(&mut *log)
    }

    /// Every request read so far (the first 100,000), in order: method, path and model.
    pub fn seen_requests(&self) -> Vec<SeenRequest> {
        self.shared
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }
}

impl Drop for InstantServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(serve_connection(stream, Arc::clone(&shared)));
                }
            }
        }
    }
}

/// One parsed HTTP request.
struct HttpRequest {
    method: String,
    path: String,
    body: Vec<u8>,
    close: bool,
}

const MAX_HEAD_BYTES: usize = 64 << 10;
const MAX_BODY_BYTES: usize = 64 << 20;

async fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    shared.stats.connections.fetch_add(1, Ordering::SeqCst);
    let mut buffer = Vec::with_capacity(16 << 10);
    loop {
        let next = read_request(&mut stream, &mut buffer);
        let request = match shared.options.idle_close {
            Some(idle) => tokio::time::timeout(idle, next).await.ok().flatten(),
            None => next.await,
        };
        let Some(request) = request else {
            return;
        };
        let keep_alive = respond(&mut stream, &request, &shared)
            .await
            .unwrap_or(false);
        if !keep_alive || request.close {
            return;
        }
    }
}

/// Reads one request; `None` at the end of the connection or on anything malformed.
async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<HttpRequest> {
    let head_end = loop {
        if let Some(position) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break position;
        }
        if buffer.len() > MAX_HEAD_BYTES || read_more(stream, buffer).await? == 0 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, path) = (
        request_line.next()?.to_owned(),
        request_line.next()?.to_owned(),
    );
    let mut length = 0usize;
    let mut close = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok()?;
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return None; // chunked request bodies are not needed by any client here
        }
    }
    let body_start = head_end + 4;
    if length > MAX_BODY_BYTES {
        return None;
    }
    while buffer.len() < body_start + length {
        if read_more(stream, buffer).await? == 0 {
            return None;
        }
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    Some(HttpRequest {
        method,
        path,
        body,
        close,
    })
}

async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<usize> {
    let mut chunk = [0u8; 16 << 10];
    let read = stream.read(&mut chunk).await.ok()?;
    buffer.extend_from_slice(&chunk[..read]);
    Some(read)
}

/// Answers one request; `Ok(true)` when the connection may carry another.
async fn respond(
    stream: &mut TcpStream,
    request: &HttpRequest,
    shared: &Shared,
) -> io::Result<bool> {
    let parsed = serde_json::from_slice::<Value>(&request.body).ok();
    shared.see(request, parsed.as_ref());
    let chat = match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/v1/completions") => false,
        ("POST", "/v1/chat/completions") => true,
        ("GET", "/v1/models") => {
            let options = &shared.options;
            let list = model_list(&options.models, options.model_root.as_deref());
            return write_plain(stream, "200 OK", &list).await;
        }
        ("GET", "/health") => return write_plain(stream, "200 OK", "").await,
        _ => return write_plain(stream, "404 Not Found", r#"{"error":"not found"}"#).await,
    };
    let Some(body) = parsed else {
        return write_plain(stream, "400 Bad Request", r#"{"error":"body is not JSON"}"#).await;
    };
    if body["stream"] != Value::Bool(true) {
        return write_plain(
            stream,
            "400 Bad Request",
            r#"{"error":"only stream: true"}"#,
        )
        .await;
    }
    let stats = &shared.stats;
    let number = stats.requests.fetch_add(1, Ordering::SeqCst) + 1;
    let fault = shared
        .options
        .fault
        .filter(|_| number % shared.options.fault_every.max(1) == 0);
    if fault.is_some() {
        stats.faults.fetch_add(1, Ordering::SeqCst);
    }
    if let Some(Fault::Status(code)) = fault {
        let status = format!("{code} Injected Failure");
        let error = format!(r#"{{"object":"error","message":"injected failure","code":{code}}}"#);
        return write_plain(stream, &status, &error).await;
    }
    let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let answer = Answer::of(&body, chat, number, shared);
    let result = stream_answer(stream, &answer, fault, shared).await;
    stats.in_flight.fetch_sub(1, Ordering::SeqCst);
    result
}

/// The body of `GET /v1/models`, as vLLM writes it.
fn model_list(models: &[String], root: Option<&str>) -> String {
    let data: Vec<Value> = models
        .iter()
        .map(|id| {
            let mut entry =
                serde_json::json!({"id": id, "object": "model", "owned_by": "stepscope"});
            if let Some(root) = root {
                entry["root"] = Value::from(root);
            }
            entry
        })
        .collect();
    serde_json::json!({"object": "list", "data": data}).to_string()
}

async fn write_plain(stream: &mut TcpStream, status: &str, body: &str) -> io::Result<bool> {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    Ok(true)
}

/// What one streamed answer holds: each token chunk is `prefix`, the token's text and id,
/// `suffix` (the last chunk's suffix says `finish_reason: "length"`).
struct Answer {
    /// `{"id":…,"choices":[{"index":0,"text":"` (or `"delta":{"content":"`).
    prefix: String,
    /// Closes the text, lists the id when asked, and the chunk.
    middle: &'static str,
    suffix: &'static str,
    last_suffix: &'static str,
    first_event: Option<Vec<u8>>,
    usage_event: Option<Vec<u8>>,
    tokens: usize,
    prompt_key: u64,
    salt: u64,
    first_token_wait: Option<StdDuration>,
}

impl Answer {
    fn of(body: &Value, chat: bool, number: u64, shared: &Shared) -> Self {
        let options = &shared.options;
        let tokens = body["max_tokens"]
            .as_u64()
            .or_else(|| body["max_completion_tokens"].as_u64())
            .unwrap_or(16) as usize;
        let (prompt_tokens, prompt_key) = prompt_size(body);
        let model = body["model"].as_str().unwrap_or("instant");
        let (id, object) = if chat {
            (format!("chatcmpl-{number}"), "chat.completion.chunk")
        } else {
            (format!("cmpl-{number}"), "text_completion")
        };
        let head = format!(
            r#"{{"id":"{id}","object":"{object}","created":1764000000,"model":{}"#,
            Value::from(model)
        );
        let ids = body["return_token_ids"] == Value::Bool(true);
        let (prefix, [middle, suffix, last_suffix]) = chunk_parts(&head, chat, ids);
        let wants_usage = body["stream_options"]["include_usage"] == Value::Bool(true);
        let claimed = tokens as u64 * options.usage_scale;
        let usage = format!(
            r#"{head},"choices":[],"usage":{{"prompt_tokens":{prompt_tokens},"total_tokens":{},"completion_tokens":{claimed}}}}}"#,
            prompt_tokens + claimed
        );
        Self {
            prefix,
            middle,
            suffix,
            last_suffix,
            first_event: chat.then(|| {
                let role = r#"{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}"#;
                event(&format!(r#"{head},"choices":[{role}]}}"#))
            }),
            usage_event: (wants_usage && options.usage).then(|| event(&usage)),
            tokens,
            prompt_key,
            salt: options.output_salt,
            first_token_wait: first_token_wait(options, number),
        }
    }

    /// The id of token `index`: a hash of the prompt, the position and the salt, below 2048.
    fn token_id(&self, index: usize) -> u64 {
        let mut x = self.prompt_key ^ self.salt.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ index as u64;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (x ^ (x >> 31)) % 2048
    }

    /// Token chunk `index` as one HTTP chunk, appended to `out`.
    fn write_token(&self, index: usize, out: &mut Vec<u8>) {
        let id = self.token_id(index);
        let suffix = if index + 1 == self.tokens {
            self.last_suffix
        } else {
            self.suffix
        };
        let ids = if self.middle.ends_with('[') {
            id.to_string()
        } else {
            String::new()
        };
        let payload = format!(
            "data: {} t{id}{}{ids}{suffix}\n\n",
            self.prefix, self.middle
        );
        out.extend_from_slice(format!("{:x}\r\n", payload.len()).as_bytes());
        out.extend_from_slice(payload.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// The parts of a token chunk around its text and id: the prefix up to the text, then what
/// closes the text (and opens `token_ids` when `ids`), the end of a chunk, and the end of the
/// last one.
fn chunk_parts(head: &str, chat: bool, ids: bool) -> (String, [&'static str; 3]) {
    let ends = |finish: &'static str, plain: &'static str| if ids { finish } else { plain };
    if chat {
        (
            format!(r#"{head},"choices":[{{"index":0,"delta":{{"content":""#),
            [
                ends(r#""},"token_ids":["#, r#""}"#),
                ends(
                    r#"],"logprobs":null,"finish_reason":null}]}"#,
                    r#","logprobs":null,"finish_reason":null}]}"#,
                ),
                ends(
                    r#"],"logprobs":null,"finish_reason":"length"}]}"#,
                    r#","logprobs":null,"finish_reason":"length"}]}"#,
                ),
            ],
        )
    } else {
        (
            format!(r#"{head},"choices":[{{"index":0,"text":""#),
            [
                ends(r#"","token_ids":["#, r#"""#),
                ends(
                    r#"],"logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
                    r#","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
                ),
                ends(
                    r#"],"logprobs":null,"finish_reason":"length","stop_reason":null}]}"#,
                    r#","logprobs":null,"finish_reason":"length","stop_reason":null}]}"#,
                ),
            ],
        )
    }
}

/// How long request `number` waits before its first token.
fn first_token_wait(options: &InstantServerOptions, number: u64) -> Option<StdDuration> {
    let slow = options
        .slow_first_token
        .filter(|(every, _)| number % (*every).max(1) == 0)
        .map(|(_, extra)| extra);
    match (options.first_token_delay, slow) {
        (None, None) => None,
        (delay, slow) => Some(delay.unwrap_or_default() + slow.unwrap_or_default()),
    }
}

/// Prompt tokens (ids, or words of text) and the prompt's key.
fn prompt_size(body: &Value) -> (u64, u64) {
    if let Some(ids) = body["prompt"].as_array() {
        let ids: Vec<u32> = ids
            .iter()
            .filter_map(Value::as_u64)
            .map(|id| id as u32)
            .collect();
        return (ids.len() as u64, prompt_key(&ids));
    }
    let text = body["prompt"]
        .as_str()
        .or_else(|| body["messages"][0]["content"].as_str())
        .unwrap_or("");
    (text.split_whitespace().count() as u64, prompt_key(&[]))
}

/// One SSE event as one HTTP chunk.
fn event(data: &str) -> Vec<u8> {
    let payload = format!("data: {data}\n\n");
    let mut frame = format!("{:x}\r\n", payload.len()).into_bytes();
    frame.extend_from_slice(payload.as_bytes());
    frame.extend_from_slice(b"\r\n");
    frame
}

fn raw_chunk(payload: &[u8]) -> Vec<u8> {
    let mut frame = format!("{:x}\r\n", payload.len()).into_bytes();
    frame.extend_from_slice(payload);
    frame.extend_from_slice(b"\r\n");
    frame
}

const STREAM_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";
/// The longest a stalled answer waits before it gives up (a bound for tests that forget it).
const STALL: StdDuration = StdDuration::from_secs(300);

/// Writes the head, the token chunks (at once or paced), then the usage chunk and `[DONE]`,
/// applying `fault`. `Ok(false)` when the connection must close.
async fn stream_answer(
    stream: &mut TcpStream,
    answer: &Answer,
    fault: Option<Fault>,
    shared: &Shared,
) -> io::Result<bool> {
    let mut out = Writer::new(stream, shared);
    out.push(STREAM_HEAD);
    if let Some(first) = &answer.first_event {
        out.push(first);
    }
    if let Some(wait) = answer.first_token_wait {
        out.flush().await?;
        tokio::time::sleep(wait).await;
        out.restart_pacing();
    }
    for index in 0..answer.tokens {
        match fault {
            Some(Fault::CloseAfter(after)) if after == index => return out.close().await,
            Some(Fault::StallAfter(after)) if after == index => return out.stall().await,
            Some(Fault::BadLineAfter(after)) if after == index => {
                out.push(&raw_chunk(b"this is not a server-sent event\n\n"));
            }
            Some(Fault::ErrorEventAfter(after)) if after == index => {
                out.push(&event(
                    r#"{"error":{"object":"error","message":"injected error event","code":500}}"#,
                ));
            }
            _ => {}
        }
        answer.write_token(index, &mut out.buffer);
        out.token(index).await?;
    }
    if let Some(usage) = &answer.usage_event {
        out.push(usage);
    }
    if fault != Some(Fault::NoDone) {
        out.push(&event("[DONE]"));
    }
    out.push(LAST_CHUNK);
    out.flush().await?;
    shared
        .stats
        .token_chunks
        .fetch_add(answer.tokens as u64, Ordering::SeqCst);
    out.log(answer.prompt_key);
    Ok(true)
}

/// Buffers an answer and writes it at once, or each token chunk on its own when paced.
struct Writer<'a> {
    stream: &'a mut TcpStream,
    shared: &'a Shared,
    buffer: Vec<u8>,
    start: tokio::time::Instant,
    send_times: Vec<Timestamp>,
}

impl<'a> Writer<'a> {
    fn new(stream: &'a mut TcpStream, shared: &'a Shared) -> Self {
        Self {
            stream,
            shared,
            buffer: Vec::with_capacity(64 << 10),
            start: tokio::time::Instant::now(),
            send_times: Vec::new(),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// Paced chunks are due from now on (after a first-token wait).
    fn restart_pacing(&mut self) {
        self.start = tokio::time::Instant::now();
    }

    /// A token chunk was appended to the buffer: stamp it, and write it when paced.
    async fn token(&mut self, index: usize) -> io::Result<()> {
        let Some(interval) = self.shared.options.chunk_interval else {
            self.stamp();
            return Ok(());
        };
        let due = self.start + interval * u32::try_from(index).unwrap_or(u32::MAX);
        tokio::time::sleep_until(due).await;
        self.stamp();
        self.flush().await
    }

    fn stamp(&mut self) {
        if let Some(origin) = self.shared.options.send_log_origin {
            let nanos = i64::try_from(origin.elapsed().as_nanos()).unwrap_or(i64::MAX);
            self.send_times.push(Timestamp::from_nanos(nanos));
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        if !self.buffer.is_empty() {
            self.stream.write_all(&self.buffer).await?;
            self.buffer.clear();
        }
        Ok(())
    }

    async fn close(mut self) -> io::Result<bool> {
        self.flush().await?;
        self.stream.shutdown().await?;
        Ok(false)
    }

    async fn stall(mut self) -> io::Result<bool> {
        self.flush().await?;
        tokio::time::sleep(STALL).await;
        Ok(false)
    }

    fn log(self, prompt_key: u64) {
        if self.shared.options.send_log_origin.is_some() {
            let mut log = self
                .shared
                .log
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            log.push(SendLog {
                prompt_key,
                send_times: self.send_times,
            });
        }
    }
}
