#!/usr/bin/env python3
"""Issue 31: what claiming a run's loop ids in the store costs (SPEC SESS-6, SESS-7).

Every run of an Agent with a store now writes twice: its ``Pending`` record as it starts (the
claim: ``JsonDirStore`` appends it without an fsync, ``SqliteStore`` commits it) and what it
recorded as it ends (the save, synced). For each store, ``--runs`` runs (default 300) of a scripted
agent into one session, timed per run, with claims and with the claim step skipped (the store
given without its ``claim`` method), medians over the runs; and a claim alone, timed directly on
a session of ``--runs`` loops. Prints the figures and ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from phi import Agent, ScriptedProvider  # noqa: E402
from phi.session import JsonDirStore, LoopRecord, LoopStatus, SessionRecorder, SqliteStore  # noqa: E402
from phi.session.model import replace_loops  # noqa: E402


class WithoutClaims:
    """The store, its ``claim`` hidden: the agent saves its runs as before issue 31."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def save(self, session: Any) -> None:
        self._store.save(session)

    def load(self, session_id: str) -> Any:
        return self._store.load(session_id)


def per_run(store: Any, runs: int) -> list[float]:
    agent = Agent(provider=ScriptedProvider([], default="an answer " * 100), recorder=SessionRecorder(), store=store)
    times = []
    for n in range(runs):
        started = time.perf_counter()
        agent.run(f"question {n}")
        times.append(time.perf_counter() - started)
    return times


def claim_alone(store: Any, runs: int) -> list[float]:
    agent = Agent(provider=ScriptedProvider([], default="x"), recorder=SessionRecorder(), store=store)
    for n in range(runs):
        agent.run(f"q{n}")
    session = store.load(agent.session_id)
    times = []
    for n in range(100):
        record = LoopRecord(f"{agent.session_id}.bench.{n + 1}", agent.session_id, agent.agent_id,
                            status=LoopStatus.PENDING, started_at=time.time())
        started = time.perf_counter()
        store.claim(replace_loops(session, [record]))
        times.append(time.perf_counter() - started)
    return times


def ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    figures: dict[str, float] = {}
    for kind in ("json", "sqlite"):
        with tempfile.TemporaryDirectory() as where:
            def make(name: str) -> Any:
                path = os.path.join(where, name)
                return JsonDirStore(path) if kind == "json" else SqliteStore(path + ".db")

            with_claims = ms(per_run(make("a"), args.runs))
            without = ms(per_run(WithoutClaims(make("b")), args.runs))
            alone = ms(claim_alone(make("c"), args.runs))
        figures[f"{kind}_run_ms"] = with_claims
        figures[f"{kind}_run_without_claims_ms"] = without
        figures[f"{kind}_claim_ms"] = alone
        figures[f"{kind}_run_ratio"] = round(with_claims / without, 2)
        print(f"{kind}: a run {with_claims} ms with its claim, {without} ms without "
              f"({figures[f'{kind}_run_ratio']}x); a claim alone {alone} ms")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
