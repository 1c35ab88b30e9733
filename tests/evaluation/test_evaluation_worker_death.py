"""A worker process that dies while it runs a branch (SPEC EVAL-4, EVAL-8, SESS-3, SESS-7; issue 31 item 2).

Each test kills a real process with SIGKILL while its branch is inside a tool call: the tool
(``remote_helpers.wait_to_be_killed``) writes its process id to a file and blocks, the test waits
for the file and kills that process — no timing is involved. Then the branch must be a recorded
failed loop saying what happened, the session must settle and be saved (also by later runs), and the
agent's history must stay a valid conversation.

``EOF_GRACE_S`` (how long a cut-off branch waits for the executor's account of the death) is raised
where a test checks that account, so a loaded machine cannot change what is reported.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import remote_helpers
from history_checks import assert_valid_conversation

from phi import Agent, ScriptedProvider
from phi.evaluation import PickFirstEvaluation, WorkerLost
from phi.evaluation import dispatch
from phi.session import JsonDirStore, LoopStatus, SessionRecorder
from phi.types import AssistantMessage, RunOutcome, StopReason, ToolResultMessage

TIMEOUT = 120.0
SPAWN = multiprocessing.get_context("spawn")


def blocked_call(marker: Path, call_id: str = "t1") -> dict[str, Any]:
    """A scripted reply calling the tool that reports its process id in ``marker`` and blocks."""
    return {"blocks": [{"type": "text", "chunks": ["working "]},
                       {"type": "toolCall", "id": call_id, "name": "wait_to_be_killed",
                        "arguments": {"marker": str(marker)}}],
            "usage": {"total_tokens": 3}}


def kill_when_started(*markers: Path) -> threading.Thread:
    """A thread that waits for each marker file (written by a branch that started its tool call) and
    kills the process it names with SIGKILL."""
    def body() -> None:
        for marker in markers:
            deadline = time.monotonic() + TIMEOUT
            while not marker.exists():  # the condition waited for: the branch is inside its tool
                if time.monotonic() > deadline:
                    return  # the test fails on what the run reports
                time.sleep(0.02)
            os.kill(int(marker.read_text()), signal.SIGKILL)

    thread = threading.Thread(target=body, name="test-killer", daemon=True)
    thread.start()
    return thread


def recording_agent(tmp_path: Path) -> tuple[Agent, SessionRecorder, JsonDirStore]:
    recorder, store = SessionRecorder(), JsonDirStore(tmp_path / "sessions")
    agent = Agent(provider=ScriptedProvider([]), tools=[remote_helpers.wait_to_be_killed], recorder=recorder,
                  store=store, agent_id="ag")
    return agent, recorder, store


def check_lost_branch(agent: Agent, recorder: SessionRecorder, store: JsonDirStore, loop_id: str,
                      error: WorkerLost) -> None:
    """The lost branch is an ended, failed loop with the reason, stored; the history is valid; a
    later run of the agent is stored too."""
    record = recorder.get_loop(loop_id)
    assert record is not None and record.status is LoopStatus.ERROR and record.ended_at is not None
    last = record.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason is StopReason.ERROR
    assert last.error_message == str(error)
    answered = [m for m in record.messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_call_id, m.is_error, m.content[0].text) for m in answered] == \
        [("t1", True, "Tool execution aborted.")]
    assert_valid_conversation(record.messages)

    stored = store.load(agent.session_id)  # the session settled, so the run's end saved it
    assert [(loop.loop_id, loop.status) for loop in stored.loops] == [(loop_id, LoopStatus.ERROR)]
    assert stored.loops[0].messages[-1].error_message == str(error)
    assert_valid_conversation(agent.messages)
    assert agent.messages[-1].error_message == str(error) and not agent.is_streaming

    agent.config.provider = ScriptedProvider(["after the loss"])
    result = agent.run("and now?", timeout=TIMEOUT)
    assert result.outcome is RunOutcome.COMPLETED
    later = store.load(agent.session_id)
    assert [loop.status for loop in later.loops] == [LoopStatus.ERROR, LoopStatus.COMPLETED]
    assert later.loops[1].loop_id == agent.last_loop_id
    assert_valid_conversation(agent.messages)
    assert agent.messages[-1].text == "after the loss"


def test_a_killed_process_pool_worker_fails_its_branch_as_a_recorded_loop_and_later_runs_save(tmp_path, monkeypatch):
    monkeypatch.setattr(dispatch, "EOF_GRACE_S", TIMEOUT / 2)  # the pool's BrokenProcessPool always comes first
    agent, recorder, store = recording_agent(tmp_path)
    marker = tmp_path / "pid"
    pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=SPAWN)
    try:
        killer = kill_when_started(marker)
        result = agent.run_parallel("go", [{"provider": ScriptedProvider([blocked_call(marker)]), "config_id": "doomed"}],
                                    PickFirstEvaluation(), timeout=TIMEOUT, executor=pool)
        killer.join()
    finally:
        pool.shutdown()
    lost = result.outcomes[0]
    error = lost.exception
    assert isinstance(error, WorkerLost) and isinstance(error.cause, concurrent.futures.process.BrokenProcessPool)
    assert error.__cause__ is error.cause and not error.restarted
    assert (lost.outcome, lost.stop_reason) == (RunOutcome.ERROR, StopReason.ERROR)
    assert lost.error == f"WorkerLost: {error}"
    assert f"the worker running branch {lost.loop_id} was lost: its process died (BrokenProcessPool: " in lost.error
    assert [m.role for m in lost.new_messages] == ["user", "assistant", "toolResult", "assistant"]
    check_lost_branch(agent, recorder, store, lost.loop_id, error)


@pytest.fixture
def dask_client() -> Iterator[Any]:
    distributed = pytest.importorskip(
        "distributed", reason="Dask distributed is not installed (it is a test extra: pip install -e .[test])")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        yield client


def test_a_killed_dask_worker_fails_its_branch_with_what_happened_not_as_never_started(tmp_path, monkeypatch,
                                                                                          dask_client):
    monkeypatch.setattr(dispatch, "EOF_GRACE_S", TIMEOUT / 2)  # Dask's retry of the task always comes first
    agent, recorder, store = recording_agent(tmp_path)
    marker = tmp_path / "pid"
    killer = kill_when_started(marker)
    result = agent.run_parallel("go", [{"provider": ScriptedProvider([blocked_call(marker)]), "config_id": "doomed"}],
                                PickFirstEvaluation(), timeout=TIMEOUT, executor=dask_client.get_executor())
    killer.join()
    lost = result.outcomes[0]
    error = lost.exception
    # Dask runs a task again when its worker died (KilledWorker only after several deaths): phi refuses
    # the second run, as the branch had started, and says so
    assert isinstance(error, WorkerLost) and error.restarted and error.cause is None
    assert lost.outcome is RunOutcome.ERROR and "cancelled before it started" not in lost.error
    assert f"the worker running branch {lost.loop_id} was lost: the executor started the branch again (it took " \
           "the worker running it for lost), which phi refused" in lost.error
    check_lost_branch(agent, recorder, store, lost.loop_id, error)


class SilentExecutor(concurrent.futures.Executor):
    """Runs each task in a process of its own and never reports anything back, like a cluster that
    lost a machine: its futures never complete."""

    def __init__(self) -> None:
        self.processes: list[Any] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        process = SPAWN.Process(target=fn, args=args, kwargs=kwargs, daemon=True)
        process.start()
        self.processes.append(process)
        return concurrent.futures.Future()


def test_when_every_worker_dies_and_the_executor_never_tells_the_run_still_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(dispatch, "EOF_GRACE_S", 0.5)  # how long to wait for an account that never comes
    agent, recorder, store = recording_agent(tmp_path)
    markers = [tmp_path / "pid-a", tmp_path / "pid-b"]
    executor = SilentExecutor()
    killer = kill_when_started(*markers)
    variants = [{"provider": ScriptedProvider([blocked_call(marker)]), "config_id": name}
                for marker, name in zip(markers, ("a", "b"))]
    result = agent.run_parallel("go", variants, PickFirstEvaluation(), timeout=TIMEOUT, executor=executor)
    killer.join()
    for process in executor.processes:
        process.join(TIMEOUT)
        assert process.exitcode == -signal.SIGKILL
    errors = [o.exception for o in result.outcomes]
    assert all(isinstance(e, WorkerLost) and e.cause is None and not e.restarted for e in errors)
    assert all("its connection to this process closed before the branch ended" in o.error for o in result.outcomes)
    assert result.selected_config_index == 0  # every branch failed: the first is kept, with what happened
    assert [recorder.get_loop(o.loop_id).status for o in result.outcomes] == [LoopStatus.ERROR] * 2
    stored = store.load(agent.session_id)
    assert sorted(loop.loop_id for loop in stored.loops) == sorted(o.loop_id for o in result.outcomes)
    assert_valid_conversation(agent.messages)
    assert agent.messages[-1].error_message == str(errors[0])


def test_a_branch_that_raises_in_this_process_is_recorded_as_failed_and_the_session_is_saved(tmp_path):
    recorder, store = SessionRecorder(), JsonDirStore(tmp_path / "sessions")
    agent = Agent(provider=ScriptedProvider([]), recorder=recorder, store=store, agent_id="ag")
    variants = [{"provider": ScriptedProvider(["never"]), "config_id": "hooked",
                 "before_turn": remote_helpers.refuse_turn},
                {"provider": ScriptedProvider(["fine"]), "config_id": "fine"}]
    result = agent.run_parallel("go", variants, PickFirstEvaluation(), timeout=TIMEOUT)
    raised, fine = result.outcomes
    assert isinstance(raised.exception, RuntimeError) and fine.succeeded and result.selected_config_index == 1
    stored = store.load(agent.session_id)
    assert {loop.loop_id: loop.status for loop in stored.loops} == \
        {raised.loop_id: LoopStatus.ERROR, fine.loop_id: LoopStatus.COMPLETED}
    assert [m.text for m in stored.loops[0].messages] == ["go"]


def test_a_recorder_given_the_events_directly_ends_every_branch_at_parallel_loop_end():
    from evaluation_helpers import branch, fresh_context, prompts, run_parallel

    recorder = SessionRecorder()
    configs = [branch(["never"], "hooked", before_turn=remote_helpers.refuse_turn), branch(["fine"], "fine")]
    run = run_parallel(prompts("go"), configs, PickFirstEvaluation(), context=fresh_context(), sink=recorder.on_event,
                       timeout=TIMEOUT)
    raised, fine = run.result.outcomes
    assert recorder.get_loop(raised.loop_id).status is LoopStatus.ERROR
    assert recorder.get_loop(fine.loop_id).status is LoopStatus.COMPLETED
    assert [s.session_id for s in recorder.flush()] == [run.result.selected.context.session_id]  # settled
