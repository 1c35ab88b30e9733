"""One name, one tool (SPEC AGENT-9): an agent's own tool and an MCP server's tool of the same name,
driven over every protocol phi speaks (issue 35 item 13).

A real stdio MCP server (``fake_server.py``, whose tools include ``echo``) gives the agent a tool
named like one of its own. A local model server on 127.0.0.1 answers each protocol in its own wire
format: first a call of ``echo``, then a closing text. Each request body must offer ``echo`` once —
with the agent's own schema — and the call must run the agent's own tool, the one the model saw.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable

import pytest

from phi import Agent
from phi.loop.tool import FunctionTool
from phi.mcp import McpToolset
from phi.providers.model_config import ModelConfig
from phi.providers.retry import RetryConfig
from phi.types import ToolResultMessage

from coding.wire import Call, Turn, anthropic_sse, gemini_sse, responses_sse
from providers.conftest import Recorded, ReplayServer, Reply

from .conftest import fake_cmd, pid_gone

pytestmark = pytest.mark.timeout(60)

OWN_SCHEMA = {"type": "object", "properties": {"text": {"type": "string", "description": "what to say back"}},
              "required": ["text"], "additionalProperties": False}
OWN_DESCRIPTION = "The agent's own echo: says the text back in capitals."


def own_echo() -> FunctionTool:
    return FunctionTool("echo", OWN_DESCRIPTION, OWN_SCHEMA, lambda args, ctx: f"own:{args['text'].upper()}")


# --------------------------------------------------------------------------- the wire formats phi lacks in tests/coding


def chat_sse(turn: Turn) -> bytes:
    """An OpenAI Chat Completions stream (shape of openai_chat__tool_call_streamed_args.txt)."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1754693439, "model": "gpt-test"}
    chunks: list[dict[str, Any]] = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    if turn.text:
        chunks.append({**base, "choices": [{"index": 0, "delta": {"content": turn.text}}]})
    for index, call in enumerate(turn.calls):
        start = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        chunks.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [start]}}]})
        more = {"index": index, "function": {"arguments": call.arguments_text}}
        chunks.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [more]}}]})
    chunks.append({**base, "choices": [{"index": 0, "delta": {},
                                        "finish_reason": "tool_calls" if turn.calls else "stop"}]})
    chunks.append({**base, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}})
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def bedrock_stream(turn: Turn) -> bytes:
    """A ConverseStream body (shape of bedrock__text_then_tool_use_streamed_args.bin)."""
    from phi.providers.eventstream import encode_message

    frames: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    index = 0
    if turn.text:
        frames += [("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": turn.text}}),
                   ("contentBlockStop", {"contentBlockIndex": index})]
        index += 1
    for call in turn.calls:
        frames += [("contentBlockStart", {"contentBlockIndex": index,
                                          "start": {"toolUse": {"toolUseId": call.id, "name": call.name}}}),
                   ("contentBlockDelta", {"contentBlockIndex": index,
                                          "delta": {"toolUse": {"input": call.arguments_text}}}),
                   ("contentBlockStop", {"contentBlockIndex": index})]
        index += 1
    frames += [("messageStop", {"stopReason": "tool_use" if turn.calls else "end_turn"}),
               ("metadata", {"usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}, "metrics": {}})]
    return b"".join(encode_message({":event-type": kind, ":content-type": "application/json",
                                    ":message-type": "event"}, json.dumps(payload).encode())
                    for kind, payload in frames)


def proxy_sse(turn: Turn) -> bytes:
    """phi's proxy stream (its own format, phi/providers/proxy.py)."""
    events: list[dict[str, Any]] = [{"type": "start"}]
    index = 0
    if turn.text:
        events += [{"type": "text_start", "contentIndex": index},
                   {"type": "text_delta", "contentIndex": index, "delta": turn.text},
                   {"type": "text_end", "contentIndex": index}]
        index += 1
    for call in turn.calls:
        events += [{"type": "toolcall_start", "contentIndex": index, "id": call.id, "toolName": call.name},
                   {"type": "toolcall_delta", "contentIndex": index, "delta": call.arguments_text},
                   {"type": "toolcall_end", "contentIndex": index}]
        index += 1
    events.append({"type": "done", "reason": "toolUse" if turn.calls else "stop", "usage": {"input": 1, "output": 2}})
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()


# --------------------------------------------------------------------------- each protocol: model, encoder, offered tools


def _declared(body: dict[str, Any], api: str) -> list[dict[str, Any]]:
    """The tool declarations a request body carries, as (name, schema) dicts, in the body's order."""
    if api == "anthropic":
        return [{"name": t["name"], "schema": t["input_schema"]} for t in body.get("tools", [])]
    if api == "openai":
        return [{"name": t["function"]["name"], "schema": t["function"]["parameters"]} for t in body.get("tools", [])]
    if api in ("openai_responses", "azure_openai"):
        return [{"name": t["name"], "schema": t["parameters"]} for t in body.get("tools", [])]
    if api in ("google", "google_vertex"):
        return [{"name": d["name"], "schema": d.get("parametersJsonSchema", d.get("parameters"))}
                for group in body.get("tools", []) for d in group.get("functionDeclarations", [])]
    if api == "bedrock":
        return [{"name": t["toolSpec"]["name"], "schema": t["toolSpec"]["inputSchema"]["json"]}
                for t in body.get("toolConfig", {}).get("tools", []) if "toolSpec" in t]  # not a cachePoint
    return [{"name": t["name"], "schema": t["parameters"]} for t in body["context"]["tools"]]


PROTOCOLS: dict[str, tuple[Callable[[str], ModelConfig], Callable[[Turn], bytes], str]] = {
    "anthropic": (lambda url: ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=url),
                  anthropic_sse, "text/event-stream"),
    "openai": (lambda url: ModelConfig.openai("gpt-4.1", api_key="sk-test", base_url=url), chat_sse,
               "text/event-stream"),
    "openai_responses": (lambda url: ModelConfig.openai_responses("gpt-5", api_key="sk-test", base_url=url),
                         responses_sse, "text/event-stream"),
    "azure_openai": (lambda url: ModelConfig.azure_openai("deploy", api_key="az-test", base_url=url + "/openai/v1"),
                     responses_sse, "text/event-stream"),
    "google": (lambda url: ModelConfig.google("gemini-test", api_key="g-test", base_url=url), gemini_sse,
               "text/event-stream"),
    "google_vertex": (lambda url: ModelConfig.vertex("gemini-test", project="p", access_token="ya29.t", base_url=url),
                      gemini_sse, "text/event-stream"),
    "bedrock": (lambda url: ModelConfig.bedrock("us.anthropic.claude-test-v1:0", api_key="br-test", base_url=url),
                bedrock_stream, "application/vnd.amazon.eventstream"),
    "proxy": (lambda url: ModelConfig.proxy(url + "/stream", "m", token="proxy-token"), proxy_sse,
              "text/event-stream"),
}


class ModelServer(ReplayServer):
    """Answers the n-th request with the n-th turn, in the protocol under test."""

    def __init__(self, encode: Callable[[Turn], bytes], content_type: str, turns: list[Turn]) -> None:
        super().__init__()
        self.turns = list(turns)
        self.responder = lambda request: self._answer(request, encode, content_type)

    def _answer(self, request: Recorded, encode: Callable[[Turn], bytes], content_type: str) -> Reply:
        turn = self.turns.pop(0) if self.turns else Turn(text="(no more turns)")
        return Reply(encode(turn), content_type=content_type)


@pytest.fixture
def echo_server():
    """The fake stdio MCP server, whose ``echo`` tool says the text back as it is."""
    toolset = McpToolset.stdio(*fake_cmd("serve"), timeout=20)
    yield toolset
    toolset.close()


@pytest.mark.parametrize("api", sorted(PROTOCOLS))
def test_each_name_is_offered_once_and_a_call_runs_the_tool_the_model_saw(api, echo_server, caplog) -> None:
    make_model, encode, content_type = PROTOCOLS[api]
    server = ModelServer(encode, content_type, [Turn(calls=[Call("echo", {"text": "hi"})]), Turn(text="Done.")])
    try:
        agent = Agent(model_config=make_model(server.url), tools=[own_echo()], tool_sources=[echo_server],
                      retry_config=RetryConfig.none())
        with caplog.at_level(logging.WARNING, logger="phi"):
            result = agent.run("Say hi back.", timeout=30)
        bodies = [request.json() for request in server.requests]
    finally:
        server.close()
    assert result.outcome.value == "completed", result
    assert len(bodies) == 2
    for body in bodies:
        declared = _declared(body, api)
        names = [d["name"] for d in declared]
        assert names.count("echo") == 1, (api, names)
        assert {"content", "error", "hang"} <= set(names)  # the server's other tools are offered
        echo = next(d for d in declared if d["name"] == "echo")
        assert echo["schema"]["properties"]["text"].get("description") == "what to say back", (api, echo)
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.text, r.is_error) for r in results] == [("echo", "own:HI", False)]
    assert "tool 'echo' of tool_sources[0] (MCP server python fake_server.py) is left out of this run: its name " \
           "is taken by the agent's own tools" in caplog.text


