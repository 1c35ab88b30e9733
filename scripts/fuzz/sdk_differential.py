#!/usr/bin/env python3
"""phi's parsers against the official SDKs' stream accumulators, on the real recordings.

Every Anthropic, Chat Completions and Responses recording of tests/fixtures/real-streams/ is served
from a local HTTP server on 127.0.0.1 and read twice: by phi's provider, and by the official SDK's
streaming helper (``anthropic``: ``messages.stream().get_final_message()``; ``openai``:
``chat.completions.stream().get_final_completion()`` and ``responses.stream().get_final_response()``)
in the benchmark venv (``.cache/bench-venv``, created by scripts/bench/sse_throughput.py; the
SDKs are never phi dependencies). Both results are reduced to the same summary — text, thinking,
tool calls (id, name, arguments), stop reason, token counts, or "failed" — and compared. Where
phi differs on purpose, :data:`INTENDED` says why.

Prints one line per recording; the last line is one JSON object. Exits 1 on an unexplained
difference.

Usage: .venv/bin/python scripts/fuzz/sdk_differential.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "bench"))
FIXTURES = ROOT / "tests" / "fixtures" / "real-streams"
FAMILIES = ("anthropic", "openai_chat", "openai_compat", "openai_responses", "azure_responses")
# Where phi differs from an SDK on purpose (docs/providers.md), and why.
INTENDED = {
    "anthropic__max_tokens_incomplete_tool_json.txt":
        "a tool call cut by max_tokens keeps its raw partial JSON (__raw_arguments); the SDK guesses an "
        "object from the fragment, which would let a half-written call look complete",
    "openai_chat__text_usage_chunk_then_moderation_chunk.txt":
        "the SDK's final usage is the last chunk's (a moderation chunk with usage: null); phi keeps the "
        "usage chunk's counts",
    "openai_compat__openrouter_comments_reasoning_length_inline_error.txt":
        "an error payload after finish_reason keeps the stop reason (with error_message); the SDK raises",
}
CHAT_STOPS = {"stop": "stop", "length": "length", "tool_calls": "toolUse", "content_filter": "error"}
ANTHROPIC_STOPS = {"end_turn": "stop", "max_tokens": "length", "tool_use": "toolUse", "refusal": "error"}


def body_of(name: str) -> bytes:
    """The recording as SSE bytes (payload-only .jsonl files get ``event:`` + ``data:`` framing)."""
    raw = (FIXTURES / name).read_bytes()
    if not name.endswith(".jsonl"):
        return raw
    lines = [line for line in raw.decode("utf-8").splitlines() if line.strip()]
    return "".join(f"event: {json.loads(line)['type']}\ndata: {line}\n\n" for line in lines).encode("utf-8")


def serve() -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            self.rfile.read(int(self.headers.get("content-length", "0")))
            body = body_of(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# --------------------------------------------------------------------------- phi's side


def base_url(url: str, name: str) -> str:
    """Where a client is pointed for one recording (the server picks it from the path)."""
    return f"{url}/rec/{name}" + ("" if name.startswith("anthropic") else "/v1")


def phi_summary(name: str, url: str) -> dict:
    from phi.concurrency.cancel import CancellationToken
    from phi.providers.base import ProviderError, StreamConfig
    from phi.providers.model_config import ModelConfig
    from phi.providers.registry import ProviderRegistry
    from phi.types import TextContent, ThinkingContent, ToolCall, UserMessage

    family = name.split("__")[0]
    base = base_url(url, name)
    if family == "anthropic":
        mc = ModelConfig.anthropic("claude-x", api_key="sk-ant-x", base_url=base)
    elif family in ("openai_chat", "openai_compat"):
        mc = ModelConfig.openai("gpt-x", api_key="sk-x", base_url=base)
    else:
        mc = ModelConfig.openai_responses("gpt-x", api_key="sk-x", base_url=base)
    provider = ProviderRegistry.default().get(mc.api)
    try:
        message = provider.stream(StreamConfig(mc, messages=[UserMessage.from_text("hi")]), lambda e: None,
                                  CancellationToken())
    except ProviderError:
        return {"failed": True}
    if message.stop_reason.value == "error" and family != "anthropic":
        return {"failed": True}  # the SDKs raise on an error event (phi keeps the partial reply)
    usage = message.usage
    summary = {
        "text": "".join(b.text for b in message.content if isinstance(b, TextContent)),
        "tool_calls": [[b.id, b.name, b.arguments] for b in message.content if isinstance(b, ToolCall)],
        "stop": message.stop_reason.value,
        "usage": [usage.input + usage.cache_read, usage.output],
    }
    if family == "anthropic":
        summary["thinking"] = [[b.thinking, b.signature, b.redacted] for b in message.content
                               if isinstance(b, ThinkingContent)]
        summary["usage"] += [usage.cache_read, usage.cache_write]
    return summary


# --------------------------------------------------------------------------- the SDKs' side

SDK_SCRIPT = r"""
import json, sys
bases = json.loads(sys.argv[1])
CHAT_STOPS, ANTHROPIC_STOPS = json.loads(sys.argv[2]), json.loads(sys.argv[3])

