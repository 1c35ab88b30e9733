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
import functools
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
from phi.evaluation.parallel import agent_loop_parallel
from phi.loop.config import AgentContext, AgentLoopConfig
from phi.session import JsonDirStore, LoopStatus, SessionRecorder
from phi.types import AssistantMessage, RunOutcome, StopReason, ToolResultMessage, UserMessage

TIMEOUT = 120.0
SPAWN = multiprocessing.get_context("spawn")


def blocked_call(marker: Path, call_id: str = "t1") -> dict[str, Any]:
    """A scripted reply calling the tool that reports its process id in ``marker`` and blocks."""
    return {"blocks": [{"type": "text", "chunks": ["working "]},
                       {"type": "toolCall", "id": call_id, "name": "wait_to_be_killed",
                        "arguments": {"marker": str(marker)}}],
            "usage": {"total_tokens": 3}}


def kill_when_started(*markers: Path, sig: int = signal.SIGKILL, pids: list[int] | None = None) -> threading.Thread:
    """A thread that waits for each marker file (written by a branch that started its tool call or
    hook) and sends the process it names ``sig`` (SIGKILL; SIGSTOP freezes it: the caller kills it
    in its cleanup, ``pids`` lists the processes signalled)."""
    def body() -> None:
        for marker in markers:
            deadline = time.monotonic() + TIMEOUT
            while not marker.exists():  # the condition waited for: the branch is inside its tool
                if time.monotonic() > deadline:
                    return  # the test fails on what the run reports
                time.sleep(0.02)
            pid = int(marker.read_text())
            os.kill(pid, sig)
            if pids is not None:
                pids.append(pid)

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


# --------------------------------------------------------------------------- a worker that never answers


def thaw(pids: list[int]) -> None:
    """Cleanup of a test that froze processes with SIGSTOP: kill them (SIGCONT lets the kill land)."""
    for pid in pids:
        for sig in (signal.SIGKILL, signal.SIGCONT):
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def phi_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("phi-relay")]


def test_an_abort_ends_a_branch_whose_stopped_worker_never_answers(tmp_path):
    """A SIGSTOPped pool worker keeps its connection open and its future pending: the abort is one
    byte nobody reads. The run still ends (EVAL-4): the branch is lost once its abort's wait passed."""
    agent, recorder, store = recording_agent(tmp_path)
    marker, frozen = tmp_path / "pid", []
    fine_ended = threading.Event()
    agent.subscribe(lambda e: fine_ended.set() if e.type == "AgentEnd" and ".fine." in e.loop_id else None)
    pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=SPAWN)
    try:
        freezer = kill_when_started(marker, sig=signal.SIGSTOP, pids=frozen)
        stream = agent.prompt_parallel("go", [
            {"provider": ScriptedProvider([blocked_call(marker)]), "config_id": "doomed"},
            {"provider": ScriptedProvider(["fine"]), "config_id": "fine"}], PickFirstEvaluation(), executor=pool)
        freezer.join()
        assert frozen and fine_ended.wait(TIMEOUT)  # the doomed worker is stopped inside its tool call
        agent.abort()
        result = stream.result(timeout=30)  # bounded: before, it never came
    finally:
        thaw(frozen)
        pool.shutdown()
    lost, fine = result.outcomes
    wait = agent.config.tool_abort_grace_ms / 1000 + 0.5
    assert isinstance(lost.exception, WorkerLost) and lost.exception.cause is None and not lost.exception.restarted
    assert f"was lost: it did not answer the abort within {wait:g} s (its process is stopped" in lost.error
    assert fine.succeeded and result.selected_config_index == 1
    assert not agent.is_streaming and phi_threads() == []
    assert recorder.get_loop(lost.loop_id).status is LoopStatus.ERROR
    assert {loop.loop_id: loop.status for loop in store.load(agent.session_id).loops} == \
        {lost.loop_id: LoopStatus.ERROR, fine.loop_id: LoopStatus.COMPLETED}


class RetryingExecutor(concurrent.futures.Executor):
    """Runs each task in a process of its own; ``retry()`` runs the last task again in a new process
    and completes its future with that run's result — what Dask does when it takes a worker that
    stopped answering (a frozen machine, its connections still open) for lost."""

    def __init__(self) -> None:
        self.processes: list[Any] = []
        self.task: tuple[Callable[..., Any], tuple[Any, ...], concurrent.futures.Future[Any]] | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        process = SPAWN.Process(target=fn, args=args, daemon=True)
        process.start()
        self.processes.append(process)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_running_or_notify_cancel()
        self.task = (fn, args, future)
        return future

    def retry(self) -> None:
        assert self.task is not None
        fn, args, future = self.task
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
            future.set_result(pool.submit(fn, *args).result(TIMEOUT))


