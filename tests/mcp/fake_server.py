"""A scriptable stdio MCP server for phi's fault and rule tests (standard library only).

    python fake_server.py MODE [LOG]

MODE:
  serve       a small correct server (see below); LOG (optional) gets every line received, as JSON lines
  garbage     answers every line with lines that are not JSON-RPC, never with a response
  silent      reads stdin, never writes
  exit        writes a message to stderr and exits with status 3 at once
  flood       writes 64 MiB to stderr, then serves like ``serve``
  flood-exit  writes 64 MiB to stderr, then exits with status 4
  noisy       like ``serve``, but writes a non-JSON line before every message

``serve``: ``initialize`` answers with protocolVersion from $FAKE_VERSION (default: the client's
offer). On ``notifications/initialized`` it sends, before anything else, a server request ``ping``
with id 0, ``roots/list`` with id "r", ``sampling/createMessage`` with id 7 and a
``notifications/tools/list_changed``. ``tools/list`` is served in three pages (cursors "p2", "p3").
``tools/call`` tools: ``echo`` {text}; ``content`` (every content kind); ``error`` (isError);
``hang`` (never answers); ``die`` (exits with status 5 after writing to stderr); ``rpc`` (a JSON-RPC
error); ``progress`` (two progress notifications, then a result); ``late`` (answers after 0.3 s).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
TOOLS = [
    {"name": "echo", "description": "Echo text.", "inputSchema": {
        "$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
        "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "content", "inputSchema": {"type": "object"}},
    {"name": "error", "description": "Fails.", "inputSchema": None},
    {"name": "hang", "description": "Never answers."},
    {"name": "die", "description": "Exits."},
    {"name": "rpc", "description": "JSON-RPC error."},
    {"name": "progress", "description": "Reports progress."},
    {"name": "late", "description": "Answers after a while."},
]

out_lock = threading.Lock()
noisy = False


def write(message: dict) -> None:
    with out_lock:
        if noisy:
            sys.stdout.write("this line is not JSON\n")
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def result(request_id, value) -> None:
    write({"jsonrpc": "2.0", "id": request_id, "result": value})


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


def call_tool(request_id, params: dict) -> None:
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        result(request_id, text(args.get("text", "")))
    elif name == "content":
        result(request_id, {"content": [
            {"type": "text", "text": "plain"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "inline text"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/octet-stream", "blob": "AAEC"}},
            {"type": "resource", "resource": {"uri": "file:///c.png", "mimeType": "image/png", "blob": PNG}},
            {"type": "resource", "resource": {"uri": "file:///d.json", "mimeType": "application/json", "blob": "eyJhIjogMX0="}},
            {"type": "resource_link", "uri": "file:///e.md", "name": "e.md", "mimeType": "text/markdown",
             "description": "a file"},
            {"type": "hologram", "data": "?"},
        ], "structuredContent": {"answer": 42}, "_meta": {"trace": "t1"}})
    elif name == "error":
        result(request_id, {"content": [{"type": "text", "text": "the tool failed: disk full"}], "isError": True})
    elif name == "hang":
        return
    elif name == "die":
        sys.stderr.write("fatal: the tool crashed the server\n")
        sys.stderr.flush()
        os._exit(5)
    elif name == "rpc":
        write({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32001, "message": "nope", "data": [1]}})
    elif name == "progress":
        token = (params.get("_meta") or {}).get("progressToken")
        for i in (1, 2):
            write({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": token, "progress": i, "total": 2, "message": f"step {i}"}})
        result(request_id, text("done"))
    elif name == "late":
        threading.Timer(0.3, result, (request_id, text("late answer"))).start()
    else:
        result(request_id, {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True})


def handle(message: dict) -> None:
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        version = os.environ.get("FAKE_VERSION") or message["params"]["protocolVersion"]
        result(request_id, {"protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
                            "serverInfo": {"name": "fake", "version": "1.0"}})
    elif method == "notifications/initialized":
        write({"jsonrpc": "2.0", "id": 0, "method": "ping"})
        write({"jsonrpc": "2.0", "id": "r", "method": "roots/list"})
        write({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}})
        write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif method == "tools/list":
        cursor = (message.get("params") or {}).get("cursor")
        page = {None: (TOOLS[:3], "p2"), "p2": (TOOLS[3:6], "p3"), "p3": (TOOLS[6:], None)}[cursor]
        reply = {"tools": page[0]}
        if page[1]:
            reply["nextCursor"] = page[1]
        result(request_id, reply)
    elif method == "tools/call":
        call_tool(request_id, message.get("params") or {})
    elif method == "ping":
        result(request_id, {})


def serve(log_path: str | None) -> None:
    log = open(log_path, "a", encoding="utf-8") if log_path else None
    for line in sys.stdin:
        if log is not None:
            log.write(line if line.endswith("\n") else line + "\n")
            log.flush()
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and "method" in message:
            handle(message)


def flood() -> None:
    chunk = ("x" * 1023 + "\n").encode()
    for _ in range(64 * 1024):
        sys.stderr.buffer.write(chunk)
    sys.stderr.buffer.write(b"last words of the flood\n")
    sys.stderr.flush()


def main(argv: list[str]) -> None:
    global noisy
    mode, log_path = argv[0], (argv[1] if len(argv) > 1 else None)
    if mode == "garbage":
        for _ in sys.stdin:
            sys.stdout.write("hello, I am not JSON\n{broken json\n[1, 2\n")
            sys.stdout.flush()
    elif mode == "silent":
        for _ in sys.stdin:
            pass
        time.sleep(0.1)
    elif mode == "exit":
        sys.stderr.write("fatal: missing configuration file /etc/fake.conf\n")
        sys.exit(3)
    elif mode == "flood-exit":
        flood()
        sys.exit(4)
    else:
        if mode == "flood":
            flood()
        noisy = mode == "noisy"
        serve(log_path)


if __name__ == "__main__":
    main(sys.argv[1:])
