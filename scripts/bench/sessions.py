#!/usr/bin/env python3
"""Issues 13 and 24: what the session stores cost.

Part 1 (issue 24), for JsonDirStore and SqliteStore (synchronous FULL, the default): Agents with a
recorder and a store run prompts into one session each, every run a question and a ~1 KB scripted
answer; after each run the agent saves what the run changed (the recorder's ``flush_changes`` and
the store's ``save``, timed together). One session is grown to ``--runs`` runs (default 1,000) and
one to 100; then, in ``--samples`` rounds (default 21), the 10th run of a fresh session, the next
run of the 100-run session and the next run of the big one are timed one after the other, so the
disk's fsync latency, which drifts on a shared machine, is the same for the three. Printed: the
median save time per run at runs 10, 100 and 1,000 — wall time and the saving thread's CPU time —
the growth from run 10 to run 1,000 (target ≤ 1.3×: a save writes only what is new), the stored
size, and the process's open descriptors before, at the end and after ``close`` (target: none
grows with the runs).

Part 2 (issue 13), skipped with ``--sessions 0``: the time to save ``--sessions`` sessions (default
10,000) one by one (each a two-loop conversation of about 3 KB of JSON, recorded by a
SessionRecorder from real scripted runs and renamed), to list the ids (newest first), to load 1,000
sessions picked at random, and to load the sessions of one agent (1 in 100 sessions belong to it).

Prints the figures and ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from phi import Agent  # noqa: E402
from phi.loop import agent_loop  # noqa: E402
from phi.loop.config import AgentContext, AgentLoopConfig  # noqa: E402
from phi.providers.mock import ScriptedProvider  # noqa: E402
from phi.session import (  # noqa: E402
    JsonDirStore,
    Session,
    SessionRecorder,
    SessionStore,
    SqliteStore,
)
from phi.types import UserMessage  # noqa: E402


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else -1


class TimedRecorder(SessionRecorder):
    """Times what an Agent does to save after each run: flush_changes + the store's save."""

    def __init__(self) -> None:
        super().__init__()
        self.spent = self.cpu = 0.0

    def flush_changes(self) -> list[Session]:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return super().flush_changes()
        finally:
            self.spent += time.perf_counter() - started
            self.cpu += time.thread_time() - cpu


class TimedStore:
    """The store an agent saves to, timing each save into the agent's recorder."""

    def __init__(self, store: SessionStore, recorder: TimedRecorder) -> None:
        self.store, self.recorder = store, recorder

    def save(self, session: Session) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            self.store.save(session)
        finally:
            self.recorder.spent += time.perf_counter() - started
            self.recorder.cpu += time.thread_time() - cpu

    def load(self, session_id: str) -> Session:
        return self.store.load(session_id)

    def list_ids(self) -> list[str]:
        return self.store.list_ids()

    def delete(self, session_id: str) -> None:
        self.store.delete(session_id)

    def load_for_agent(self, agent_id: str) -> list[Session]:
        return self.store.load_for_agent(agent_id)


ANSWER = "A steady answer of moderate length, as a model would give it. " * 16


class Timed:
    """An agent recording into ``store``; ``run()`` returns the (wall, CPU) seconds of its save."""

    def __init__(self, store: SessionStore) -> None:
        self.recorder = TimedRecorder()
        self.agent = Agent(provider=ScriptedProvider([], default=ANSWER, record_calls=False), recorder=self.recorder,
                           store=TimedStore(store, self.recorder))
        self.runs = 0

    def run(self) -> tuple[float, float]:
        self.recorder.spent = self.recorder.cpu = 0.0
        self.runs += 1
        self.agent.run(f"Question {self.runs}: and what about the next part?")
        return self.recorder.spent, self.recorder.cpu

    def grow(self, runs: int) -> None:
        while self.runs < runs:
            self.run()


def one_store(store: SessionStore, runs: int, samples: int) -> dict[str, Any]:
    Timed(store).grow(1)  # the store's files open once
    before = descriptors()
    big, mid = Timed(store), Timed(store)
    big.grow(runs - 1)
    mid.grow(99)
    timings: dict[str, list[tuple[float, float]]] = {"10": [], "100": [], str(runs): []}
    for _round in range(samples):
        small = Timed(store)
        small.grow(9)
        timings["10"].append(small.run())
        small.agent.close()
        timings["100"].append(mid.run())
        timings[str(runs)].append(big.run())
    at_end = descriptors()
    assert len(store.load(big.agent.session_id).loops) == big.runs
    big.agent.close()
    mid.agent.close()
    wall = {k: round(statistics.median(t[0] for t in v) * 1000, 3) for k, v in timings.items()}
    cpu = {k: round(statistics.median(t[1] for t in v) * 1000, 3) for k, v in timings.items()}
    return {"save_ms_at": wall, "save_cpu_ms_at": cpu, "save_ms_growth": round(wall[str(runs)] / wall["10"], 2),
            "save_cpu_ms_growth": round(cpu[str(runs)] / cpu["10"], 2), "fds_before": before, "fds_at_end": at_end}


def part_one(runs: int, samples: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"runs": runs, "samples": samples}
    with tempfile.TemporaryDirectory() as tmp:
        directory, db = os.path.join(tmp, "json"), os.path.join(tmp, "sessions.db")
        for name, store in (("JsonDirStore", JsonDirStore(directory)), ("SqliteStore", SqliteStore(db))):
            result = one_store(store, runs, samples)
            result["stored_bytes"] = (sum(e.stat().st_size for e in os.scandir(directory)) if name == "JsonDirStore"
                                      else sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p)))
            close = getattr(store, "close", None)
            if close is not None:
                close()
            result["fds_after_close"] = descriptors()
            wall, cpu = result["save_ms_at"], result["save_cpu_ms_at"]
            print(f"{name:13} save per run (wall / CPU ms): "
                  + ", ".join(f"run {k}: {wall[k]:.2f} / {cpu[k]:.3f}" for k in wall)
                  + f"; growth {result['save_ms_growth']}x / {result['save_cpu_ms_growth']}x; "
                  f"{result['stored_bytes'] / 1e6:.1f} MB stored; descriptors {result['fds_before']} -> "
                  f"{result['fds_at_end']} ({result['fds_after_close']} after close)")
            figures.update({f"{name}_one_session_{key}": value for key, value in result.items()})
    return figures


# --------------------------------------------------------------------------- part 2: many sessions


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


def measure(store: SessionStore, sessions: list[Session]) -> dict[str, float]:
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


def part_two(count: int) -> dict[str, Any]:
    base = template()
    size = len(json.dumps(base.to_json()))
    sessions = [variant(base, i) for i in range(count)]
    figures: dict[str, Any] = {"sessions": count, "session_json_bytes": size}
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
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="recorded runs into one session (0: skip)")
    parser.add_argument("--samples", type=int, default=21, help="timed runs per session size")
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions saved one by one (0: skip)")
    options = parser.parse_args()
    figures: dict[str, Any] = {}
    if options.runs:
        figures.update(part_one(options.runs, options.samples))
    if options.sessions:
        figures.update(part_two(options.sessions))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
