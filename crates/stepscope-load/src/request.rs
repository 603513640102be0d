//! One streamed request: send it on a kept-alive connection, check the status, feed the
//! body bytes of every socket read to the SSE recorder with the time the read returned, and
//! classify whatever goes wrong. One timer bounds the whole request.

use crate::clock::Clock;
use crate::http1::{BodyDecoder, Connection, HeadError, Http1Client, ResponseHead, Step};
use crate::quote::{quote, quote_text};
use crate::record::{FailureKind, RequestError, RequestRecord};
use crate::sse::{Captured, StreamRecorder};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration as StdDuration;
use stepscope_model::Timestamp;
use tokio::sync::Notify;
use tokio::time::{Instant, timeout_at};

/// What every request of a run shares.
#[derive(Debug)]
pub(crate) struct RequestContext<'a, C> {
    pub(crate) client: &'a Http1Client,
    pub(crate) clock: &'a C,
    pub(crate) timeout: StdDuration,
    pub(crate) output_len: usize,
    pub(crate) cancel: &'a Cancel,
    /// Token chunks streamed by every request so far (live, for step counting).
    pub(crate) streamed: &'a std::sync::atomic::AtomicU64,
}

/// Tells every request in flight to end at once, keeping what it streamed so far.
#[derive(Debug, Default)]
pub(crate) struct Cancel {
    cancelled: AtomicBool,
    notify: Notify,
}

impl Cancel {
    /// Ends the requests in flight (and any started later) as cancelled.
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    async fn cancelled(&self) {
        // Created before the check, so a `cancel` between the two still wakes it.
        let notified = self.notify.notified();
        if self.cancelled.load(Ordering::SeqCst) {
            return;
        }
        notified.await;
    }
}

/// Sends request `index` with `body` and returns its record; `prompt_tokens` is the prompt's
/// length as sent. When the context's [`Cancel`] fires, it ends at once as cancelled, with
/// the TTFT, gaps and tokens it had received.
pub(crate) async fn send_request<C: Clock>(
    context: &RequestContext<'_, C>,
    index: usize,
    body: Vec<u8>,
    prompt_tokens: u64,
) -> RequestRecord {
    let request = context.client.request(&body);
    drop(body);
    let recorder = StreamRecorder::new(context.clock.now(), context.output_len);
    send_with(context, index, &request, prompt_tokens, recorder)
        .await
        .0
}

/// [`send_request`], keeping the answer's text and token ids too.
pub(crate) async fn send_capturing<C: Clock>(
    context: &RequestContext<'_, C>,
    index: usize,
    body: &[u8],
    prompt_tokens: u64,
) -> (RequestRecord, Option<Captured>) {
    let request = context.client.request(body);
    let recorder = StreamRecorder::new(context.clock.now(), context.output_len).capturing();
    send_with(context, index, &request, prompt_tokens, recorder).await
}

/// Sends `request` (its clock started with `recorder`), streaming into the recorder.
async fn send_with<C: Clock>(
    context: &RequestContext<'_, C>,
    index: usize,
    request: &[u8],
    prompt_tokens: u64,
    mut recorder: StreamRecorder,
) -> (RequestRecord, Option<Captured>) {
    let deadline = Instant::now() + context.timeout;
    let outcome = tokio::select! {
        biased;
        () = context.cancel.cancelled() => Err(cancelled(recorder.token_chunks())),
        streamed = timeout_at(deadline, stream(context, request, &mut recorder)) => match streamed {
            Ok(outcome) => outcome.and_then(|()| completion(&recorder)),
            Err(_) => Err(timed_out(context.timeout, recorder.token_chunks())),
        },
    };
    let captured = recorder.take_captured();
    let record = recorder.into_record(index, prompt_tokens, outcome, context.clock.now());
    (record, captured)
}

async fn stream<C: Clock>(
    context: &RequestContext<'_, C>,
    request: &[u8],
    recorder: &mut StreamRecorder,
) -> Result<(), RequestError> {
    let (mut connection, head) = open(context.client, request).await?;
    if !(200..300).contains(&head.status) {
        return Err(status_failure(connection, &head).await);
    }
    let mut decoder = BodyDecoder::new(head.body);
    // Body bytes that came with the head arrived when the head did.
    let mut arrived = context.clock.now();
    loop {
        let chunks = recorder.token_chunks();
        let ended = feed_buffered(&mut connection, &mut decoder, recorder, arrived);
        context
            .streamed
            .fetch_add(recorder.token_chunks() - chunks, Ordering::Relaxed);
        if ended? {
            recorder.finish(arrived)?;
            if head.keep_alive {
                context.client.release(connection);
            }
            return Ok(());
        }
        let read = connection.read_more().await;
        arrived = context.clock.now();
        match read {
            Ok(0) if decoder.ends_at_close() => return recorder.finish(arrived),
            Ok(0) => return Err(closed(recorder, "the server closed the connection")),
            Ok(_) => {}
            Err(error) => return Err(closed(recorder, &error.to_string())),
        }
    }
}

