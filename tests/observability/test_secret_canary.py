"""Secrets never leave (SPEC §17 OTEL-11, issue 34 item 5): canaries that phi knows only as
configuration — the agent's own key passed as ``api_key=``, an MCP server's ``Authorization`` header
over HTTP, a credential-like ``env`` entry of an MCP stdio server — none of them in the environment
of this process under a credential-like name, none shaped like a well-known credential — put where
they end up in everything phi writes: the prompt, a tool's result, a tool's exception, an MCP tool's
result, and an error message a real server sends back (an Anthropic-style HTTP 400 over 127.0.0.1
echoing the prompt). Every sink is then read byte by byte: the spans of the SDK's in-memory
exporter (names, attributes, events, statuses; content capture on and off), the ``--json`` event
lines (:class:`phi.cli.batch.JsonLines`), the session files of both stores, the HTML export (of the
stored session, and rendered from the unredacted one in memory), an agent snapshot file, and the
records of phi's loggers at DEBUG (tracebacks included)."""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
from coding.wire import Call, Turn, anthropic_sse
from providers.conftest import Recorded, ReplayServer, Reply

from phi import Agent
from phi.cli.batch import JsonLines
from phi.export.html import export_session_html, render_html
from phi.export.tree import load_tree
from phi.loop.tool import FunctionTool
from phi.mcp import McpToolset
from phi.providers.model_config import ModelConfig
from phi.session import JsonDirStore, Session, SessionRecorder, SqliteStore
from phi.types import message_to_json

from .conftest import Spans

pytestmark = pytest.mark.timeout(120)

TESTS = Path(__file__).resolve().parents[1]
# made here, so no environment variable and no credential shape gives them away: only the registry knows them
CANARY = "phiCanary" + secrets.token_hex(12)  # the agent's own API key
MCP_TOKEN = "mcpHeader" + secrets.token_hex(12)  # Authorization: Bearer ... of an MCP server over HTTP
STDIO_TOKEN = "stdioEnv" + secrets.token_hex(12)  # SERVICE_TOKEN=... given to an MCP stdio server
CANARIES = (CANARY, MCP_TOKEN, STDIO_TOKEN)
PADDING = "The quick brown fox jumps over the lazy dog. " * 20  # an error that echoes it runs past 200


def _load(name: str, path: Path) -> Any:
    """A helper module of another test folder, loaded by path (``tests/mcp`` is not importable as
    ``mcp``: that is the official SDK's name)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FakeHttpMcp = _load("phi_test_fake_http_mcp", TESTS / "mcp" / "fake_http.py").FakeHttpMcp


def prompt() -> str:
    return f"My key is {CANARY}; the MCP tokens are {MCP_TOKEN} and {STDIO_TOKEN}. {PADDING}"


def anthropic_server() -> ReplayServer:
    """First request: four tool calls; second: HTTP 400 whose message quotes the whole prompt back."""
    server = ReplayServer()
    calls = [Call("remote__echo", {"text": f"remote saw {MCP_TOKEN}"}),
             Call("local__echo", {"text": f"local saw {STDIO_TOKEN}"}),
             Call("read_key", {}), Call("explode", {})]
    seen: list[Recorded] = []

    def respond(request: Recorded) -> Reply:
        seen.append(request)
        if len(seen) == 1:
            return Reply(anthropic_sse(Turn("Checking.", calls)))
        asked = request.json()["messages"][0]["content"]
        text = asked if isinstance(asked, str) else " ".join(b.get("text", "") for b in asked)
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": f"cannot serve: {text}"}}
        return Reply(json.dumps(body).encode(), status=400, content_type="application/json")

    server.responder = respond
    return server


def local_tools() -> list[FunctionTool]:
    def explode(args: dict[str, Any], ctx: object) -> str:
        raise RuntimeError(f"the vault refused key {CANARY}")

    nothing = {"type": "object", "properties": {}}
    return [FunctionTool("read_key", "Reads the key.", nothing, lambda args, ctx: f"the key is {CANARY}"),
            FunctionTool("explode", "Fails.", nothing, explode)]


class MemoryStore:
    """The recorder's sessions as they are in memory, unredacted: what the HTML export gets from a
    store of the application's own that writes whatever it is given."""

    def __init__(self, recorder: SessionRecorder) -> None:
        self.recorder = recorder

    def load(self, session_id: str) -> Session:
        found = self.recorder.get_session(session_id)
        if found is None:
            from phi.session import NotFound

            raise NotFound(session_id)
        return found


