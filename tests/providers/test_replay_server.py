"""The replay server used by the provider and coding tests stops cleanly: after close() none of its
threads is left blocked on a socket. (A thread left blocked in accept() or recv() on a closed
socket may wake on the next socket that reuses the descriptor number — a connection of a later
test — and swallow its request, so that request never gets an answer.)"""

from __future__ import annotations

import threading
import time

import requests

from .conftest import Reply, ReplayServer


def server_threads(port: int) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.endswith(f"-{port}") and t.name.startswith("replay-")]


def test_close_ends_the_accept_thread_and_idle_connections():
    server = ReplayServer()
    server.queue(Reply(b"data: {}\n\n"), Reply(b"data: {}\n\n"))
    with requests.Session() as client:  # keep-alive: the connection stays open, its thread waits in recv
        assert client.post(server.url + "/a", data=b"{}").status_code == 200
        assert client.post(server.url + "/b", data=b"{}").status_code == 200
        assert server.connections == 1 and len(server_threads(server.port)) == 2
        server.close()
        deadline = time.monotonic() + 5
        while server_threads(server.port) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server_threads(server.port) == []
