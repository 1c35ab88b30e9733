"""What the recorder hands out for an append-only store (SPEC SESS-4, SESS-8): only what changed, again
after a failed save, nothing for a session taken back from a store until it changes; a loop id
taken twice is reported, never recorded over."""

from __future__ import annotations

import logging

from phi import Agent, ScriptedProvider
from phi.session import SessionRecorder
from phi.session.recorder_state import PENDING_HISTORIES
from phi.types import UserMessage


def test_flush_changes_hands_out_only_the_loops_that_changed():
    recorder = SessionRecorder()
    agent = Agent(provider=ScriptedProvider(["one", "two", "three"]), recorder=recorder)
    agent.run("a")
    agent.run("b")
    (both,) = recorder.flush_changes()
    assert [r.messages[0].text for r in both.loops] == ["a", "b"]
    assert recorder.flush_changes() == []
    agent.messages = [*agent.messages, UserMessage.from_text("c")]
    agent.continue_loop().result()  # a continuation: the new loop, and its parent gains a child
    (changed,) = recorder.flush_changes()
    assert [r.loop_id for r in changed.loops] == [both.loops[1].loop_id, agent.last_loop_id]
    assert changed.loops[0].children_loop_ids == [agent.last_loop_id]
    assert changed.last_active_at >= both.last_active_at and changed.formation == both.formation


def test_requeue_hands_a_failed_save_out_again():
    recorder = SessionRecorder()
    agent = Agent(provider=ScriptedProvider(["one"]), recorder=recorder)
    agent.run("a")
    (first,) = recorder.flush_changes()
    recorder.requeue(first)
    (again,) = recorder.flush_changes()
    assert again.loops == first.loops


def test_a_session_taken_back_is_not_handed_out_until_it_changes():
    recorder = SessionRecorder()
    agent = Agent(provider=ScriptedProvider(["one", "two"]), recorder=recorder)
    agent.run("a")
    (stored,) = recorder.flush()
    later = SessionRecorder()
    assert later.continue_session(stored) and later.holds(stored.session_id)
    assert later.flush_changes() == [] and later.flush() == []
    resumed = Agent(provider=ScriptedProvider(["two"]), recorder=later)
    resumed.restore(later.branch_from(stored.loops[0].loop_id))
    resumed.run("b")
    (changed,) = later.flush_changes()
    assert [r.messages[0].text for r in changed.loops] == ["b"]
    assert changed.loops[0].history.after_loop_id == stored.loops[0].loop_id


def test_a_loop_id_the_recorder_holds_is_not_taken_again_both_runs_are_kept(caplog):
    recorder = SessionRecorder()
    agent = Agent(provider=ScriptedProvider(["one", "two"]), recorder=recorder)
    agent.run("a")
    loop_id = agent.last_loop_id
    agent._loop_counters.clear()  # as if restored from an old checkpoint without the store
    with caplog.at_level(logging.ERROR, logger="phi.session"):
        agent.run("b")
    assert agent.last_loop_id != loop_id and agent.last_loop_id.endswith(".2")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    (session,) = recorder.sessions()
    assert [r.messages[0].text for r in session.loops] == ["a", "b"]
    assert agent.next_loop_id().endswith(".3")  # the counters moved past the id the run got


def test_noted_histories_of_runs_that_never_start_are_bounded():
    recorder = SessionRecorder()
    for n in range(PENDING_HISTORIES + 50):
        recorder.note_history([f"never.{n}"], [], None)
    assert len(recorder._histories) == PENDING_HISTORIES