def test_a_rerun_of_a_branch_whose_first_worker_froze_ends_it_as_lost(tmp_path, monkeypatch):
    """The executor runs the branch again while its first worker, frozen, still holds its connection:
    phi refuses the second run and takes it as the executor's account that the first worker is gone."""
    monkeypatch.setattr(dispatch, "EOF_GRACE_S", 0.5)  # how long the frozen first run may still speak
    agent, recorder, store = recording_agent(tmp_path)
    marker, frozen = tmp_path / "pid", []
    executor = RetryingExecutor()
    try:
        freezer = kill_when_started(marker, sig=signal.SIGSTOP, pids=frozen)
        stream = agent.prompt_parallel("go", [{"provider": ScriptedProvider([blocked_call(marker)]),
                                               "config_id": "doomed"}], PickFirstEvaluation(), executor=executor)
        freezer.join()
        assert frozen
        executor.retry()  # the second run connects, is told not to start and returns at once
        result = stream.result(timeout=30)  # bounded: before, it never came
    finally:
        thaw(frozen)
    lost = result.outcomes[0]
    assert isinstance(lost.exception, WorkerLost) and lost.exception.restarted and lost.exception.cause is None
    assert lost.error == (f"WorkerLost: the worker running branch {lost.loop_id} was lost: the executor started the "
                          "branch again (it took the worker running it for lost), which phi refused (a branch never "
                          "runs twice)")
    assert result.reason == "no branch succeeded: the first branch"
    assert not agent.is_streaming and phi_threads() == []
    check_recorded(recorder, store, agent, lost.loop_id, str(lost.exception))


def check_recorded(recorder: SessionRecorder, store: JsonDirStore, agent: Agent, loop_id: str, reason: str) -> None:
    record = recorder.get_loop(loop_id)
    assert record.status is LoopStatus.ERROR and record.messages[0].text == "go"
    assert record.messages[-1].error_message == reason
    assert_valid_conversation(record.messages)
    assert store.load(agent.session_id).loops[0].messages == record.messages
    assert_valid_conversation(agent.messages)


def test_an_abort_cuts_short_the_wait_for_an_executor_that_never_tells(tmp_path, monkeypatch):
    """A worker killed under an executor that says nothing: phi waits EOF_GRACE_S for its account —
    unless the run is cancelled, which ends that wait at once and says so."""
    monkeypatch.setattr(dispatch, "EOF_GRACE_S", TIMEOUT)
    agent, recorder, store = recording_agent(tmp_path)
    marker = tmp_path / "pid"
    executor = SilentExecutor()
    killer = kill_when_started(marker)
    stream = agent.prompt_parallel("go", [{"provider": ScriptedProvider([blocked_call(marker)]), "config_id": "x"}],
                                   PickFirstEvaluation(), executor=executor)
    killer.join()
    executor.processes[0].join(TIMEOUT)  # dead: its connection is closed
    agent.abort()
    result = stream.result(timeout=30)  # before, the run waited the whole EOF_GRACE_S
    lost = result.outcomes[0]
    assert isinstance(lost.exception, WorkerLost)
    assert "the run was cancelled before the executor said what happened" in lost.error
    assert not agent.is_streaming and phi_threads() == []
    check_recorded(recorder, store, agent, lost.loop_id, str(lost.exception))


# --------------------------------------------------------------------------- what a lost branch keeps


