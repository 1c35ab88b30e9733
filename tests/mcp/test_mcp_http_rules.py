"""SPEC §12.1 rules of the Streamable HTTP transport, against a recording fake endpoint
(tests/mcp/fake_http.py). Interop with the real SDK server is in test_mcp_sdk.py."""

from __future__ import annotations

import threading
import time

import pytest

from phi.mcp import (
    McpClient,
    McpConnectionError,
    McpHttpError,
    McpProtocolError,
)

from .conftest import free_port, mcp_threads, wait_until
from .fake_http import FakeHttpMcp

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def fake():
    servers: list[FakeHttpMcp] = []

    def make(**options) -> FakeHttpMcp:
        servers.append(FakeHttpMcp(**options))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


@pytest.mark.parametrize("sse", [False, True])
def test_posts_carry_content_type_accept_session_and_version(fake, sse):
    """MCP-12, MCP-13: every POST has both Accept types; after initialize the session id and exactly
    the negotiated version (here the server's counter-offer 2025-06-18) go with every request."""
    server = fake(sse=sse, version="2025-06-18")
    with McpClient.connect_http(server.url, timeout=10, listen=False) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        session = client._transport.session_id  # type: ignore[attr-defined]
    posts = server.posts()
    assert [p["body"].get("method") for p in posts[:3]] == ["initialize", "notifications/initialized", "tools/call"]
    for post in posts:
        assert post["headers"]["Content-Type"] == "application/json"
        assert post["headers"]["Accept"] == "application/json, text/event-stream"
    init, later = posts[0], posts[1:]
    assert "Mcp-Session-Id" not in init["headers"] and "MCP-Protocol-Version" not in init["headers"]
    assert later and all(p["headers"]["Mcp-Session-Id"] == session for p in later)
    assert all(p["headers"]["MCP-Protocol-Version"] == "2025-06-18" for p in later)


def test_sse_reply_server_requests_answered_and_reading_stops_at_the_response(fake):
    """MCP-12: an SSE reply with a priming event, a comment, a ping (id 0) and a notification before
    the response; the ping is answered by POST; the call returns although the stream stays open."""
    server = fake(sse=True)
    server.keep_open = 30.0
    with McpClient.connect_http(server.url, timeout=10, listen=False) as client:
        version = client.tools_version
        started = time.monotonic()
        assert client.call_tool("echo", {"text": "streamed"}).text == "streamed"
        assert time.monotonic() - started < 10
        assert client.tools_version == version + 1
        wait_until(lambda: any(p["body"].get("id") == 0 and "result" in p["body"] for p in server.posts()),
                   10, "the ping reply")
    reply = next(p["body"] for p in server.posts() if p["body"].get("id") == 0 and "result" in p["body"])
    assert reply == {"jsonrpc": "2.0", "id": 0, "result": {}}


def test_stateless_server_gets_no_session_header(fake):
    """MCP-13: no session id from the server → none is sent; the version header still is."""
    server = fake(stateless=True)
    with McpClient.connect_http(server.url, timeout=10) as client:
        client.call_tool("echo", {"text": "x"})
    for post in server.posts():
        assert "Mcp-Session-Id" not in post["headers"]
    assert "DELETE" not in server.verbs() and "GET" not in server.verbs()


