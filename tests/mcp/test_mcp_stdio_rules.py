"""SPEC §12.1 rules over stdio, against the scriptable fake server (tests/mcp/fake_server.py)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from phi.concurrency.cancel import CancellationToken
from phi.errors import ConfigError
from phi.mcp import (
    LATEST_PROTOCOL_VERSION,
    McpCancelled,
    McpClient,
    McpConnectionClosed,
    McpConnectionError,
    McpProtocolError,
    McpRpcError,
    McpTimeout,
)

from .conftest import fake_cmd, group_gone, mcp_threads, pid_gone, wait_until

pytestmark = pytest.mark.timeout(60)


def connect(mode: str = "serve", log: Path | None = None, **options) -> McpClient:
    command, args = fake_cmd(mode, *([str(log)] if log else []))
    options.setdefault("timeout", 10)
    return McpClient.connect_stdio(command, args, **options)


def received(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_one_message_per_line_and_handshake_order(tmp_path):
    """MCP-1, MCP-5: line-framed JSON; initialize (id 0) offering the latest version, then
    notifications/initialized before any other request."""
    log = tmp_path / "in.jsonl"
    with connect(log=log) as client:
        client.list_tools()
        assert client.protocol_version == LATEST_PROTOCOL_VERSION
        assert client.server_info == {"name": "fake", "version": "1.0"}
    raw = log.read_text(encoding="utf-8")
    assert raw.endswith("\n") and all(json.loads(line) for line in raw.splitlines())
    messages = received(log)
    assert messages[0]["method"] == "initialize" and messages[0]["id"] == 0
    assert messages[0]["params"]["protocolVersion"] == "2025-11-25"
    assert messages[0]["params"]["clientInfo"]["name"] == "phi"
    assert messages[1] == {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_server_requests_are_answered_including_id_0(tmp_path):
    """MCP-2, MCP-3: ping → {}, roots/list → the roots, anything else → -32601; ids (0, "r", 7) echoed."""
    log = tmp_path / "in.jsonl"
    root = tmp_path / "project"
    root.mkdir()
    with connect(log=log, roots=[root]) as client:
        client.list_tools()
        wait_until(lambda: len([m for m in received(log) if "method" not in m]) >= 3, what="three replies")
    replies = {json.dumps(m["id"]): m for m in received(log) if "method" not in m}
    assert replies["0"]["result"] == {}
    assert replies['"r"']["result"] == {"roots": [{"uri": root.resolve().as_uri(), "name": "project"}]}
    assert replies["7"]["error"]["code"] == -32601
    init = received(log)[0]
    assert init["params"]["capabilities"] == {"roots": {"listChanged": False}}


def test_roots_default_to_an_empty_list_and_no_capability(tmp_path):
    """MCP-3: without roots, none are declared and roots/list is answered with an empty list."""
    log = tmp_path / "in.jsonl"
    with connect(log=log) as client:
        client.list_tools()
        wait_until(lambda: any(m.get("id") == "r" for m in received(log)), what="the roots/list reply")
    assert received(log)[0]["params"]["capabilities"] == {}
    assert [m for m in received(log) if m.get("id") == "r"][0]["result"] == {"roots": []}


def test_list_tools_follows_cursors_and_list_changed_bumps_the_version(tmp_path):
    """MCP-2, MCP-8: three pages via nextCursor; the notification sent before the first response
    is dispatched, not taken for a response."""
    log = tmp_path / "in.jsonl"
    with connect(log=log) as client:
        names = [tool.name for tool in client.list_tools()]
        assert names == ["echo", "content", "error", "hang", "die", "rpc", "progress", "late"]
        wait_until(lambda: client.tools_version == 1, what="list_changed")
    cursors = [m.get("params", {}).get("cursor") for m in received(log) if m.get("method") == "tools/list"]
    assert cursors == [None, "p2", "p3"]


def test_a_repeated_cursor_is_a_protocol_error():
    """MCP-8: a server that hands out the same cursor again cannot loop the client forever."""
    with connect() as client:
        original = client._session.request

        def same_page(method, params=None, **kw):
            if method == "tools/list":
                return {"tools": [], "nextCursor": "again"}
            return original(method, params, **kw)

        client._session.request = same_page  # type: ignore[method-assign]
        with pytest.raises(McpProtocolError, match="repeated tools/list cursor"):
            client.list_tools()


def test_unsupported_counter_offer_disconnects():
    """MCP-5: a version outside the supported list is refused and the server is released."""
    before = {t.ident for t in mcp_threads()}
    with pytest.raises(McpProtocolError, match="1999-01-01.*does not support"):
        connect(env={"FAKE_VERSION": "1999-01-01"})
    wait_until(lambda: not [t for t in mcp_threads() if t.ident not in before], what="threads to end")


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_supported_counter_offers_are_accepted(version):
    """MCP-5: every supported version is accepted when the server picks it."""
    with connect(env={"FAKE_VERSION": version}) as client:
        assert client.protocol_version == version
        assert client.call_tool("echo", {"text": "v"}).text == "v"


def test_json_rpc_error_is_typed():
    """MCP-9: an error response becomes McpRpcError with code, message and data."""
    with connect() as client:
        with pytest.raises(McpRpcError) as caught:
            client.call_tool("rpc")
    assert (caught.value.code, caught.value.message, caught.value.data) == (-32001, "nope", [1])
    assert "fake_server.py" in str(caught.value) and "-32001" in str(caught.value)


def test_timeout_returns_and_sends_cancelled(tmp_path):
    """MCP-4: a request that outlives its timeout raises McpTimeout and the server is told."""
    log = tmp_path / "in.jsonl"
    with connect(log=log) as client:
        with pytest.raises(McpTimeout, match="did not answer tools/call within 0.3 s"):
            client.call_tool("hang", timeout=0.3)
        call_id = [m for m in received(log) if m.get("method") == "tools/call"][0]["id"]
        wait_until(lambda: any(m.get("method") == "notifications/cancelled" for m in received(log)),
                   what="notifications/cancelled")
        assert client.call_tool("echo", {"text": "still alive"}).text == "still alive"
    cancel = [m for m in received(log) if m.get("method") == "notifications/cancelled"][0]
    assert cancel["params"]["requestId"] == call_id and "did not answer" in cancel["params"]["reason"]


def test_cancellation_returns_at_once_and_sends_cancelled(tmp_path):
    """MCP-4: cancelling the token ends the wait at once, with notifications/cancelled {requestId, reason}."""
    log = tmp_path / "in.jsonl"
    token = CancellationToken()
    with connect(log=log) as client:
        outcome: dict = {}

        def call() -> None:
            try:
                client.call_tool("hang", cancel=token, timeout=30)
            except Exception as error:  # noqa: BLE001 - recorded for the assertion
                outcome["error"] = error

        worker = threading.Thread(target=call)
        worker.start()
        wait_until(lambda: any(m.get("method") == "tools/call" for m in received(log)), what="the call to arrive")
        token.cancel()
        worker.join(5)
        assert not worker.is_alive()
        assert isinstance(outcome["error"], McpCancelled)
        wait_until(lambda: any(m.get("method") == "notifications/cancelled" for m in received(log)),
                   what="notifications/cancelled")
    call_id = [m for m in received(log) if m.get("method") == "tools/call"][0]["id"]
    cancel = [m for m in received(log) if m.get("method") == "notifications/cancelled"][0]
    assert cancel["params"] == {"requestId": call_id, "reason": str(outcome["error"])}


def test_a_token_cancelled_before_the_call_sends_nothing(tmp_path):
    """MCP-4: nothing is sent for a request that was cancelled before it started."""
    log = tmp_path / "in.jsonl"
    token = CancellationToken()
    token.cancel()
    with connect(log=log) as client:
        with pytest.raises(McpCancelled):
            client.call_tool("echo", {"text": "x"}, cancel=token)
    assert not any(m.get("method") in ("tools/call", "notifications/cancelled") for m in received(log))


def test_a_late_response_is_ignored():
    """MCP-2: a response that arrives after its request timed out does not disturb later ones."""
    with connect() as client:
        with pytest.raises(McpTimeout):
            client.call_tool("late", timeout=0.05)
        time.sleep(0.4)  # the late answer arrives now
        assert client.call_tool("echo", {"text": "next"}).text == "next"


def test_progress_notifications_reach_the_callback():
    """MCP-2: notifications/progress for a request go to its callback (its id is the progress token)."""
    seen = []
    with connect() as client:
        result = client.call_tool("progress", on_progress=lambda p, t, m: seen.append((p, t, m)))
    assert result.text == "done"
    assert seen == [(1, 2, "step 1"), (2, 2, "step 2")]


def test_notification_subscribers():
    """MCP-2: notifications are dispatched to subscribers by method ("*": all), until unsubscribed."""
    every: list = []
    progress: list = []
    with connect() as client:
        unsubscribe = client.on_notification("*", lambda method, params: every.append(method))
        client.on_notification("notifications/progress", lambda method, params: progress.append(params["progress"]))
        client.call_tool("progress")
        unsubscribe()
        client.call_tool("progress")
    assert [m for m in every if m != "notifications/tools/list_changed"] == ["notifications/progress"] * 2
    assert progress == [1, 2, 1, 2]


def test_non_json_lines_are_skipped(caplog):
    """MCP-1: a server that prints stray lines on stdout still works; the lines are logged."""
    with connect("noisy") as client:
        assert client.call_tool("echo", {"text": "through the noise"}).text == "through the noise"
    assert "not JSON" in caplog.text


def test_concurrent_calls_from_many_threads():
    """MCP-19: calls from many threads at once each get their own answer."""
    with connect() as client:
        results: dict[int, str] = {}

        def call(n: int) -> None:
            results[n] = client.call_tool("echo", {"text": f"n{n}"}).text

        threads = [threading.Thread(target=call, args=(n,)) for n in range(40)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
    assert results == {n: f"n{n}" for n in range(40)}


def test_server_exit_fails_waiting_requests_at_once():
    """MCP-10: all waiting requests fail together with the exit status and the stderr tail; later
    requests fail at once."""
    with connect() as client:
        errors: list = []

        def hang() -> None:
            try:
                client.call_tool("hang", timeout=30)
            except Exception as error:  # noqa: BLE001
                errors.append(error)

        waiting = [threading.Thread(target=hang) for _ in range(3)]
        for thread in waiting:
            thread.start()
        time.sleep(0.2)
        with pytest.raises(McpConnectionClosed) as caught:
            client.call_tool("die", timeout=30)
        for thread in waiting:
            thread.join(5)
        assert len(errors) == 3 and all(isinstance(e, McpConnectionClosed) for e in errors)
        error = caught.value
        assert error.exit_code == 5 and "exited with code 5" in str(error)
        assert "the tool crashed the server" in str(error) and "crashed" in error.stderr_tail
        with pytest.raises(McpConnectionClosed, match="exited with code 5"):
            client.call_tool("echo", {"text": "x"})
        assert client.closed


def test_close_ends_process_group_and_threads():
    """MCP-11: close() reaps the server, leaves nothing of its process group, ends the threads;
    it is idempotent and fails what was still waiting."""
    before = {t.ident for t in mcp_threads()}
    client = connect()
    pid = client.pid
    assert pid is not None and not pid_gone(pid)
    outcome: list = []
    waiter = threading.Thread(target=lambda: outcome.append(_error_of(lambda: client.call_tool("hang"))))
    waiter.start()
    time.sleep(0.1)
    client.close()
    client.close()
    waiter.join(5)
    assert isinstance(outcome[0], McpConnectionClosed) and "was closed" in str(outcome[0])
    assert pid_gone(pid) and group_gone(pid)
    wait_until(lambda: not [t for t in mcp_threads() if t.ident not in before], what="threads to end")


def test_close_terminates_a_server_that_ignores_eof(tmp_path):
    """MCP-11: a server that keeps running after EOF on stdin is terminated after the grace period."""
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import json, sys, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "line = sys.stdin.readline()\n"
        "msg = json.loads(line)\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'result': {'protocolVersion': '2025-06-18',"
        " 'capabilities': {}, 'serverInfo': {'name': 's'}}}), flush=True)\n"
        "while True:\n    time.sleep(1)\n", encoding="utf-8")
    client = McpClient.connect_stdio(fake_cmd("serve")[0], [str(script)], timeout=10, close_grace=0.2)
    pid = client.pid
    client.close()  # EOF ignored, SIGTERM ignored: SIGKILL ends it
    assert pid is not None and pid_gone(pid)


def test_spawn_failure_is_a_connection_error():
    """MCP-9: a command that does not exist fails at once with McpConnectionError."""
    with pytest.raises(McpConnectionError, match="could not start MCP server .*No such file"):
        McpClient.connect_stdio("/nonexistent/mcp-server", ["--flag"])


def test_arguments_given_as_one_string_are_refused():
    with pytest.raises(ConfigError, match="list of strings"):
        McpClient.connect_stdio("python", "server.py")  # type: ignore[arg-type]


def test_environment_drops_secrets_and_adds_env(tmp_path, monkeypatch):
    """MCP-20: the server inherits the environment minus credential-like variables, plus ``env``."""
    monkeypatch.setenv("PHI_TEST_API_KEY", "sk-hidden")
    monkeypatch.setenv("PHI_TEST_PLAIN", "visible")
    out = tmp_path / "env.json"
    script = tmp_path / "envdump.py"
    script.write_text(
        "import json, os, sys\n"
        f"json.dump(dict(os.environ), open({str(out)!r}, 'w'))\n"
        "sys.exit(0)\n", encoding="utf-8")
    with pytest.raises(McpConnectionClosed):
        McpClient.connect_stdio(fake_cmd("serve")[0], [str(script)], env={"GIVEN_TOKEN": "t0ken"}, timeout=10)
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert "PHI_TEST_API_KEY" not in seen
    assert seen["PHI_TEST_PLAIN"] == "visible" and seen["GIVEN_TOKEN"] == "t0ken" and "PATH" in seen


def test_cwd_is_used(tmp_path):
    script = tmp_path / "cwd.py"
    script.write_text("import os, sys\nsys.stderr.write('cwd=' + os.getcwd())\nsys.exit(2)\n", encoding="utf-8")
    with pytest.raises(McpConnectionClosed, match=f"cwd={tmp_path}"):
        McpClient.connect_stdio(fake_cmd("serve")[0], [str(script)], cwd=tmp_path, timeout=10)


def _error_of(fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001
        return error
    return None


def test_secrets_given_to_the_server_are_not_repeated_in_errors(tmp_path):
    """MCP-18: errors name the server by command and script, and what the server writes is shown
    without the credential-like env values and option values it was given."""
    script = tmp_path / "leaky.py"
    script.write_text("import os, sys\n"
                      "sys.stderr.write('argv=%s token=%s' % (sys.argv, os.environ['API_TOKEN']))\n"
                      "sys.exit(1)\n", encoding="utf-8")
    with pytest.raises(McpConnectionClosed) as caught:
        McpClient.connect_stdio(fake_cmd("exit")[0], [str(script), "--token=supersecret", "--api-key", "k3ysecret"],
                                env={"API_TOKEN": "envsecret"}, timeout=10)
    text = str(caught.value) + caught.value.stderr_tail
    assert "argv=" in text and "token=***" in text
    for secret in ("supersecret", "k3ysecret", "envsecret"):
        assert secret not in text
    assert "MCP server python leaky.py exited with code 1" in text
