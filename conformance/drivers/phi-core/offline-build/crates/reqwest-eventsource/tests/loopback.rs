//! The HTTP path end to end, against a one-shot server on 127.0.0.1 that answers a canned response.

use futures::StreamExt;
use reqwest_eventsource::{Error, Event, EventSource};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serve `response` to the first connection (after reading its request head); return the URL.
async fn serve_once(response: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).await.unwrap() == 1 {
            head.push(byte[0]);
        }
        socket.write_all(response.as_bytes()).await.unwrap();
        socket.shutdown().await.unwrap();
    });
    url
}

#[tokio::test]
async fn opens_yields_messages_then_reports_the_end() {
    let url = serve_once(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
         event: message_start\ndata: {\"x\":1}\n\ndata: [DONE]\n\n",
    )
    .await;
    let mut es = EventSource::new(reqwest::Client::new().post(&url).body("{}")).unwrap();
    assert_eq!(es.next().await.unwrap().unwrap(), Event::Open);
    match es.next().await.unwrap().unwrap() {
        Event::Message(m) => assert_eq!((m.event.as_str(), m.data.as_str()), ("message_start", "{\"x\":1}")),
        other => panic!("expected a message, got {other:?}"),
    }
    match es.next().await.unwrap().unwrap() {
        Event::Message(m) => assert_eq!((m.event.as_str(), m.data.as_str()), ("message", "[DONE]")),
        other => panic!("expected a message, got {other:?}"),
    }
    assert!(matches!(es.next().await, Some(Err(Error::StreamEnded))));
    assert!(es.next().await.is_none());
}

#[tokio::test]
async fn a_failing_status_is_an_error_and_close_ends_the_stream() {
    let url = serve_once("HTTP/1.1 429 Too Many Requests\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
    let mut es = EventSource::new(reqwest::Client::new().get(&url)).unwrap();
    let error = es.next().await.unwrap().unwrap_err();
    assert_eq!(error.to_string(), "Invalid status code: 429 Too Many Requests");
    es.close();
    assert!(es.next().await.is_none());
}