def arguments(text):
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {"__raw_arguments": text}
    return value if isinstance(value, dict) else {"__raw_arguments": text}

def anthropic_summary(base):
    import anthropic
    client = anthropic.Anthropic(api_key="sk-ant-x", base_url=base, max_retries=0)
    with client.messages.stream(model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as s:
        m = s.get_final_message()
    text = "".join(b.text for b in m.content if b.type == "text")
    thinking = [[b.thinking, b.signature, False] if b.type == "thinking" else [b.data, None, True]
                for b in m.content if b.type in ("thinking", "redacted_thinking")]
    calls = [[b.id, b.name, b.input if isinstance(b.input, dict) else {}] for b in m.content if b.type == "tool_use"]
    u = m.usage
    read, write = u.cache_read_input_tokens or 0, u.cache_creation_input_tokens or 0
    return {"text": text, "tool_calls": calls, "stop": ANTHROPIC_STOPS.get(m.stop_reason, "stop"),
            "usage": [u.input_tokens + read, u.output_tokens, read, write], "thinking": thinking}

def chat_summary(base):
    import openai
    client = openai.OpenAI(api_key="sk-x", base_url=base, max_retries=0)
    with client.chat.completions.stream(model="gpt-x", messages=[{"role": "user", "content": "hi"}]) as s:
        c = s.get_final_completion()
    choice = c.choices[0]
    calls = [[t.id, t.function.name, arguments(t.function.arguments)] for t in (choice.message.tool_calls or [])]
    u = c.usage
    return {"text": choice.message.content or "", "tool_calls": calls,
            "stop": CHAT_STOPS.get(choice.finish_reason, "stop"),
            "usage": [u.prompt_tokens, u.completion_tokens] if u else [0, 0]}

def responses_summary(base):
    import openai
    client = openai.OpenAI(api_key="sk-x", base_url=base, max_retries=0)
    with client.responses.stream(model="gpt-x", input="hi") as s:
        r = s.get_final_response()
    text = "".join(p.text for o in r.output if o.type == "message" for p in o.content if p.type == "output_text")
    calls = [[o.call_id, o.name, arguments(o.arguments)] for o in r.output if o.type == "function_call"]
    stop = "toolUse" if calls else ("stop" if r.status == "completed" else "length")
    u = r.usage
    return {"text": text, "tool_calls": calls, "stop": stop,
            "usage": [u.input_tokens, u.output_tokens] if u else [0, 0]}

out = {}
for name, base in bases.items():
    family = name.split("__")[0]
    try:
        out[name] = (anthropic_summary if family == "anthropic" else
                     chat_summary if family in ("openai_chat", "openai_compat") else responses_summary)(base)
    except Exception as exc:
        out[name] = {"failed": True}
print(json.dumps(out))
"""


def main() -> None:
    from sse_throughput import ensure_venv

    python = ensure_venv()
    if python is None:
        print("the SDK venv is not available; nothing compared")
        sys.exit(1)
    names = sorted(p.name for p in FIXTURES.iterdir() if p.name.split("__")[0] in FAMILIES
                   and p.suffix in (".txt", ".jsonl"))
    server = serve()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    mine = {name: phi_summary(name, url) for name in names}
    bases = {name: base_url(url, name) for name in names}
    result = subprocess.run([str(python), "-c", SDK_SCRIPT, json.dumps(bases), json.dumps(CHAT_STOPS),
                             json.dumps(ANTHROPIC_STOPS)], capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stderr[-2000:])
        sys.exit(1)
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    mismatches, intended = [], []
    for name in names:
        same = mine[name] == theirs[name]
        label = "same" if same else "intended" if name in INTENDED else "DIFFERENT"
        print(f"{label:9s} {name}" + (f"\n    ({INTENDED[name]})" if label == "intended" else ""), flush=True)
        if not same:
            (intended if name in INTENDED else mismatches).append(name)
            print(f"    phi: {json.dumps(mine[name])[:600]}\n    sdk: {json.dumps(theirs[name])[:600]}", flush=True)
    server.shutdown()
    print(json.dumps({"recordings": len(names), "same": len(names) - len(mismatches) - len(intended),
                      "intended_differences": len(intended), "mismatches": len(mismatches), "different": mismatches}))
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