/// Feeds the buffered body bytes, read at `arrived`, to the recorder; `true` at the end of
/// the body.
fn feed_buffered(
    connection: &mut Connection,
    decoder: &mut BodyDecoder,
    recorder: &mut StreamRecorder,
    arrived: Timestamp,
) -> Result<bool, RequestError> {
    let input = connection.buffered();
    let mut position = 0;
    let outcome = loop {
        match decoder.step(input, &mut position) {
            Ok(Step::Data { start, len }) => {
                if let Err(error) = recorder.feed(&input[start..start + len], arrived) {
                    break Err(error);
                }
            }
            Ok(Step::NeedMore) => break Ok(false),
            Ok(Step::End) => break Ok(true),
            Err(problem) => break Err(bad_response(&problem)),
        }
    };
    connection.consume(position);
    outcome
}

/// Sends on a kept-alive connection, or on a new one; a kept one the server closed while it
/// was idle (its keep-alive timeout) fails before any response byte and is replaced once.
async fn open(
    client: &Http1Client,
    request: &[u8],
) -> Result<(Connection, ResponseHead), RequestError> {
    if let Some(mut connection) = client.idle_connection() {
        if connection.send(request).await.is_ok() {
            match connection.read_head().await {
                Ok(Some(head)) => return Ok((connection, head)),
                Err(HeadError::Invalid(problem)) => return Err(bad_response(&problem)),
                Ok(None) | Err(HeadError::Io(_)) => {}
            }
        }
    }
    let mut connection = client.connect().await.map_err(|error| {
        RequestError::new(
            FailureKind::Connect,
            format!("failed to connect to {}: {error}", client.endpoint()),
        )
    })?;
    let before_response = |detail: String| {
        RequestError::new(
            FailureKind::ClosedStream,
            format!("the connection broke before the response: {detail}"),
        )
    };
    connection
        .send(request)
        .await
        .map_err(|error| before_response(error.to_string()))?;
    match connection.read_head().await {
        Ok(Some(head)) => Ok((connection, head)),
        Ok(None) => Err(before_response("the server closed it".to_owned())),
        Err(HeadError::Io(error)) => Err(before_response(error.to_string())),
        Err(HeadError::Invalid(problem)) => Err(bad_response(&problem)),
    }
}

/// A stream that ended cleanly is complete only with `[DONE]` and at least one token chunk.
fn completion(recorder: &StreamRecorder) -> Result<(), RequestError> {
    if !recorder.is_done() {
        return Err(RequestError::new(
            FailureKind::ClosedStream,
            format!(
                "the stream ended after {} token chunks without `data: [DONE]`",
                recorder.token_chunks()
            ),
        ));
    }
    if recorder.token_chunks() == 0 {
        return Err(RequestError::new(
            FailureKind::NoTokens,
            "the stream ended with `[DONE]` before any token chunk",
        ));
    }
    Ok(())
}

fn timed_out(timeout: StdDuration, token_chunks: u64) -> RequestError {
    let when = if token_chunks == 0 {
        "before the first token chunk".to_owned()
    } else {
        format!("after {token_chunks} token chunks")
    };
    RequestError::new(
        FailureKind::Timeout,
        format!(
            "no complete response within {} s, {when}",
            timeout.as_secs_f64()
        ),
    )
}

fn cancelled(token_chunks: u64) -> RequestError {
    RequestError::new(
        FailureKind::Cancelled,
        format!("in flight when the run was stopped, after {token_chunks} token chunks"),
    )
}

fn closed(recorder: &StreamRecorder, cause: &str) -> RequestError {
    RequestError::new(
        FailureKind::ClosedStream,
        format!(
            "the stream broke after {} token chunks: {cause}",
            recorder.token_chunks()
        ),
    )
}

fn bad_response(problem: &str) -> RequestError {
    RequestError::new(
        FailureKind::BadResponse,
        format!("the response is not HTTP/1.1: {problem}"),
    )
}

/// The status and the first 200 bytes of the body.
async fn status_failure(mut connection: Connection, head: &ResponseHead) -> RequestError {
    let mut decoder = BodyDecoder::new(head.body);
    let mut body = Vec::new();
    'read: while body.len() < 200 {
        let input = connection.buffered();
        let mut position = 0;
        loop {
            match decoder.step(input, &mut position) {
                Ok(Step::Data { start, len }) => body.extend_from_slice(&input[start..start + len]),
                Ok(Step::NeedMore) => break,
                Ok(Step::End) | Err(_) => break 'read,
            }
        }
        connection.consume(position);
        if !matches!(connection.read_more().await, Ok(read) if read > 0) {
            break;
        }
    }
    RequestError {
        kind: FailureKind::HttpStatus,
        detail: format!(
            "HTTP {} {}: {}",
            head.status,
            quote_text(&head.reason),
            quote(&body)
        ),
        status: Some(head.status),
    }
}
