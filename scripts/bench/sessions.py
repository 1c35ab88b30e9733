#!/usr/bin/env python3
"""Issue 13: what the session stores cost with 10,000 sessions.

For JsonDirStore and SqliteStore (synchronous FULL, the default) in a temporary directory: the time
to save 10,000 sessions one by one (each a two-loop conversation of about 3 KB of JSON, recorded
by a SessionRecorder from real scripted runs and renamed), to list the ids (newest first), to load
1,000 sessions picked at random, and to load the sessions of one agent (1 in 100 sessions belong to
it). Prints the figures and ends with one JSON line. ``--sessions N`` changes the count.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from phi.loop import agent_loop  # noqa: E402
from phi.loop.config import AgentContext, AgentLoopConfig  # noqa: E402
from phi.providers.mock import ScriptedProvider  # noqa: E402
from phi.session import JsonDirStore, Session, SessionRecorder, SqliteStore  # noqa: E402
from phi.types import UserMessage  # noqa: E402


def template() -> Session:
    """One recorded session: two runs of a scripted agent, the second continuing the first."""
    recorder = SessionRecorder()
    provider = ScriptedProvider(["A first answer of moderate length. " * 20, "And a second one. " * 30])
    context = AgentContext(agent_id="agent", session_id="template", loop_id="template.main.1")
    agent_loop([UserMessage.from_text("Tell me about sessions. " * 10)], context, AgentLoopConfig(provider=provider),
               recorder)
    context.loop_id = "template.main.2"
    agent_loop([UserMessage.from_text("And persistence?")], context, AgentLoopConfig(provider=provider), recorder)
    (session,) = recorder.flush()
    return session


def variant(base: Session, index: int) -> Session:
    session = base.copy()
    session.session_id = f"s{index:06d}"
    session.agent_id = "special" if index % 100 == 0 else f"agent{index % 37}"
    for record in session.loops:
        record.session_id, record.agent_id = session.session_id, session.agent_id
        record.loop_id = record.loop_id.replace("template", session.session_id)
    return session


def measure(store, sessions: list[Session]) -> dict[str, float]:
    started = time.perf_counter()
    for session in sessions:
        store.save(session)
    save_s = time.perf_counter() - started
    started = time.perf_counter()
    ids = store.list_ids()
    list_s = time.perf_counter() - started
    assert len(ids) == len(sessions) and ids[0] == sessions[-1].session_id
    picked = random.Random(1).sample(ids, min(1000, len(ids)))
    started = time.perf_counter()
    for session_id in picked:
        store.load(session_id)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    mine = store.load_for_agent("special")
    agent_s = time.perf_counter() - started
    assert len(mine) == (len(sessions) + 99) // 100
    return {"save_ms_each": round(save_s * 1000 / len(sessions), 3), "save_s_total": round(save_s, 2),
            "list_ms": round(list_s * 1000, 1), "load_ms_each": round(load_s * 1000 / len(picked), 3),
            "load_for_agent_ms": round(agent_s * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    count = parser.parse_args().sessions
    base = template()
    size = len(json.dumps(base.to_json()))
    sessions = [variant(base, i) for i in range(count)]
    figures: dict[str, float] = {"sessions": count, "session_json_bytes": size}
    with tempfile.TemporaryDirectory() as tmp:
        json_figures = measure(JsonDirStore(os.path.join(tmp, "json")), sessions)
        with SqliteStore(os.path.join(tmp, "sessions.db")) as store:
            sqlite_figures = measure(store, sessions)
            db_bytes = os.path.getsize(os.path.join(tmp, "sessions.db"))
    print(f"{count} sessions of {size} bytes of JSON each")
    for name, values in (("JsonDirStore", json_figures), ("SqliteStore", sqlite_figures)):
        print(f"{name:13} save {values['save_ms_each']:7.3f} ms each ({values['save_s_total']:.1f} s)  "
              f"list_ids {values['list_ms']:8.1f} ms  load {values['load_ms_each']:6.3f} ms each  "
              f"load_for_agent {values['load_for_agent_ms']:8.1f} ms")
        figures.update({f"{name}_{key}": value for key, value in values.items()})
    figures["sqlite_db_bytes"] = db_bytes
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