@pytest.mark.parametrize("kind", ["pool", "dask"])
def test_a_worker_that_dies_before_the_branch_announced_its_prompt_keeps_the_prompt(tmp_path, monkeypatch, kind,
                                                                                        request):
    """Killed inside the first before_turn hook (after go, before the prompt's MessageEnd): the lost
    branch's new messages, the agent's history and the recorded loop still hold the user's prompt."""
    monkeypatch.setattr(dispatch, "EOF_GRACE_S", TIMEOUT / 2)
    agent, recorder, store = recording_agent(tmp_path)
    agent.config.provider = ScriptedProvider(["hello"])
    agent.run("first question", timeout=TIMEOUT)
    marker = tmp_path / "pid"
    if kind == "dask":
        executor = request.getfixturevalue("dask_client").get_executor()
        pool = None
    else:
        executor = pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=SPAWN)
    try:
        killer = kill_when_started(marker)
        result = agent.run_parallel("PLEASE KEEP THIS PROMPT", [
            {"provider": ScriptedProvider(["answer"]), "config_id": "guarded",
             "before_turn": functools.partial(remote_helpers.block_turn, str(marker))}],
            PickFirstEvaluation(), timeout=TIMEOUT, executor=executor)
        killer.join()
    finally:
        if pool is not None:
            pool.shutdown()
    lost = result.outcomes[0]
    assert isinstance(lost.exception, WorkerLost)
    assert [(m.role, m.text) for m in lost.new_messages] == [("user", "PLEASE KEEP THIS PROMPT"), ("assistant", "")]
    assert [m.text for m in agent.messages[:3]] == ["first question", "hello", "PLEASE KEEP THIS PROMPT"]
    assert agent.messages[3].error_message == str(lost.exception)
    stored = {loop.loop_id: loop for loop in store.load(agent.session_id).loops}[lost.loop_id]
    assert stored.status is LoopStatus.ERROR and [m.role for m in stored.messages] == ["user", "assistant"]
    assert stored.messages[0].text == "PLEASE KEEP THIS PROMPT"


def test_a_branch_whose_agent_end_came_before_its_worker_died_is_a_finished_branch(tmp_path):
    """Killed in after_loop (its AgentEnd sent, its end marker and report not): the branch ended, as
    its events said — completed, selectable, recorded Completed — not lost."""
    agent, recorder, store = recording_agent(tmp_path)
    marker = tmp_path / "pid"
    pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=SPAWN)
    try:
        killer = kill_when_started(marker)
        result = agent.run_parallel("go", [
            {"provider": ScriptedProvider(["doomed answer"]), "config_id": "doomed",
             "after_loop": functools.partial(remote_helpers.block_after_loop, str(marker))},
            {"provider": ScriptedProvider(["other answer"]), "config_id": "other"}],
            PickFirstEvaluation(), timeout=TIMEOUT, executor=pool, max_workers=1)
        killer.join()
    finally:
        pool.shutdown()
    ended, other = result.outcomes
    assert ended.exception is None and ended.outcome is RunOutcome.COMPLETED and ended.succeeded
    assert [m.text for m in ended.new_messages] == ["go", "doomed answer"]
    assert result.selected_config_index == 0 and result.reason == "first successful branch"
    assert recorder.get_loop(ended.loop_id).status is LoopStatus.COMPLETED
    assert [m.text for m in agent.messages] == ["go", "doomed answer"]
    # the pool broke with its worker: the branch queued behind it never started, and says so (item 5)
    assert isinstance(other.exception, concurrent.futures.process.BrokenProcessPool)
    assert other.outcome is RunOutcome.ERROR and other.error.startswith("it never started, its executor failed it: ")
    assert [m.text for m in other.new_messages] == ["go"]
    stored = {loop.loop_id: loop for loop in store.load(agent.session_id).loops}
    assert stored[ended.loop_id].status is LoopStatus.COMPLETED
    assert stored[other.loop_id].status is LoopStatus.ERROR and [m.text for m in stored[other.loop_id].messages] == ["go"]


def test_a_recorder_given_the_events_directly_records_a_lost_branch_whole(tmp_path):
    """agent_loop_parallel with recorder.on_event as the sink (no Agent): the lost branch is recorded
    with its messages and the reason, from ParallelLoopEnd.unended (SESS-3)."""
    recorder = SessionRecorder()
    marker = tmp_path / "pid"
    pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=SPAWN)
    try:
        killer = kill_when_started(marker)
        config = AgentLoopConfig(provider=ScriptedProvider([blocked_call(marker)]), config_id="doomed")
        ends: list[Any] = []
        result = agent_loop_parallel([UserMessage.from_text("go")], AgentContext(tools=[remote_helpers.wait_to_be_killed]),
                                     [config], PickFirstEvaluation(),
                                     lambda e: (recorder.on_event(e), ends.append(e) if e.type == "ParallelLoopEnd" else None),
                                     executor=pool)
        killer.join()
    finally:
        pool.shutdown()
    lost = result.outcomes[0]
    assert isinstance(lost.exception, WorkerLost)
    record = recorder.get_loop(lost.loop_id)
    assert record.status is LoopStatus.ERROR and record.messages == lost.new_messages
    assert [m.role for m in record.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert record.messages[-1].error_message == str(lost.exception)
    assert_valid_conversation(record.messages)
    assert [(e.loop_id, e.outcome) for e in ends[0].unended] == [(lost.loop_id, RunOutcome.ERROR)]
