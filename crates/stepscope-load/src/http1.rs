//! A minimal HTTP/1.1 client for one thing: POST a JSON body and read a streamed response,
//! handing the body bytes of each socket read to the caller at once, so thousands of
//! server-sent events per read cost one wakeup and one timestamp, not one each.
//!
//! Why not reqwest/hyper: their response body passes every HTTP chunk (one SSE event from
//! vLLM or SGLang) through a channel between the connection task and the reader, with two
//! task wakeups per event; that capped the client at ~0.9 M tokens/s on one core, below the
//! 10× margin over `vllm bench serve` the load generator is held to (docs/performance.md,
//! "The load generator's client"). OpenAI-compatible servers (uvicorn, SGLang, ATOM) speak
//! plain HTTP/1.1 with chunked transfer encoding, which is all this client implements: no
//! TLS, no HTTP/2, no redirects, no proxies. Connections are kept alive and reused.

use crate::quote::{quote, quote_text};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where requests go: `http://host:port/path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// TCP port (80 when the URL names none).
    pub port: u16,
    /// Path, starting with `/`.
    pub path: String,
}

impl Endpoint {
    /// Parses `http://host[:port][/path]`; the error says what is wrong.
    pub fn parse(url: &str) -> Result<Self, String> {
        let Some(rest) = url.strip_prefix("http://") else {
            return Err(match url.split_once("://") {
                Some((scheme, _)) => {
                    format!("uses `{scheme}`; only `http` is supported (no TLS client is built in)")
                }
                None => "does not start with `http://`".to_owned(),
            });
        };
        let (authority, path) = rest
            .find(['/', '?'])
            .map_or((rest, ""), |i| rest.split_at(i));
        if authority.contains('@') || path.contains('?') || path.contains('#') {
            return Err(
                "has credentials, a query or a fragment; give only host, port and path".to_owned(),
            );
        }
        let (host, port) = split_authority(authority)?;
        Ok(Self {
            host: host.to_owned(),
            port,
            path: if path.is_empty() {
                "/".to_owned()
            } else {
                path.to_owned()
            },
        })
    }

    /// The `Host` header value.
    pub(crate) fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// `url` with any credentials (`user:password@`) replaced by `***@`, for messages and files:
/// a secret given in a URL is never echoed or saved.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rfind('@') {
        Some(at) => format!("{scheme}://***@{}{tail}", &authority[at + 1..]),
        None => url.to_owned(),
    }
}

/// Whether `url` carries credentials (`user:password@host`).
pub fn has_credentials(url: &str) -> bool {
    redact_url(url) != url
}

fn split_authority(authority: &str) -> Result<(&str, u16), String> {
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').ok_or("has an unclosed `[`")?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("has no host".to_owned());
    }
    let port = match port {
        Some(port) => port
            .parse()
            .map_err(|_| format!("has a bad port `{port}`"))?,
        None => 80,
    };
    Ok((host, port))
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.path)
    }
}

/// Bytes read per `read` call at most; also the most a connection buffers.
const READ_BYTES: usize = 64 << 10;
/// A response head or a chunk-size line longer than this is not HTTP from a server.
const MAX_LINE_BYTES: usize = 32 << 10;

/// A pool of keep-alive connections to one endpoint.
#[derive(Debug)]
pub(crate) struct Http1Client {
    endpoint: Endpoint,
    addresses: Vec<SocketAddr>,
    request_head: String,
    idle: Mutex<Vec<Connection>>,
    max_idle: usize,
}

impl Http1Client {
    /// Resolves the endpoint's host once; keeps up to `max_idle` idle connections.
    pub(crate) async fn new(endpoint: &Endpoint, max_idle: usize) -> io::Result<Self> {
        let addresses: Vec<SocketAddr> =
            tokio::net::lookup_host((endpoint.host.as_str(), endpoint.port))
                .await?
                .collect();
        let request_head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: stepscope/{}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n",
            endpoint.path,
            endpoint.authority(),
            env!("CARGO_PKG_VERSION")
        );
        Ok(Self {
            endpoint: endpoint.clone(),
            addresses,
            request_head,
            idle: Mutex::new(Vec::new()),
            max_idle,
        })
    }

    /// Where requests go.
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The request bytes for `body`.
    pub(crate) fn request(&self, body: &[u8]) -> Vec<u8> {
        let mut request = Vec::with_capacity(self.request_head.len() + body.len() + 32);
        request.extend_from_slice(self.request_head.as_bytes());
        request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        request.extend_from_slice(body);
        request
    }

    /// An idle connection, if one is kept.
    pub(crate) fn idle_connection(&self) -> Option<Connection> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    /// A new connection.
    pub(crate) async fn connect(&self) -> io::Result<Connection> {
        let mut last_error =
            io::Error::new(io::ErrorKind::NotFound, "the host resolved to no address");
        for address in &self.addresses {
            match TcpStream::connect(address).await {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(Connection::new(stream));
                }
                Err(error) => last_error = error,
            }
        }
        Err(last_error)
    }

    /// Keeps a connection whose response was read to its end.
    pub(crate) fn release(&self, mut connection: Connection) {
        if connection.start != connection.end {
            return; // bytes after the response: not a clean connection
        }
        connection.start = 0;
        connection.end = 0;
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < self.max_idle {
            idle.push(connection);
        }
    }
}