def test_the_agents_own_file_tools_win_over_a_server_without_a_prefix(tmp_path, caplog) -> None:
    """``default_tools()`` beside a server offering ``read_file``/``write_file``/``edit_file`` with no
    prefix: each name once, the agent's own tool runs (here through a scripted provider)."""
    from phi import ScriptedProvider, default_tools
    from phi.tools.environment import LocalExecutionEnvironment
    from phi.providers.mock import ScriptedResponse

    (tmp_path / "note.txt").write_text("from the workspace\n", encoding="utf-8")

    class FileServer:
        """A source offering MCP-style file tools of the same names (its own schemas and results)."""

        def tools(self) -> list[FunctionTool]:
            schema = {"type": "object", "properties": {"uri": {"type": "string"}}}
            return [FunctionTool(name, f"server {name}", schema, lambda args, ctx: "from the server")
                    for name in ("read_file", "write_file", "edit_file", "directory_tree")]

    provider = ScriptedProvider([ScriptedResponse.tool_call("read_file", {"path": "note.txt"}, "c1"), "ok"])
    agent = Agent(provider=provider, tools=default_tools(LocalExecutionEnvironment(str(tmp_path))), tool_sources=[FileServer()])
    with caplog.at_level(logging.WARNING, logger="phi"):
        agent.run("Read note.txt.")
    names = [t.name for t in provider.calls[0].tools]
    assert len(names) == len(set(names)), names
    assert "directory_tree" in names
    read = next(t for t in provider.calls[0].tools if t.name == "read_file")
    assert "path" in read.parameters["properties"]  # the agent's own schema
    result = next(m for m in agent.messages if isinstance(m, ToolResultMessage))
    assert "from the workspace" in result.text
    assert "tools 'read_file', 'write_file', 'edit_file' of tool_sources[0] (FileServer) are left out of this run: " \
           "their names are taken by the agent's own tools" in caplog.text


