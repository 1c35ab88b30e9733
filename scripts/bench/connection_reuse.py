#!/usr/bin/env python3
"""Connection reuse: how many TCP connections N sequential calls of one provider open (issue 10
item 5). A local HTTP/1.1 server on 127.0.0.1 counts the connections it accepts and answers every
call with a real recording (tests/fixtures/real-streams/) in chunked encoding, ending with the
chunked terminator after the final event. Also reports the time per call with reuse, and with a
fresh provider (new session, new connection) per call for comparison.

Prints one line per provider; the last line is one JSON object with all figures.
Benchmarks report, they never judge.

Usage: python3 scripts/bench/connection_reuse.py [--calls N]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "fixtures" / "real-streams"

RECORDINGS = {
    "anthropic": ("anthropic__thinking_signature_then_text.txt", "text/event-stream"),
    "openai": ("openai_chat__tool_call_streamed_args.txt", "text/event-stream"),
    "openai_responses": ("openai_responses__text.txt", "text/event-stream"),
    "google": ("gemini__thought_summaries_then_text.txt", "text/event-stream"),
    "bedrock": ("bedrock__text_nova.bin", "application/vnd.amazon.eventstream"),
}


class CountingServer:
    """Keep-alive HTTP/1.1 server that answers every POST with one body and counts connections."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.reply = (b"", "text/plain")
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as HTTP servers do
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                body, ctype = self.reply
                conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
                for i in range(0, len(body), 4096):
                    piece = body[i : i + 4096]
                    conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                conn.sendall(b"0\r\n\r\n")


def model_for(name: str, url: str):
    from phi.providers.model_config import ModelConfig

    if name == "anthropic":
        return ModelConfig.anthropic("claude-bench", api_key="bench-key", base_url=url)
    if name == "openai":
        return ModelConfig.openai("gpt-bench", api_key="bench-key", base_url=url)
    if name == "openai_responses":
        return ModelConfig.openai_responses("gpt-bench", api_key="bench-key", base_url=url)
    if name == "google":
        return ModelConfig.google("gemini-bench", api_key="bench-key", base_url=url)
    return ModelConfig.bedrock("nova-bench", api_key="bench-key", base_url=url)


def run(server: CountingServer, name: str, calls: int, fresh: bool) -> tuple[int, float]:
    from phi.concurrency.cancel import CancellationToken
    from phi.providers.base import StreamConfig
    from phi.providers.registry import ProviderRegistry
    from phi.types import UserMessage

    file, ctype = RECORDINGS[name]
    server.reply = ((FIXTURES / file).read_bytes(), ctype)
    mc = model_for(name, server.url)
    config = StreamConfig(mc, messages=[UserMessage.from_text("hi")])
    provider = ProviderRegistry.default().get(mc.api)
    before = server.connections
    start = time.perf_counter()
    for _ in range(calls):
        if fresh:
            provider = ProviderRegistry.default().get(mc.api)  # a new instance: its own session
        message = provider.stream(config, lambda event: None, CancellationToken())
        assert message.stop_reason.value in ("stop", "toolUse"), message.error_message
    return server.connections - before, (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    server = CountingServer()
    figures: dict[str, object] = {"calls": args.calls}
    for name in RECORDINGS:
        reused, reused_s = run(server, name, args.calls, fresh=False)
        fresh, fresh_s = run(server, name, args.calls, fresh=True)
        figures[f"{name}_connections"] = reused
        figures[f"{name}_ms_per_call_reused"] = round(reused_s * 1000, 2)
        figures[f"{name}_ms_per_call_new_connection"] = round(fresh_s * 1000, 2)
        print(f"{name:17s} {args.calls} calls -> {reused} connection(s); {reused_s * 1000:6.2f} ms/call "
              f"(new provider each call: {fresh} connections, {fresh_s * 1000:6.2f} ms/call)", flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