/// One TCP connection with its read buffer.
#[derive(Debug)]
pub(crate) struct Connection {
    stream: TcpStream,
    buffer: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Connection {
    fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            buffer: vec![0u8; READ_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    /// Writes a whole request.
    pub(crate) async fn send(&mut self, request: &[u8]) -> io::Result<()> {
        self.stream.write_all(request).await
    }

    /// Bytes read and not consumed yet.
    pub(crate) fn buffered(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }

    /// Marks `count` buffered bytes as consumed.
    pub(crate) fn consume(&mut self, count: usize) {
        self.start += count;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads once more; `Ok(0)` at the end of the connection. Unconsumed bytes move to the
    /// front first; fails when they fill the buffer (a line no server writes).
    pub(crate) async fn read_more(&mut self) -> io::Result<usize> {
        if self.end == self.buffer.len() {
            if self.start == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a line fills the read buffer",
                ));
            }
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let read = self.stream.read(&mut self.buffer[self.end..]).await?;
        self.end += read;
        Ok(read)
    }

    /// Reads the response head (skipping `1xx` heads). `Ok(None)`: the connection ended
    /// before any byte of it.
    pub(crate) async fn read_head(&mut self) -> Result<Option<ResponseHead>, HeadError> {
        loop {
            let head_end = loop {
                if let Some(end) = memchr::memmem::find(self.buffered(), b"\r\n\r\n") {
                    break end;
                }
                if self.buffered().len() > MAX_LINE_BYTES {
                    return Err(HeadError::Invalid(
                        "the response head is too long".to_owned(),
                    ));
                }
                if self.read_more().await.map_err(HeadError::Io)? == 0 {
                    return match self.buffered().is_empty() {
                        true => Ok(None),
                        false => Err(HeadError::Invalid(
                            "the connection ended inside the response head".to_owned(),
                        )),
                    };
                }
            };
            let head =
                ResponseHead::parse(&self.buffered()[..head_end]).map_err(HeadError::Invalid)?;
            self.consume(head_end + 4);
            if !(100..200).contains(&head.status) {
                return Ok(Some(head));
            }
        }
    }
}

/// Why a response head could not be read.
#[derive(Debug)]
pub(crate) enum HeadError {
    /// The socket failed.
    Io(io::Error),
    /// The bytes are not an HTTP/1.x response head.
    Invalid(String),
}

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// `Content-Length`.
    Length(u64),
    /// Until the server closes the connection.
    UntilClose,
}

/// Status line and the headers that matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResponseHead {
    pub(crate) status: u16,
    pub(crate) reason: String,
    pub(crate) body: BodyKind,
    pub(crate) keep_alive: bool,
}

impl ResponseHead {
    /// Parses a head without its final blank line.
    pub(crate) fn parse(head: &[u8]) -> Result<Self, String> {
        let text =
            std::str::from_utf8(head).map_err(|_| "the response head is not UTF-8".to_owned())?;
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default();
        let status = parts.next().and_then(|code| code.parse::<u16>().ok());
        let (Some(status), true) = (status, version.starts_with("HTTP/1.")) else {
            return Err(format!(
                "`{}` is not an HTTP/1.x status line",
                quote_text(status_line)
            ));
        };
        let mut head = Self {
            status,
            reason: parts.next().unwrap_or_default().to_owned(),
            body: BodyKind::UntilClose,
            keep_alive: version != "HTTP/1.0",
        };
        let mut length = None;
        for line in lines {
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| format!("header line `{}` has no colon", quote_text(line)))?;
            let value = value.trim();
            if name.eq_ignore_ascii_case("transfer-encoding") {
                if value.to_ascii_lowercase().contains("chunked") {
                    head.body = BodyKind::Chunked;
                }
            } else if name.eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .parse::<u64>()
                        .map_err(|_| format!("bad content-length `{}`", quote_text(value)))?,
                );
            } else if name.eq_ignore_ascii_case("connection") {
                let value = value.to_ascii_lowercase();
                head.keep_alive =
                    (head.keep_alive || value.contains("keep-alive")) && !value.contains("close");
            }
        }
        if head.body != BodyKind::Chunked {
            head.body = match (status, length) {
                (204 | 304, _) => BodyKind::Length(0),
                (_, Some(length)) => BodyKind::Length(length),
                (_, None) => BodyKind::UntilClose,
            };
        }
        if head.body == BodyKind::UntilClose {
            head.keep_alive = false;
        }
        Ok(head)
    }
}