def test_between_sources_the_first_in_the_list_wins_every_run(tmp_path, caplog) -> None:
    """Two servers offering the same names without prefixes: the earlier source's tools, every run."""
    from phi import ScriptedProvider
    from phi.providers.mock import ScriptedResponse

    logs = [tmp_path / "first.jsonl", tmp_path / "second.jsonl"]
    first = McpToolset.stdio(*fake_cmd("serve", str(logs[0])), timeout=20)
    second = McpToolset.stdio(*fake_cmd("serve", str(logs[1])), timeout=20)
    pids = [first.client.pid, second.client.pid]
    provider = ScriptedProvider([ScriptedResponse.tool_call("echo", {"text": "one"}, "c1"), "ok",
                                 ScriptedResponse.tool_call("echo", {"text": "two"}, "c2"), "ok"])
    with Agent(provider=provider, tool_sources=[first, second]) as agent:
        with caplog.at_level(logging.WARNING, logger="phi"):
            agent.run("first")
            agent.run("second")
        for call in provider.calls:
            names = [t.name for t in call.tools]
            assert len(names) == len(set(names)) and "echo" in names, names
    calls = [[json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] for log in logs]
    called = [[m["params"]["arguments"]["text"] for m in lines if m.get("method") == "tools/call"] for lines in calls]
    assert called == [["one", "two"], []]
    clash = "of tool_sources[1] (MCP server python fake_server.py) are left out of this run: their names are " \
            "taken by tool_sources[0] (MCP server python fake_server.py)"
    assert caplog.text.count(clash) == 2  # one line per run, naming every tool left out
    assert all(pid is not None and pid_gone(pid) for pid in pids)
