"""Branches in other processes: a process pool and a Dask cluster (SPEC EVAL-7, EVAL-8, EVAL-2, EVAL-4).

Every test runs against three executors: ``threads`` (a ThreadPoolExecutor wrapped in
RemoteBranches: the whole remote path — pickling, relay, handshake — inside this process),
``processes`` (a spawn-started ProcessPoolExecutor: nothing is shared but what is pickled) and
``dask`` (a ``distributed.LocalCluster`` of two worker processes, through ``client.get_executor()``;
skipped when ``distributed`` is not installed). A remote run must select, stream and record what
the same run does in this process.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import threading
import time
from typing import Any, Iterator

import pytest
import remote_helpers
from evaluation_helpers import branch, fresh_context, prompts, reply, run_parallel
from remote_helpers import HANG, mixed_configs, normalise

from phi import Agent, ScriptedProvider
from phi.concurrency.cancel import CancellationToken
from phi.evaluation import (
    PickFirstEvaluation,
    RemoteBranchError,
    RemoteBranches,
    TokenEfficientEvaluation,
    WorkerLost,
    merge_selected,
)
from phi.evaluation.branch import NOT_STARTED
from phi.evaluation.relay import Relay, RelayRefused, open_link
from phi.session import LoopStatus, SessionRecorder
from phi.session.model import session_to_json
from phi.types import AssistantMessage, RunOutcome, StopReason, TextContent, UserMessage, message_to_json

TIMEOUT = 60.0


@pytest.fixture(scope="module")
def process_pool() -> Iterator[concurrent.futures.ProcessPoolExecutor]:
    pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    list(pool.map(int, range(4)))  # both workers up
    yield pool
    pool.shutdown()


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    distributed = pytest.importorskip(
        "distributed", reason="Dask distributed is not installed (it is a test extra: pip install -e .[test])")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(params=["threads", "processes", "dask"])
def executor(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "threads":
        pool = concurrent.futures.ThreadPoolExecutor(4)
        yield RemoteBranches(pool)
        pool.shutdown()
    elif request.param == "processes":
        yield request.getfixturevalue("process_pool")
    else:
        yield request.getfixturevalue("dask_client").get_executor()


def phi_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(("phi-branch", "phi-relay")))


def shapes(events: list, loop_id: str) -> list[tuple]:
    """One branch's events without ids and times: type, delta, announced text."""
    out = []
    for e in events:
        if getattr(e, "loop_id", None) == loop_id:
            delta = e.delta.delta if e.type == "MessageUpdate" else None
            out.append((e.type, delta, getattr(getattr(e, "message", None), "text", None)))
    return out


def recorded_run(executor: Any) -> dict[str, Any]:
    """The mixed configs run through ``executor`` (None: in this process), recorded."""
    recorder = SessionRecorder()
    events: list = []

    def sink(event: Any) -> None:
        events.append(event)
        recorder.on_event(event)

    history = [UserMessage.from_text("before"), AssistantMessage([TextContent("earlier")])]
    context = fresh_context(system_prompt="sys", messages=list(history),
                            tools=[remote_helpers.shout, remote_helpers.counter])
    run = run_parallel(prompts("go"), mixed_configs(), TokenEfficientEvaluation(), context=context, sink=sink,
                       timeout=TIMEOUT, executor=executor)
    assert run.error is None, run.error
    ids = {context.session_id: "<session>", "ag": "<agent>"}
    return {"history": history, "result": run.result, "events": events, "ids": ids,
            "sessions": [normalise(session_to_json(s), ids) for s in recorder.sessions()]}


def summary(run: dict[str, Any]) -> dict[str, Any]:
    result, ids = run["result"], run["ids"]
    outcomes = [(normalise(o.loop_id, ids), o.outcome, o.stop_reason, o.error, o.usage, o.original_context_len,
                 type(o.exception).__name__, [normalise(message_to_json(m), ids) for m in o.new_messages])
                for o in result.outcomes]
    merged = [normalise(message_to_json(m), ids) for m in merge_selected(run["history"], result)]
    streams = [shapes(run["events"], o.loop_id) for o in result.outcomes]
    return {"selected": (result.selected_config_index, result.reason, result.evaluation_usage),
            "outcomes": outcomes, "merged": merged, "streams": streams, "sessions": run["sessions"]}


