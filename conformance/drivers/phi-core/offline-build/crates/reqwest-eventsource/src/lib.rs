//! Server-sent events over a reqwest request: the part of reqwest-eventsource 0.6 that phi-core
//! uses, written for Debian's reqwest 0.11.
//!
//! phi-core's HTTP providers call `EventSource::new(request_builder)`, `close()`, and poll it as a
//! `Stream` of `Result<Event, Error>`, matching `Event::Open` and `Event::Message(m)` with
//! `m.event` / `m.data`, and turning errors into strings. That is what this offers. Unlike the
//! original it never reconnects: after an error (including `StreamEnded`, the server closing the
//! body) the stream ends. phi-core stops at the first error anyway, and the conformance driver
//! never opens an HTTP stream (its provider is scripted).

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, Stream, StreamExt};
use reqwest::header::{HeaderValue, CONTENT_TYPE};
use reqwest::{RequestBuilder, StatusCode};

/// `EventSource::new` was given a request that cannot be cloned (a streaming body).
#[derive(Debug, Clone, Copy)]
pub struct CannotCloneRequestError;

impl fmt::Display for CannotCloneRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected a cloneable request")
    }
}

impl std::error::Error for CannotCloneRequestError {}

/// Why the stream stopped.
#[derive(Debug)]
pub enum Error {
    /// A line of the body was not UTF-8.
    Utf8(std::string::FromUtf8Error),
    /// Sending the request or reading the body failed.
    Transport(reqwest::Error),
    /// The response was not `text/event-stream`.
    InvalidContentType(HeaderValue),
    /// The response status was not a success.
    InvalidStatusCode(StatusCode),
    /// The server closed the body.
    StreamEnded,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Utf8(e) => e.fmt(f),
            Error::Transport(e) => e.fmt(f),
            Error::InvalidContentType(v) => write!(f, "Invalid header value: {v:?}"),
            Error::InvalidStatusCode(s) => write!(f, "Invalid status code: {s}"),
            Error::StreamEnded => f.write_str("Stream ended"),
        }
    }
}

impl std::error::Error for Error {}

/// One dispatched server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageEvent {
    /// The `event:` field, `"message"` when the event named none.
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The last `id:` seen on the stream.
    pub id: String,
    /// The last `retry:` in this event, if any.
    pub retry: Option<Duration>,
}

/// What the stream yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The response arrived with a success status and an event-stream body.
    Open,
    /// An event from the body.
    Message(MessageEvent),
}

/// A request whose response body is read as server-sent events.
pub struct EventSource {
    inner: Option<BoxStream<'static, Result<Event, Error>>>,
}

enum State {
    Connect(RequestBuilder),
    Read(BoxStream<'static, reqwest::Result<Bytes>>, Parser),
    Done,
}

impl EventSource {
    /// Wrap a request; nothing is sent until the stream is first polled.
    pub fn new(request: RequestBuilder) -> Result<Self, CannotCloneRequestError> {
        // The original keeps a clone to reconnect with; this one only keeps its refusal.
        if request.try_clone().is_none() {
            return Err(CannotCloneRequestError);
        }
        let stream = futures::stream::unfold(State::Connect(request), step).boxed();
        Ok(EventSource { inner: Some(stream) })
    }

    /// Drop the request or response; the stream yields nothing more.
    pub fn close(&mut self) {
        self.inner = None;
    }
}

impl Stream for EventSource {
    type Item = Result<Event, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.inner.as_mut() {
            Some(stream) => stream.poll_next_unpin(cx),
            None => Poll::Ready(None),
        }
    }
}