/// One step of decoding a body from buffered bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Body bytes at `input[start..start + len]`.
    Data { start: usize, len: usize },
    /// The buffered bytes hold no more body: read more.
    NeedMore,
    /// The body is complete.
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    Size,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

/// Decodes a chunked, length-delimited or close-delimited body incrementally.
#[derive(Debug)]
pub(crate) struct BodyDecoder {
    kind: BodyKind,
    state: ChunkState,
    remaining: u64,
}

impl BodyDecoder {
    pub(crate) fn new(kind: BodyKind) -> Self {
        let remaining = match kind {
            BodyKind::Length(length) => length,
            _ => 0,
        };
        Self {
            kind,
            state: ChunkState::Size,
            remaining,
        }
    }

    /// Whether the server closing the connection ends this body properly.
    pub(crate) fn ends_at_close(&self) -> bool {
        self.kind == BodyKind::UntilClose
    }

    /// The next step from `input[*position..]`, advancing `position` past what it used.
    pub(crate) fn step(&mut self, input: &[u8], position: &mut usize) -> Result<Step, String> {
        let available = input.len() - *position;
        match self.kind {
            BodyKind::UntilClose if available == 0 => Ok(Step::NeedMore),
            BodyKind::UntilClose => Ok(self.take(position, available)),
            BodyKind::Length(_) if self.remaining == 0 => Ok(Step::End),
            BodyKind::Length(_) if available == 0 => Ok(Step::NeedMore),
            BodyKind::Length(_) => {
                let len = self.remaining.min(available as u64) as usize;
                self.remaining -= len as u64;
                Ok(self.take(position, len))
            }
            BodyKind::Chunked => self.chunked_step(input, position),
        }
    }

    fn take(&self, position: &mut usize, len: usize) -> Step {
        let start = *position;
        *position += len;
        Step::Data { start, len }
    }