def test_a_remote_run_selects_streams_and_records_what_an_in_process_run_does(executor):
    here, there = recorded_run(None), recorded_run(executor)
    expected, got = summary(here), summary(there)
    assert got["selected"] == expected["selected"] and expected["selected"][0] == 4
    assert got["outcomes"] == expected["outcomes"]
    assert got["streams"] == expected["streams"]
    assert got["merged"] == expected["merged"]
    assert got["sessions"] == expected["sessions"] and len(got["sessions"]) == 1
    outcomes = there["result"].outcomes
    assert outcomes[3].error == "RuntimeError: hook refused" and isinstance(outcomes[3].exception, RuntimeError)
    assert outcomes[1].outcome == RunOutcome.ERROR and "bad key" in outcomes[1].error
    assert outcomes[0].context.messages[0] is there["history"][0]  # rebuilt on this process's history
    events = there["events"]
    assert events[0].type == "ParallelLoopStart" and events[-1].type == "ParallelLoopEnd"
    assert phi_threads() == []


def test_remote_events_stream_live_and_cancel_reaches_running_branches(executor):
    cancel = CancellationToken()
    streamed: set[str] = set()

    def sink(event: Any) -> None:
        if event.type == "MessageUpdate":
            streamed.add(event.loop_id)  # the branch is still running: it hangs until cancelled
            if len(streamed) == 2:
                cancel.cancel()

    configs = [branch([HANG], "a"), branch([HANG], "b")]
    began = time.monotonic()
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), cancel=cancel, sink=sink, timeout=TIMEOUT,
                       executor=executor)
    assert run.error is None and time.monotonic() - began < 20
    assert [(o.outcome, o.stop_reason, o.text) for o in run.result.outcomes] == \
        [(RunOutcome.ABORTED, StopReason.ABORTED, "partial")] * 2
    assert len(run.of("AgentEnd")) == 2 and run.types[-1] == "ParallelLoopEnd"
    assert run.sink_threads == {run.caller_thread}
    assert phi_threads() == []


def test_a_branch_cancel_aborts_one_remote_branch(executor):
    tokens = [CancellationToken(), CancellationToken()]

    def sink(event: Any) -> None:
        if event.type == "MessageUpdate" and event.loop_id.endswith(".slow.1"):
            tokens[0].cancel()

    configs = [branch([HANG], "slow"), branch([reply("quick", 9)], "quick")]
    run = run_parallel(prompts("q"), configs, TokenEfficientEvaluation(), sink=sink, branch_cancels=tokens,
                       context=fresh_context(), timeout=TIMEOUT, executor=executor)
    slow, quick = run.result.outcomes
    assert slow.outcome == RunOutcome.ABORTED and slow.text == "partial"
    assert quick.succeeded and run.result.selected_config_index == 1 and not tokens[1].is_cancelled()


def test_a_remote_branch_cancelled_before_it_started_never_starts(executor):
    cancel = CancellationToken()
    recorder = SessionRecorder()

    def sink(event: Any) -> None:
        recorder.on_event(event)
        if event.type == "MessageUpdate":
            cancel.cancel()

    context = fresh_context()
    configs = [branch([HANG], "first"), branch([reply("second")], "second")]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), cancel=cancel, sink=sink, context=context,
                       max_workers=1, timeout=TIMEOUT, executor=executor)
    first, second = run.result.outcomes
    assert first.outcome == RunOutcome.ABORTED and first.text == "partial"
    assert (second.outcome, second.error, second.exception) == (RunOutcome.ABORTED, NOT_STARTED, None)
    assert [m.text for m in second.new_messages] == ["q"] and second.context.messages[-1].text == "q"
    assert run.of_loop(second.loop_id) == []  # it emitted nothing
    assert recorder.get_loop(second.loop_id).status is LoopStatus.ABORTED

    already = CancellationToken()
    already.cancel()
    run = run_parallel(prompts("q"), [branch([reply("a")], "a")], PickFirstEvaluation(), cancel=already,
                       timeout=TIMEOUT, executor=executor)
    assert run.types == ["ParallelLoopStart", "ParallelLoopEnd"]
    assert run.result.outcomes[0].error == NOT_STARTED


