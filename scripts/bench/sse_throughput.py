#!/usr/bin/env python3
"""SSE parse throughput: phi's providers vs the official openai and anthropic SDKs (DESIGN §9).

A local HTTP server on 127.0.0.1 serves two synthetic streams of 20,000 events each, shaped like
the real recordings: a Chat Completions stream (text-delta chunks, a finish chunk, a usage chunk,
``[DONE]``) and an Anthropic Messages stream (``message_start`` … 20,000 ``content_block_delta`` …
``message_stop``). phi's providers parse them with full message assembly, every StreamEvent
delivered to a consumer. The SDKs (installed into a separate venv, ``.cache/bench-venv``, never into
phi's dependencies) iterate their raw event streams over the same bytes in a subprocess.

A second figure is the cost of one huge event (issue 10 item 7: the decoder used to be quadratic
in the size of one event): a 16 MB ``data:`` line decoded by phi's SSE decoder from 16 KB network
reads, and a whole Gemini call over HTTP whose reply carries a 16 MB inline image part.

Prints events/s for each and the ratios; the last line is one JSON object with all figures.
Benchmarks report, they never judge: nothing here fails on a slow result.

Usage: python3 scripts/bench/sse_throughput.py [--events N] [--repeat R] [--chunk BYTES] [--no-sdk]
                                               [--big-mb MB]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
VENV = ROOT / ".cache" / "bench-venv"


# --------------------------------------------------------------------------- synthetic streams


def chat_stream(n: int) -> bytes:
    head = '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-bench",' \
           '"system_fingerprint":"fp_bench","choices":[{"index":0,"delta":'
    parts = [f'data: {head}{{"role":"assistant","content":"","refusal":null}},"logprobs":null,'
             f'"finish_reason":null}}],"usage":null}}\n\n']
    for i in range(n - 3):
        token = json.dumps(f" tok{i % 97}")
        parts.append(f'data: {head}{{"content":{token}}},"logprobs":null,"finish_reason":null}}],"usage":null,'
                     f'"obfuscation":"a1b2c3"}}\n\n')
    parts.append(f'data: {head}{{}},"logprobs":null,"finish_reason":"stop"}}],"usage":null}}\n\n')
    parts.append('data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,'
                 '"model":"gpt-bench","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d,'
                 '"total_tokens":%d}}\n\n' % (n, n + 10))
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode("utf-8")


def anthropic_stream(n: int) -> bytes:
    def event(kind: str, data: str) -> str:
        return f"event: {kind}\ndata: {data}\n\n"

    parts = [event("message_start", '{"type":"message_start","message":{"id":"msg_bench","type":"message",'
                   '"role":"assistant","model":"claude-bench","content":[],"stop_reason":null,'
                   '"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,'
                   '"cache_read_input_tokens":0,"output_tokens":1}}}'),
             event("content_block_start", '{"type":"content_block_start","index":0,'
                   '"content_block":{"type":"text","text":""}}')]
    for i in range(n - 5):
        token = json.dumps(f" tok{i % 97}")
        parts.append(event("content_block_delta", '{"type":"content_block_delta","index":0,'
                           f'"delta":{{"type":"text_delta","text":{token}}}       }}'))
    parts.append(event("content_block_stop", '{"type":"content_block_stop","index":0}'))
    parts.append(event("message_delta", '{"type":"message_delta","delta":{"stop_reason":"end_turn",'
                       '"stop_sequence":null},"usage":{"output_tokens":%d}}' % n))
    parts.append(event("message_stop", '{"type":"message_stop"}'))
    return "".join(parts).encode("utf-8")


# --------------------------------------------------------------------------- local server


def big_gemini_stream(megabytes: int) -> bytes:
    """A Gemini reply: some text, then one event carrying a ``megabytes`` MB inline image."""
    image = "A" * (megabytes << 20)
    first = {"candidates": [{"content": {"parts": [{"text": "Here is the picture."}], "role": "model"}}]}
    last = {"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": image}}],
                                        "role": "model"}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1290, "totalTokenCount": 1295}}
    return f"data: {json.dumps(first)}\r\n\r\ndata: {json.dumps(last)}\r\n\r\n".encode("utf-8")


def serve(bodies: dict[str, bytes], chunk: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            self.rfile.read(int(self.headers.get("content-length", "0")))
            kind = "big" if "streamGenerateContent" in self.path else "anthropic" if "messages" in self.path else "chat"
            body = bodies[kind]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for i in range(0, len(body), chunk):
                piece = body[i : i + chunk]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# --------------------------------------------------------------------------- phi


def bench_phi(url: str, kind: str, repeat: int) -> dict[str, float]:
    from phi.concurrency.cancel import CancellationToken
    from phi.providers.base import StreamConfig
    from phi.providers.model_config import ModelConfig
    from phi.providers.registry import get_provider
    from phi.types import UserMessage

    if kind == "chat":
        mc = ModelConfig.openai("gpt-bench", api_key="sk-bench", base_url=url + "/v1")
    else:
        mc = ModelConfig.anthropic("claude-bench", api_key="sk-bench", base_url=url)
    provider = get_provider(mc)
    config = StreamConfig(mc, messages=[UserMessage.from_text("go")])
    best = float("inf")
    events = 0
    for _ in range(repeat):
        seen = [0]

        def consumer(event: object) -> None:
            seen[0] += 1

        start = time.perf_counter()
        message = provider.stream(config, consumer, CancellationToken())
        best = min(best, time.perf_counter() - start)
        events = seen[0]
        assert message.stop_reason.value == "stop", message.error_message
    return {"seconds": best, "events_delivered": events}


def bench_big_event(url: str, megabytes: int, chunk: int, repeat: int) -> dict[str, float]:
    """Seconds to decode one ``megabytes`` MB event (decoder only, ``chunk``-byte reads), and for
    a whole Gemini call whose reply carries it (HTTP, parser, message assembly)."""
    from phi.concurrency.cancel import CancellationToken
    from phi.providers.base import StreamConfig
    from phi.providers.model_config import ModelConfig
    from phi.providers.registry import get_provider
    from phi.providers.sse import SSEDecoder
    from phi.types import UserMessage

    body = b"data: " + json.dumps({"data": "A" * (megabytes << 20)}).encode() + b"\n\n"
    decoder_best = float("inf")
    for _ in range(repeat):
        decoder = SSEDecoder()
        start = time.perf_counter()
        events = [e for i in range(0, len(body), chunk) for e in decoder.feed(body[i : i + chunk])]
        decoder_best = min(decoder_best, time.perf_counter() - start)
        assert len(events) == 1
    mc = ModelConfig.google("gemini-bench", api_key="bench-key", base_url=url)
    provider = get_provider(mc)
    config = StreamConfig(mc, messages=[UserMessage.from_text("draw")])
    call_best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        message = provider.stream(config, lambda event: None, CancellationToken())
        call_best = min(call_best, time.perf_counter() - start)
        assert message.stop_reason.value == "stop", message.error_message
    return {"decoder_s": decoder_best, "gemini_call_s": call_best}


# --------------------------------------------------------------------------- SDKs (separate venv)

SDK_SCRIPT = r"""
import json, sys, time
kind, url, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
best, count = float("inf"), 0
if kind == "chat":
    import openai
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-bench", max_retries=0)
    for _ in range(repeat):
        start = time.perf_counter()
        stream = client.chat.completions.create(model="gpt-bench", messages=[{"role": "user", "content": "go"}],
                                                stream=True)
        count = sum(1 for _ in stream)
        best = min(best, time.perf_counter() - start)
    version = openai.__version__