    fn chunked_step(&mut self, input: &[u8], position: &mut usize) -> Result<Step, String> {
        loop {
            let rest = &input[*position..];
            match self.state {
                ChunkState::Done => return Ok(Step::End),
                ChunkState::Data(remaining) => {
                    if rest.is_empty() {
                        return Ok(Step::NeedMore);
                    }
                    let len = remaining.min(rest.len() as u64) as usize;
                    let left = remaining - len as u64;
                    self.state = if left == 0 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left)
                    };
                    return Ok(self.take(position, len));
                }
                ChunkState::DataEnd => {
                    if rest.len() < 2 {
                        return Ok(Step::NeedMore);
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err("a chunk does not end with CRLF".to_owned());
                    }
                    *position += 2;
                    self.state = ChunkState::Size;
                }
                ChunkState::Size | ChunkState::Trailers => {
                    let Some(newline) = memchr::memchr(b'\n', rest) else {
                        if rest.len() > MAX_LINE_BYTES {
                            return Err("a chunk-size line is too long".to_owned());
                        }
                        return Ok(Step::NeedMore);
                    };
                    let line = rest[..newline]
                        .strip_suffix(b"\r")
                        .unwrap_or(&rest[..newline]);
                    *position += newline + 1;
                    self.state = self.after_line(line)?;
                }
            }
        }
    }

    /// The state after a chunk-size or trailer line.
    fn after_line(&self, line: &[u8]) -> Result<ChunkState, String> {
        if self.state == ChunkState::Trailers {
            return Ok(if line.is_empty() {
                ChunkState::Done
            } else {
                ChunkState::Trailers
            });
        }
        let digits = line.split(|&byte| byte == b';').next().unwrap_or_default();
        let text = std::str::from_utf8(digits).unwrap_or_default().trim();
        let size = u64::from_str_radix(text, 16)
            .map_err(|_| format!("`{}` is not a chunk size", quote(line)))?;
        Ok(if size == 0 {
            ChunkState::Trailers
        } else {
            ChunkState::Data(size)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted_wherever_they_stand() {
        assert_eq!(
            redact_url("http://user:hunter2@host:8000/v1"),
            "http://***@host:8000/v1"
        );
        assert_eq!(redact_url("http://a@b@host/x?y=@"), "http://***@host/x?y=@");
        assert_eq!(redact_url("http://host:8000/v1@x"), "http://host:8000/v1@x");
        assert!(has_credentials("http://token@host"));
        assert!(!has_credentials("http://host:8000"));
        assert!(!has_credentials("not a url"));
    }

    #[test]
    fn parses_endpoints() {
        let endpoint = Endpoint::parse("http://127.0.0.1:8000/v1/completions").unwrap();
        assert_eq!(
            (
                endpoint.host.as_str(),
                endpoint.port,
                endpoint.path.as_str()
            ),
            ("127.0.0.1", 8000, "/v1/completions")
        );
        assert_eq!(endpoint.to_string(), "http://127.0.0.1:8000/v1/completions");
        let endpoint = Endpoint::parse("http://[::1]:9000").unwrap();
        assert_eq!(
            (
                endpoint.host.as_str(),
                endpoint.port,
                endpoint.path.as_str()
            ),
            ("::1", 9000, "/")
        );
        assert_eq!(endpoint.to_string(), "http://[::1]:9000/");
        assert_eq!(Endpoint::parse("http://localhost/x").unwrap().port, 80);
        assert!(
            Endpoint::parse("https://a")
                .unwrap_err()
                .contains("only `http`")
        );
        assert!(Endpoint::parse("127.0.0.1:8000").is_err());
        assert!(Endpoint::parse("http://:80").is_err());
        assert!(Endpoint::parse("http://a:port").is_err());
        assert!(Endpoint::parse("http://a/b?c=d").is_err());
    }

    #[test]
    fn parses_response_heads() {
        let head = ResponseHead::parse(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked",
        )
        .unwrap();
        assert_eq!(
            (head.status, head.body, head.keep_alive),
            (200, BodyKind::Chunked, true)
        );
        let head = ResponseHead::parse(
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 12\r\nconnection: close",
        )
        .unwrap();
        assert_eq!(
            (head.status, head.body, head.keep_alive),
            (500, BodyKind::Length(12), false)
        );
        assert_eq!(head.reason, "Internal Server Error");
        let head = ResponseHead::parse(b"HTTP/1.0 200 OK").unwrap();
        assert_eq!((head.body, head.keep_alive), (BodyKind::UntilClose, false));
        assert!(ResponseHead::parse(b"SSH-2.0-OpenSSH").is_err());
        assert!(ResponseHead::parse(b"HTTP/1.1 200 OK\r\nbroken").is_err());
    }

    /// Decodes `input` fed in pieces of `piece` bytes, as reads would deliver it.
    fn decode_in_pieces(kind: BodyKind, input: &[u8], piece: usize) -> (Vec<u8>, bool) {
        let mut decoder = BodyDecoder::new(kind);
        let (mut body, mut buffer, mut fed) = (Vec::new(), Vec::new(), 0);
        loop {
            let mut position = 0;
            loop {
                match decoder.step(&buffer, &mut position).unwrap() {
                    Step::Data { start, len } => {
                        body.extend_from_slice(&buffer[start..start + len])
                    }
                    Step::NeedMore => break,
                    Step::End => return (body, true),
                }
            }
            buffer.drain(..position);
            if fed == input.len() {
                return (body, false);
            }
            let next = (fed + piece).min(input.len());
            buffer.extend_from_slice(&input[fed..next]);
            fed = next;
        }
    }

    #[test]
    fn decodes_chunked_bodies_split_anywhere() {
        let input = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n";
        for piece in 1..input.len() {
            assert_eq!(
                decode_in_pieces(BodyKind::Chunked, input, piece),
                (b"hello, world".to_vec(), true),
                "pieces of {piece}"
            );
        }
        let mut decoder = BodyDecoder::new(BodyKind::Chunked);
        assert!(decoder.step(b"zz\r\n", &mut 0).is_err());
        let mut decoder = BodyDecoder::new(BodyKind::Chunked);
        let mut position = 0;
        assert_eq!(
            decoder.step(b"2\r\nabXY", &mut position),
            Ok(Step::Data { start: 3, len: 2 })
        );
        assert!(
            decoder.step(b"2\r\nabXY", &mut position).is_err(),
            "no CRLF after the data"
        );
    }

    #[test]
    fn decodes_length_and_close_delimited_bodies() {
        assert_eq!(
            decode_in_pieces(BodyKind::Length(5), b"hello", 2),
            (b"hello".to_vec(), true)
        );
        assert_eq!(
            decode_in_pieces(BodyKind::Length(0), b"", 1),
            (Vec::new(), true)
        );
        assert_eq!(
            decode_in_pieces(BodyKind::UntilClose, b"abc", 2),
            (b"abc".to_vec(), false)
        );
    }
}