def test_404_reinitializes_once_and_retries(fake):
    """MCP-14: a forgotten session → one new initialize (shared by concurrent callers), each request
    retried once with the new session id."""
    server = fake()
    with McpClient.connect_http(server.url, timeout=10, listen=False) as client:
        old = client._transport.session_id  # type: ignore[attr-defined]
        server.forget()
        results: list[str] = []
        threads = [threading.Thread(target=lambda n=n: results.append(client.call_tool("echo", {"text": str(n)}).text))
                   for n in range(5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert sorted(results) == ["0", "1", "2", "3", "4"]
        new = client._transport.session_id  # type: ignore[attr-defined]
    assert new != old
    inits = server.posts("initialize")
    assert len(inits) == 2 and isinstance(inits[1]["body"]["id"], str)
    assert len(server.posts("notifications/initialized")) == 2


def test_404_every_time_is_an_http_error(fake):
    """MCP-14: the retry happens once; a second 404 is reported, not looped on."""
    server = fake()
    with McpClient.connect_http(server.url, timeout=10, listen=False) as client:
        server.forget_sessions = True
        with pytest.raises(McpHttpError, match="HTTP 404") as caught:
            client.call_tool("echo", {"text": "x"})
    assert caught.value.status == 404
    assert len(server.posts("initialize")) == 2 and len(server.posts("tools/call")) == 1


def test_close_deletes_the_session(fake):
    """MCP-14: close sends DELETE with the session id."""
    server = fake()
    client = McpClient.connect_http(server.url, timeout=10, listen=False)
    session = client._transport.session_id  # type: ignore[attr-defined]
    client.close()
    deletes = [r for r in server.requests if r["verb"] == "DELETE"]
    assert len(deletes) == 1 and deletes[0]["headers"]["Mcp-Session-Id"] == session


def test_get_stream_notifications_and_its_end(fake):
    """MCP-15: a notification on the GET stream is dispatched; close ends the listener."""
    server = fake()
    server.get_stream = [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    before = {t.ident for t in mcp_threads()}
    with McpClient.connect_http(server.url, timeout=10) as client:
        wait_until(lambda: client.tools_version >= 1, 10, "list_changed from the GET stream")
        get = next(r for r in server.requests if r["verb"] == "GET")
        assert get["headers"]["Accept"] == "text/event-stream"
        assert get["headers"]["Mcp-Session-Id"] == client._transport.session_id  # type: ignore[attr-defined]
    wait_until(lambda: not [t for t in mcp_threads() if t.ident not in before], 10, "the listener to end")


def test_get_405_stops_listening(fake):
    """MCP-15: a server without a GET stream is asked once."""
    server = fake()
    with McpClient.connect_http(server.url, timeout=10) as client:
        client.call_tool("echo", {"text": "x"})
        time.sleep(0.3)
    assert server.verbs().count("GET") == 1


def test_http_errors_are_typed_and_scrubbed(fake):
    """MCP-9, MCP-18: an error status is McpHttpError with the status and the server's message; the
    header values sent never appear in it, even when the server echoes them."""
    server = fake()
    server.status = (401, {"Content-Type": "application/json"},
                     b'{"error": {"code": -32001, "message": "bad token Bearer s3cr3t-t0ken"}}')
    with pytest.raises(McpHttpError) as caught:
        McpClient.connect_http(server.url, {"Authorization": "Bearer s3cr3t-t0ken"}, timeout=10)
    error = caught.value
    assert error.status == 401 and "HTTP 401" in str(error) and "check the credentials" in str(error)
    assert "s3cr3t-t0ken" not in str(error) and "s3cr3t-t0ken" not in error.body
    assert "bad token ***" in str(error)


def test_redirects_are_not_followed(fake):
    """MCP-18: a redirect would carry the headers elsewhere; it is reported with the target path."""
    server = fake()
    server.status = (307, {"Location": "http://127.0.0.1:1/elsewhere?key=abc"}, b"")
    with pytest.raises(McpHttpError, match="redirected initialize .*to /elsewhere; use the final URL") as caught:
        McpClient.connect_http(server.url, timeout=10)
    assert "key=abc" not in str(caught.value) and len(server.posts()) == 1


def test_a_reply_that_is_neither_json_nor_sse_is_a_protocol_error(fake):
    server = fake()
    server.status = (200, {"Content-Type": "text/html"}, b"<html>login</html>")
    with pytest.raises(McpProtocolError, match="Content-Type 'text/html'"):
        McpClient.connect_http(server.url, timeout=10)


def test_a_request_answered_with_202_is_a_protocol_error(fake):
    server = fake()
    server.status = (202, {}, b"")
    with pytest.raises(McpProtocolError, match="HTTP 202 and no response"):
        McpClient.connect_http(server.url, timeout=10)


def test_connection_refused_is_a_connection_error():
    """MCP-9: nothing listening → McpConnectionError, at once."""
    with pytest.raises(McpConnectionError, match="cannot reach MCP server http://127.0.0.1:"):
        McpClient.connect_http(f"http://127.0.0.1:{free_port()}/mcp", timeout=5)


def test_http_timeout_and_repr_hide_headers(fake):
    """MCP-4, MCP-18: an HTTP request has the same timeout; repr never shows headers."""
    server = fake()
    with McpClient.connect_http(server.url, {"X-Api-Key": "k-123456789"}, timeout=10, listen=False) as client:
        from phi.mcp import McpTimeout

        started = time.monotonic()
        with pytest.raises(McpTimeout, match="did not answer tools/call within 0.3 s"):
            client.call_tool("sleep", {"seconds": 3}, timeout=0.3)
        assert time.monotonic() - started < 2.5
        assert "k-123456789" not in repr(client)
        assert client.call_tool("echo", {"text": "after"}).text == "after"


@pytest.mark.parametrize("sse", [False, True])
def test_a_tool_call_may_outlast_the_request_timeout(fake, sse):
    """MCP-4: a tool call is bounded by call_timeout, not by the shorter timeout of other requests,
    even when the server sends nothing while the tool runs."""
    server = fake(sse=sse)
    with McpClient.connect_http(server.url, timeout=0.5, call_timeout=10, listen=False) as client:
        assert client.call_tool("sleep", {"seconds": 1.5, "text": "slow but fine"}).text == "slow but fine"


def test_connections_are_reused(fake):
    """MCP-12: a connection whose reply (JSON, an ended SSE stream, a 202) was read to its end serves
    the next request; 5 calls, each with a reply to the server's ping, use at most 3 connections."""
    for sse in (False, True):
        server = fake(sse=sse)
        with McpClient.connect_http(server.url, timeout=10, listen=False) as client:
            for n in range(5):
                client.call_tool("echo", {"text": str(n)})
        posts = server.posts()
        assert len(posts) >= 7 and len({post["port"] for post in posts}) <= 3


def test_a_server_that_keeps_reply_streams_open_costs_one_short_wait(fake):
    """MCP-12: a stream left open after the response is closed by the client after a short wait,
    once; later replies are not waited for."""
    server = fake(sse=True)
    server.keep_open = 30.0
    with McpClient.connect_http(server.url, timeout=10, listen=False) as client:
        started = time.monotonic()
        for n in range(5):
            assert client.call_tool("echo", {"text": str(n)}).text == str(n)
        assert time.monotonic() - started < 5
        assert client._transport._await_stream_end is False  # type: ignore[attr-defined]