async fn step(state: State) -> Option<(Result<Event, Error>, State)> {
    match state {
        State::Done => None,
        State::Connect(request) => Some(match request.send().await {
            Err(e) => (Err(Error::Transport(e)), State::Done),
            Ok(response) => {
                let status = response.status();
                let content_type = response.headers().get(CONTENT_TYPE).cloned();
                let is_events = content_type
                    .as_ref()
                    .and_then(|v| v.to_str().ok())
                    .map(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
                    .unwrap_or(false);
                if !status.is_success() {
                    (Err(Error::InvalidStatusCode(status)), State::Done)
                } else if !is_events {
                    let value = content_type.unwrap_or_else(|| HeaderValue::from_static(""));
                    (Err(Error::InvalidContentType(value)), State::Done)
                } else {
                    (Ok(Event::Open), State::Read(response.bytes_stream().boxed(), Parser::default()))
                }
            }
        }),
        State::Read(mut body, mut parser) => loop {
            match parser.next_event() {
                Err(e) => return Some((Err(Error::Utf8(e)), State::Done)),
                Ok(Some(event)) => return Some((Ok(Event::Message(event)), State::Read(body, parser))),
                Ok(None) => {}
            }
            match body.next().await {
                Some(Ok(chunk)) => parser.feed(&chunk),
                Some(Err(e)) => return Some((Err(Error::Transport(e)), State::Done)),
                None => return Some((Err(Error::StreamEnded), State::Done)),
            }
        },
    }
}

/// The event-stream format (WHATWG HTML, "Server-sent events", parsing an event stream), fed
/// chunk by chunk; lines may end in `\n`, `\r\n` or `\r`, and may be split across chunks.
#[derive(Default)]
struct Parser {
    buffer: Vec<u8>,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: String,
    retry: Option<Duration>,
}

impl Parser {
    fn feed(&mut self, chunk: &[u8]) {
        self.buffer.extend_from_slice(chunk);
    }

    /// The next complete event in what was fed, if any.
    fn next_event(&mut self) -> Result<Option<MessageEvent>, std::string::FromUtf8Error> {
        while let Some(line) = self.take_line()? {
            if let Some(event) = self.process(&line) {
                return Ok(Some(event));
            }
        }
        Ok(None)
    }

    fn take_line(&mut self) -> Result<Option<String>, std::string::FromUtf8Error> {
        if !self.started {
            // A leading byte-order mark is not part of the first field name.
            if self.buffer.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.buffer) {
                return Ok(None);
            }
            if self.buffer.starts_with(b"\xEF\xBB\xBF") {
                self.buffer.drain(..3);
            }
            self.started = true;
        }
        let Some(end) = self.buffer.iter().position(|&b| b == b'\n' || b == b'\r') else {
            return Ok(None);
        };
        let ending = if self.buffer[end] == b'\r' {
            match self.buffer.get(end + 1) {
                // A `\r` at the end of what arrived may be the first half of `\r\n`.
                None => return Ok(None),
                Some(b'\n') => 2,
                Some(_) => 1,
            }
        } else {
            1
        };
        let line: Vec<u8> = self.buffer.drain(..end + ending).take(end).collect();
        String::from_utf8(line).map(Some)
    }

    fn process(&mut self, line: &str) -> Option<MessageEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None; // a comment
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = value.to_string(),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok().map(Duration::from_millis);
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<MessageEvent> {
        let event = std::mem::take(&mut self.event);
        let retry = self.retry.take();
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the `\n` after the last data line
        Some(MessageEvent {
            event: if event.is_empty() { "message".to_string() } else { event },
            data,
            id: self.last_id.clone(),
            retry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Vec<MessageEvent> {
        let mut parser = Parser::default();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk);
            while let Some(event) = parser.next_event().unwrap() {
                out.push(event);
            }
        }
        out
    }

    #[test]
    fn named_and_default_events_with_multiline_data() {
        let got = events(&[b"event: content_block_delta\ndata: {\"a\":1}\n\n: ping\ndata: x\ndata:y\n\n"]);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].event.as_str(), got[0].data.as_str()), ("content_block_delta", "{\"a\":1}"));
        assert_eq!((got[1].event.as_str(), got[1].data.as_str()), ("message", "x\ny"));
    }

    #[test]
    fn lines_split_across_chunks_and_every_line_ending() {
        let got = events(&[b"\xEF\xBB", b"\xBFid: 7\r", b"\ndata: a", b"b\r\r", b"data: [DONE]\n", b"\n"]);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].data.as_str(), got[0].id.as_str()), ("ab", "7"));
        assert_eq!((got[1].data.as_str(), got[1].id.as_str()), ("[DONE]", "7"));
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_retry_is_read() {
        let got = events(&[b"event: nothing\n\nretry: 1500\ndata: d\n\n"]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].event, "message");
        assert_eq!(got[0].retry, Some(Duration::from_millis(1500)));
    }
}