def test_a_failing_sink_aborts_the_remote_branches_and_is_re_raised(executor):
    seen: list[str] = []

    def sink(event: Any) -> None:
        seen.append(event.type)
        if event.type == "MessageUpdate":
            raise ValueError("consumer broke")

    run = run_parallel(prompts("q"), [branch([HANG], "a"), branch([HANG], "b")], PickFirstEvaluation(), sink=sink,
                       timeout=TIMEOUT, executor=executor)
    assert isinstance(run.error, ValueError) and str(run.error) == "consumer broke"
    assert seen.count("MessageUpdate") == 1
    assert phi_threads() == []


def test_a_worker_that_cannot_reach_the_relay_fails_its_branch(executor):
    inner = executor.executor if isinstance(executor, RemoteBranches) else executor
    unreachable = RemoteBranches(inner, advertise_host="127.0.0.2", connect_timeout=5)  # nobody listens there
    run = run_parallel(prompts("q"), [branch([reply("a")], "a")], PickFirstEvaluation(), timeout=TIMEOUT,
                       executor=unreachable)
    outcome = run.result.outcomes[0]
    assert isinstance(outcome.exception, RemoteBranchError) and "could not reach the caller's relay" in outcome.error
    assert outcome.outcome is RunOutcome.ERROR and outcome.error.startswith("it never started, its executor failed it: ")
    assert [m.text for m in run.result.messages] == ["q"]


def test_agent_run_parallel_in_other_processes_keeps_the_winner_and_records_the_same(executor):
    def run_agent(executor: Any) -> tuple[list, list, Any]:
        agent = Agent(provider=ScriptedProvider([]), tools=[remote_helpers.shout], recorder=SessionRecorder(),
                      agent_id="ag")
        variants = [{"provider": ScriptedProvider(remote_helpers.tool_then_answer(0, 30)), "config_id": "a"},
                    {"provider": ScriptedProvider(remote_helpers.tool_then_answer(1, 20)), "config_id": "b"}]
        result = agent.run_parallel("go", variants, TokenEfficientEvaluation(), timeout=TIMEOUT, executor=executor,
                                    max_workers=2)
        ids = {agent.session_id: "<session>"}
        history = [normalise(message_to_json(m), ids) for m in agent.messages]
        return history, [normalise(session_to_json(s), ids) for s in agent.recorder.sessions()], result

    here, there = run_agent(None), run_agent(executor)
    assert there[0] == here[0] and [m["role"] for m in there[0]] == ["user", "assistant", "toolResult", "assistant"]
    assert there[1] == here[1]
    assert there[2].selected_config_index == here[2].selected_config_index == 1


def test_agent_abort_reaches_remote_branches_and_the_agent_goes_idle(executor):
    agent = Agent(provider=ScriptedProvider([]))
    streamed = threading.Event()
    seen: set[str] = set()

    def on_event(event: Any) -> None:
        if event.type == "MessageUpdate":
            seen.add(event.loop_id)
            if len(seen) == 2:
                streamed.set()

    agent.subscribe(on_event)
    variants = [{"provider": ScriptedProvider([HANG]), "config_id": c} for c in ("a", "b")]
    stream = agent.prompt_parallel("q", variants, executor=executor)
    assert streamed.wait(TIMEOUT)
    agent.abort()
    result = stream.result(timeout=TIMEOUT)
    assert {o.outcome for o in result.outcomes} == {RunOutcome.ABORTED}
    assert not agent.is_streaming and [m.role for m in agent.messages] == ["user", "assistant"]
    assert phi_threads() == []


