"""The second-actor harness in CI (issue 31, ``scripts/second_actors``): writer processes resuming one
stored session at once, some killed with SIGKILL at random moments or right after a given store write;
afterwards every acknowledged turn is stored exactly once, every stored conversation is one a writer
had, and no link dangles. ``scripts/second_actor.py --trials N`` runs thousands."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from second_actors import Trial, run_trial  # noqa: E402

TRIALS = 240


@pytest.fixture(autouse=True)
def quiet():
    logger = logging.getLogger("phi")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
@pytest.mark.parametrize("write", range(1, 9))
def test_a_writer_killed_right_after_each_store_write_loses_nothing_and_leaves_no_dangling_link(kind, write, tmp_path):
    """Issue 31 item 4: a run with a sub-agent call, killed after its store's N-th write (claims of
    the parent and child loops, the child session's save, the parent's save, ...)."""
    trial = Trial(0, kind, writers=2, turns=3, spawn_every=1, kill_writer=0, kill_at_write=write, kill_after_s=0.0)
    outcome = run_trial(trial, tmp_path)
    assert outcome.violations == []
    assert outcome.killed


def test_hundreds_of_random_trials_break_no_invariant(tmp_path):
    failed = {}
    acked = killed = 0
    for number in range(TRIALS):
        where = tmp_path / str(number)
        where.mkdir()
        outcome = run_trial(number, where)
        acked, killed = acked + outcome.acked, killed + outcome.killed
        if outcome.violations:
            failed[number] = outcome.violations
    assert failed == {}
    assert acked > TRIALS * 3 and killed > TRIALS // 5  # the trials did work and did kill writers
