"""scripts/soak.py (issue 23) runs, checks and reports: a short soak ends cleanly with one JSON line of
counts, and a phi that breaks the contract makes it fail loudly, naming the seed. The soak itself is
run by hand (``python scripts/soak.py --minutes 10``); these only keep the script working."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

import pytest

from phi import Agent, AgentEvent

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "soak.py"
COUNTS = {"runs", "prompts", "steers", "follow_ups", "aborts", "resets", "parallel_runs", "timeouts",
          "exceptions_by_site", "outcomes", "failures", "seconds", "agents", "seed"}


def load_soak(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("soak_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_short_soak_ends_cleanly_with_its_counts_as_the_last_line() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--seconds", "2", "--agents", "2", "--seed", "23"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-5000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    assert COUNTS <= set(summary)
    assert (summary["failures"], summary["agents"], summary["seed"]) == (0, 2, 23)
    assert summary["runs"] > 0 and sum(summary["outcomes"].values()) > 0
    assert "seed 23" in done.stderr  # progress and notes go to stderr


def test_events_heard_twice_fail_the_soak_loudly_naming_the_seed(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """As if phi delivered every event twice: the first run of each agent breaks the order check."""
    soak = load_soak(monkeypatch)
    subscribe = Agent.subscribe

    def subscribe_twice(self: Agent, callback: Callable[[AgentEvent], None]) -> Callable[[], None]:
        subscribe(self, callback)
        return subscribe(self, callback)

    monkeypatch.setattr(Agent, "subscribe", subscribe_twice)
    assert soak.main(["--seconds", "1", "--agents", "2", "--seed", "5"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out.splitlines()[-1])["failures"] >= 1
    assert "FAILURE (seed 5)" in err and "a second AgentStart" in err