def test_max_workers_caps_remote_branches_too(executor):
    active: set[str] = set()
    peak = [0]

    def sink(event: Any) -> None:
        if event.type == "AgentStart":
            active.add(event.loop_id)
        elif event.type == "AgentEnd":
            active.discard(event.loop_id)
        peak[0] = max(peak[0], len(active))

    slow = {"blocks": [{"type": "text", "chunks": ["x"] * 3}], "chunk_delay_ms": 20}
    configs = [branch([slow], f"c{i}") for i in range(6)]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), sink=sink, max_workers=2, timeout=TIMEOUT,
                       executor=executor)
    assert run.error is None and all(o.succeeded for o in run.result.outcomes)
    assert peak[0] == 2


def test_a_worker_that_dies_fails_its_branch_not_the_run():
    pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    configs = [branch([remote_helpers.die], "dies"), branch([reply("later")], "later")]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), max_workers=1, timeout=TIMEOUT, executor=pool)
    pool.shutdown()
    assert run.error is None and run.types[-1] == "ParallelLoopEnd"
    dead, later = run.result.outcomes
    assert isinstance(dead.exception, WorkerLost)  # the pool's account, when it gave one in time, is the cause
    assert dead.exception.cause is None or isinstance(dead.exception.cause, concurrent.futures.process.BrokenProcessPool)
    assert (dead.outcome, dead.stop_reason) == (RunOutcome.ERROR, StopReason.ERROR)
    assert [m.text for m in dead.new_messages] == ["q", ""]  # what its events announced, then the error reply
    assert dead.new_messages[-1].error_message == str(dead.exception) and "process died" in dead.error
    # the pool is broken: the branch queued behind the dead one never starts, and says so
    assert isinstance(later.exception, concurrent.futures.process.BrokenProcessPool)
    assert later.outcome is RunOutcome.ERROR and not later.succeeded
    assert later.error.startswith("it never started, its executor failed it: BrokenProcessPool: ")
    assert [m.text for m in later.new_messages] == ["q"]
    assert phi_threads() == []


class Handler:
    def __init__(self) -> None:
        self.hellos: list[int] = []

    def hello(self, index: int) -> bool:
        self.hellos.append(index)
        return index == 0

    def frame(self, index: int, payload: bytes) -> None:
        raise AssertionError("no frame was expected")

    def end(self, index: int) -> None:
        pass

    def eof(self, index: int) -> None:
        pass


def test_the_relay_admits_only_the_key_and_tells_a_cancelled_branch_to_stay_put():
    handler = Handler()
    relay = Relay("127.0.0.1", 0, handler)
    try:
        with pytest.raises(RelayRefused):
            open_link(relay.address, b"x" * 32, 0, 5)
        assert handler.hellos == []
        assert open_link(relay.address, relay.key, 1, 5) is None  # "stop": it never starts
        link = open_link(relay.address, relay.key, 0, 5)
        assert link is not None and handler.hellos == [1, 0]
        link.close()
    finally:
        relay.stop()
    with pytest.raises(OSError):
        open_link(relay.address, relay.key, 0, 5)


def test_phi_never_imports_dask():
    import subprocess
    import sys

    code = ("import sys, phi, phi.evaluation.parallel, phi.evaluation.remote, phi.evaluation.dispatch; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'ray')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_tool_the_worker_cannot_import_fails_its_branch_with_the_import_error(process_pool, tmp_path, monkeypatch):
    (tmp_path / "only_here.py").write_text(
        "from phi.tools.function_tool import tool\n\n\n@tool\ndef local_only(text: str) -> str:\n"
        "    \"\"\"Only this process has it.\n\n    Args:\n        text: anything.\n    \"\"\"\n    return text\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # after the pool's workers started: they do not have it
    import only_here

    run = run_parallel(prompts("q"), [branch([reply("a")], "a")], PickFirstEvaluation(), timeout=TIMEOUT,
                       context=fresh_context(tools=[only_here.local_only]), executor=process_pool)
    outcome = run.result.outcomes[0]
    assert isinstance(outcome.exception, ModuleNotFoundError) and "only_here" in outcome.error
    assert outcome.outcome is RunOutcome.ERROR and [m.text for m in outcome.new_messages] == ["q"]
    assert run.types == ["ParallelLoopStart", "ParallelLoopEnd"]