else:
    import anthropic
    client = anthropic.Anthropic(base_url=url, api_key="sk-bench", max_retries=0)
    for _ in range(repeat):
        start = time.perf_counter()
        stream = client.messages.create(model="claude-bench", max_tokens=10, stream=True,
                                        messages=[{"role": "user", "content": "go"}])
        count = sum(1 for _ in stream)
        best = min(best, time.perf_counter() - start)
    version = anthropic.__version__
print(json.dumps({"seconds": best, "events_delivered": count, "version": version}))
"""


def ensure_venv() -> Path | None:
    python = VENV / "bin" / "python"
    if python.exists():
        check = subprocess.run([str(python), "-c", "import openai, anthropic"], capture_output=True)
        if check.returncode == 0:
            return python
    print(f"creating {VENV} with openai and anthropic (one-time) ...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "openai", "anthropic"], check=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"could not set up the SDK venv ({exc}); SDK figures skipped", flush=True)
        return None
    return python


def bench_sdk(python: Path, url: str, kind: str, repeat: int) -> dict[str, float] | None:
    result = subprocess.run([str(python), "-c", SDK_SCRIPT, kind, url, str(repeat)], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"SDK run failed: {result.stderr.strip()[-500:]}", flush=True)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=16_384, help="bytes per HTTP chunk sent by the server")
    parser.add_argument("--no-sdk", action="store_true", help="skip the SDK comparison")
    parser.add_argument("--big-mb", type=int, default=16, help="size of the single huge event, in MB")
    args = parser.parse_args()

    bodies = {"chat": chat_stream(args.events), "anthropic": anthropic_stream(args.events),
              "big": big_gemini_stream(args.big_mb)}
    server = serve(bodies, args.chunk)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    python = None if args.no_sdk else ensure_venv()
    figures: dict[str, object] = {"events": args.events, "chunk_bytes": args.chunk}
    for kind, sdk in (("chat", "openai"), ("anthropic", "anthropic")):
        phi = bench_phi(url, kind, args.repeat)
        phi_rate = args.events / phi["seconds"]
        figures[f"phi_{kind}_events_per_s"] = round(phi_rate)
        line = f"{kind:9s} phi: {phi_rate:>10,.0f} events/s ({phi['events_delivered']} StreamEvents delivered)"
        if python is not None:
            sdk_result = bench_sdk(python, url, kind, args.repeat)
            if sdk_result:
                sdk_rate = args.events / sdk_result["seconds"]
                figures[f"{sdk}_sdk_events_per_s"] = round(sdk_rate)
                figures[f"{sdk}_sdk_version"] = sdk_result["version"]
                figures[f"ratio_{kind}_phi_over_{sdk}"] = round(phi_rate / sdk_rate, 2)
                line += f" | {sdk} SDK {sdk_result['version']}: {sdk_rate:>9,.0f} events/s | ratio {phi_rate / sdk_rate:.1f}x"
        print(line, flush=True)
    big = bench_big_event(url, args.big_mb, args.chunk, min(args.repeat, 3))
    figures[f"phi_{args.big_mb}mb_event_decoder_s"] = round(big["decoder_s"], 4)
    figures[f"phi_{args.big_mb}mb_event_gemini_call_s"] = round(big["gemini_call_s"], 4)
    print(f"one {args.big_mb} MB event: decoder {big['decoder_s']:.3f} s ({args.chunk}-byte reads), "
          f"whole Gemini call over HTTP {big['gemini_call_s']:.3f} s", flush=True)
    server.shutdown()
    print(json.dumps(figures))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
