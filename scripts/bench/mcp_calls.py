#!/usr/bin/env python3
"""MCP tool-call round trips: phi's client against the official MCP Python SDK client (``mcp``, the
test extra), on the same SDK server (tests/mcp/sdk_server.py) over stdio and over Streamable HTTP
with SSE and JSON replies, all on 127.0.0.1. Also phi with 8 threads calling at once (the loop
runs tools in parallel) and the time to connect (spawn + handshake).

Prints one line per transport; the last line is one JSON object with all figures (milliseconds).
Benchmarks report, they never judge.

Usage: python3 scripts/bench/mcp_calls.py [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from phi.mcp import McpClient  # noqa: E402
from tests.mcp.conftest import HttpServer, sdk_cmd  # noqa: E402


def phi_connect(kind: str, url: str | None) -> McpClient:
    if kind == "stdio":
        return McpClient.connect_stdio(*sdk_cmd(), timeout=30)
    return McpClient.connect_http(url, timeout=30)  # type: ignore[arg-type]


def phi_sequential(kind: str, url: str | None, calls: int) -> tuple[float, float]:
    started = time.perf_counter()
    with phi_connect(kind, url) as client:
        connected = time.perf_counter()
        client.call_tool("add", {"a": 1, "b": 2})  # warm up
        begin = time.perf_counter()
        for n in range(calls):
            client.call_tool("add", {"a": n, "b": 1})
        per_call = (time.perf_counter() - begin) / calls
    return (connected - started) * 1000, per_call * 1000


def phi_parallel(kind: str, url: str | None, calls: int, threads: int = 8) -> float:
    with phi_connect(kind, url) as client:
        client.call_tool("add", {"a": 1, "b": 2})

        def work() -> None:
            for n in range(calls // threads):
                client.call_tool("add", {"a": n, "b": 1})

        workers = [threading.Thread(target=work) for _ in range(threads)]
        begin = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return (time.perf_counter() - begin) / (calls // threads * threads) * 1000


def sdk_sequential(kind: str, url: str | None, calls: int) -> tuple[float, float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def run() -> tuple[float, float]:
        command, args = sdk_cmd()
        target = StdioServerParameters(command=command, args=args) if kind == "stdio" else url
        started = time.perf_counter()
        async with Client(target) as client:
            connected = time.perf_counter()
            await client.call_tool("add", {"a": 1, "b": 2})
            begin = time.perf_counter()
            for n in range(calls):
                await client.call_tool("add", {"a": n, "b": 1})
            per_call = (time.perf_counter() - begin) / calls
        return (connected - started) * 1000, per_call * 1000

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    calls = parser.parse_args().calls
    figures: dict[str, float] = {}
    for kind, flags in (("stdio", None), ("http_sse", ()), ("http_json", ("--json",))):
        server = HttpServer(*flags) if flags is not None else None
        url = server.url if server else None
        try:
            phi_connect_ms, phi_ms = phi_sequential("stdio" if server is None else "http", url, calls)
            sdk_connect_ms, sdk_ms = sdk_sequential("stdio" if server is None else "http", url, calls)
            parallel_ms = phi_parallel("stdio" if server is None else "http", url, calls)
        finally:
            if server is not None:
                server.stop()
        print(f"{kind:9} per call: phi {phi_ms:.2f} ms, mcp SDK {sdk_ms:.2f} ms (ratio {phi_ms / sdk_ms:.2f}); "
              f"phi 8 threads {parallel_ms:.2f} ms/call; connect: phi {phi_connect_ms:.0f} ms, SDK {sdk_connect_ms:.0f} ms")
        figures.update({f"{kind}_phi_ms": round(phi_ms, 3), f"{kind}_sdk_ms": round(sdk_ms, 3),
                        f"{kind}_ratio": round(phi_ms / sdk_ms, 3), f"{kind}_phi_8_threads_ms": round(parallel_ms, 3),
                        f"{kind}_phi_connect_ms": round(phi_connect_ms, 1),
                        f"{kind}_sdk_connect_ms": round(sdk_connect_ms, 1)})
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