class Logged(logging.Handler):
    """Every record of phi's loggers, as a handler of the application's would get it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        self.text = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.text += self.format(record) + "\n"


@dataclass
class Run:
    """One run and everything it left behind."""

    capture: bool
    agent: Agent
    result: Any
    recorder: SessionRecorder
    store: JsonDirStore
    spans: Spans
    lines: str
    logged: Logged
    model: ReplayServer
    mcp: Any
    files: Path


@pytest.fixture(scope="module", params=[False, True], ids=["content-off", "content-on"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    capture: bool = request.param
    files = tmp_path_factory.mktemp("canary")
    model, mcp = anthropic_server(), FakeHttpMcp()
    remote = McpToolset.http(mcp.url, {"Authorization": f"Bearer {MCP_TOKEN}"}, prefix="remote")
    local = McpToolset.stdio(sys.executable, [str(TESTS / "mcp" / "fake_server.py"), "serve"],
                             {"SERVICE_TOKEN": STDIO_TOKEN}, prefix="local")
    recorder, store = SessionRecorder(), JsonDirStore(files / "sessions")
    config = ModelConfig.anthropic("claude-sonnet-4-5", base_url=model.url)
    agent = Agent(model_config=config, api_key=CANARY, tools=local_tools(), tool_sources=[remote, local],
                  recorder=recorder, store=store)
    lines, spans, logged = io.StringIO(), Spans(), Logged()
    agent.subscribe(JsonLines(lines))
    agent.subscribe(spans.tracer(capture_content=capture))
    phi_logger = logging.getLogger("phi")
    level = phi_logger.level
    phi_logger.addHandler(logged)
    phi_logger.setLevel(logging.DEBUG)
    try:
        result = agent.run(prompt())
        agent.wait_for_saved()
        yield Run(capture, agent, result, recorder, store, spans, lines.getvalue(), logged, model, mcp, files)
    finally:
        phi_logger.removeHandler(logged)
        phi_logger.setLevel(level)
        agent.close()
        local.client.close()
        remote.client.close()
        model.close()
        mcp.close()


def everything_under(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def assert_clean(where: str, data: bytes | str) -> None:
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    for canary in CANARIES:
        assert canary.encode() not in raw, f"{canary[:9]}… is in {where}"


def test_the_canaries_went_everywhere_a_secret_can_go(run: Run) -> None:
    """Four tool results (one an exception, two from MCP servers), then the server's 400 quoting the prompt."""
    assert run.result.outcome.value == "error" and "HTTP 400" in (run.result.error or "")
    assert run.model.requests[0].headers["x-api-key"] == CANARY  # the key itself still goes to the service
    assert [m["body"]["params"]["name"] for m in run.mcp.posts("tools/call")] == ["echo"]
    results = [m for m in run.agent.messages if m.role == "toolResult"]
    assert len(results) == 4 and sum(m.is_error for m in results) == 1
    texts = json.dumps([message_to_json(m) for m in results])
    assert all(canary in texts for canary in CANARIES)  # in memory nothing is changed
    raw = run.recorder.get_session(run.agent.session_id)
    assert raw is not None and CANARY in json.dumps(raw.to_json())


def test_traces(run: Run) -> None:
    exported = "".join(span.to_json() for span in run.spans.all)  # names, attributes, events, status, resource
    assert_clean("the spans", exported)
    chat = [s for s in run.spans.all if s.name.startswith("chat")][-1]
    status = chat.status.description or ""
    assert status.startswith("api: HTTP 400: cannot serve: My key is ***; the MCP tokens are *** and ***.")
    limit = 512 if run.capture else 200
    assert len(status) == len("api: ") + limit + 1 and status.endswith("…")  # the echoed prompt is cut
    tools = {s.name: s for s in run.spans.all if s.name.startswith("execute_tool")}
    explode = tools["execute_tool explode"]
    assert (explode.attributes or {})["error.type"] == "RuntimeError"
    if run.capture:
        assert explode.status.description == ("RuntimeError: Tool explode raised RuntimeError: "
                                              "the vault refused key ***")
        assert (tools["execute_tool read_key"].attributes or {})["gen_ai.tool.call.result"] == "the key is ***"
        assert (tools["execute_tool remote__echo"].attributes or {})["gen_ai.tool.call.result"] == "remote saw ***"
        assert "My key is ***" in exported
    else:
        assert explode.status.description is None  # a tool's error text is content (OTEL-3)


def test_event_lines(run: Run) -> None:
    events = [json.loads(line) for line in run.lines.splitlines()]  # each still one valid JSON object
    assert events[0]["type"] == "AgentStart" and events[-1]["type"] == "AgentEnd"
    assert_clean("the --json lines", run.lines)
    assert "the key is ***" in run.lines


def test_session_files(run: Run) -> None:
    raw = run.recorder.get_session(run.agent.session_id)
    assert raw is not None
    sqlite_dir = run.files / "sqlite"
    sqlite_dir.mkdir(exist_ok=True)
    with SqliteStore(sqlite_dir / "sessions.db") as sqlite:  # given the session as it is in memory
        sqlite.save(raw)
        assert "the key is ***" in json.dumps(sqlite.load(raw.session_id).to_json())
    assert_clean("the session files", everything_under(run.files / "sessions"))
    assert_clean("the SQLite store", everything_under(sqlite_dir))
    assert "the key is ***" in json.dumps(run.store.load(run.agent.session_id).to_json())


def test_html_export(run: Run) -> None:
    page_file = run.files / "page.html"
    export_session_html(run.store, run.agent.session_id, page_file)
    assert_clean("the HTML export", page_file.read_bytes())
    page = render_html(load_tree(MemoryStore(run.recorder), run.agent.session_id))  # type: ignore[arg-type]
    assert_clean("a page rendered from the session in memory", page)
    assert "the key is ***" in page


def test_snapshot_file(run: Run) -> None:
    run.agent.checkpoint().save(run.files / "snapshot.json")
    assert_clean("the snapshot", (run.files / "snapshot.json").read_bytes())


def test_log_records(run: Run) -> None:
    raised = [r for r in run.logged.records if r.getMessage() == "tool explode raised"]
    assert raised and "the vault refused key ***" in (raised[0].exc_text or "")  # the traceback was logged
    assert_clean("the log records", run.logged.text)
    assert_clean("the log records' arguments", repr([(r.msg, r.args, r.exc_info) for r in run.logged.records]))
