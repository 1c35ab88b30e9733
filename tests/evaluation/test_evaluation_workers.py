"""agent_loop_parallel runs at most ``max_workers`` branches at once, on phi's own threads or the
caller's thread pool (SPEC EVAL-7, EVAL-2, EVAL-4)."""

from __future__ import annotations

import concurrent.futures
import threading

import pytest
from evaluation_helpers import branch, branch_threads, fresh_context, prompts, reply, run_parallel

from phi.concurrency.cancel import CancellationToken
from phi.errors import ConfigError
from phi.evaluation import PickFirstEvaluation, RemoteBranches, agent_loop_parallel
from phi.evaluation.dispatch import DEFAULT_MAX_WORKERS
from phi.loop.config import AgentContext
from phi.types import RunOutcome


def slow(text: str, chunks: int = 4, delay_ms: float = 5) -> dict:
    """A reply streamed in ``chunks`` chunks, ``delay_ms`` apart: branches overlap while it plays."""
    return {"blocks": [{"type": "text", "chunks": [text] * chunks}], "chunk_delay_ms": delay_ms}


class Watch:
    """A sink that tracks, at every event, the threads alive and the branches between AgentStart and AgentEnd."""

    def __init__(self) -> None:
        self.baseline = threading.active_count()
        self.peak_threads = 0
        self.active: set[str] = set()
        self.peak_active = 0
        self.order: list[str] = []

    def __call__(self, event) -> None:
        self.peak_threads = max(self.peak_threads, threading.active_count())
        if event.type == "AgentStart":
            self.active.add(event.loop_id)
            self.order.append(event.loop_id)
        elif event.type == "AgentEnd":
            self.active.discard(event.loop_id)
        self.peak_active = max(self.peak_active, len(self.active))


def test_sixty_four_configs_never_start_sixty_five_threads():
    configs = [branch([slow(f"b{i}")], f"c{i}") for i in range(64)]
    watch = Watch()
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), sink=watch, timeout=60)
    assert run.error is None
    assert all(o.succeeded for o in run.result.outcomes) and len(run.result.outcomes) == 64
    assert DEFAULT_MAX_WORKERS == 16
    assert watch.peak_active == 16  # the default cap, reached: the branches do overlap
    # the test's own runner thread is in the baseline; the branches add at most 16
    assert watch.peak_threads <= watch.baseline + 1 + DEFAULT_MAX_WORKERS, (watch.baseline, watch.peak_threads)
    assert branch_threads() == []


def test_max_workers_caps_the_branches_running_at_once():
    configs = [branch([slow(f"b{i}")], f"c{i}") for i in range(10)]
    watch = Watch()
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), sink=watch, max_workers=3)
    assert run.error is None and all(o.succeeded for o in run.result.outcomes)
    assert watch.peak_active == 3
    assert watch.peak_threads <= watch.baseline + 1 + 3


def test_one_worker_runs_the_branches_one_after_another_in_config_order():
    configs = [branch([slow(f"b{i}", chunks=2)], f"c{i}") for i in range(4)]
    context = fresh_context()
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), context=context, max_workers=1)
    loops = [e.loop_id for e in run.events[1:-1]]
    runs = [loop for i, loop in enumerate(loops) if i == 0 or loops[i - 1] != loop]
    assert runs == [f"{context.session_id}.c{i}.1" for i in range(4)]  # each branch's events in one block


def test_max_workers_and_executor_are_checked_before_anything_runs():
    config = branch([reply("a")])
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(ConfigError, match="max_workers must be a positive integer"):
            agent_loop_parallel(prompts("q"), AgentContext(), [config], PickFirstEvaluation(), None, max_workers=bad)
    with pytest.raises(ConfigError, match="executor must be a concurrent.futures.Executor"):
        agent_loop_parallel(prompts("q"), AgentContext(), [config], PickFirstEvaluation(), None, executor=object())
    pool = concurrent.futures.ThreadPoolExecutor(1)
    for settings, message in (({"relay_host": ""}, "relay_host"), ({"relay_port": 70000}, "relay_port"),
                              ({"connect_timeout": 0}, "connect_timeout")):
        with pytest.raises(ConfigError, match=message):
            RemoteBranches(pool, **settings)
    with pytest.raises(ConfigError, match="must be a concurrent.futures.Executor"):
        RemoteBranches("dask")
    with pytest.raises(ConfigError, match="cannot listen on"):
        agent_loop_parallel(prompts("q"), AgentContext(), [config], PickFirstEvaluation(), None,
                            executor=RemoteBranches(pool, relay_host="203.0.113.1"))
    pool.shutdown()
    assert config.provider.calls == []


def test_the_callers_thread_pool_runs_the_branches_and_stays_open():
    seen: list[str] = []

    def before_turn(messages, turn_index):
        seen.append(threading.current_thread().name)

    pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="mine")
    configs = [branch([reply(f"b{i}", i + 1)], f"c{i}", before_turn=before_turn) for i in range(5)]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), executor=pool)
    assert run.error is None and [o.text for o in run.result.outcomes] == [f"b{i}" for i in range(5)]
    assert len(seen) == 5 and all(name.startswith("phi-branch-") for name in seen)  # named while they run
    assert {t.name for t in threading.enumerate() if t.name.startswith("mine")} <= {"mine_0", "mine_1"}
    assert pool.submit(lambda: 42).result() == 42  # not shut down: it is the caller's
    assert run.result.outcomes[0].context.messages[0] is run.result.outcomes[1].context.messages[0]
    pool.shutdown()


def test_a_shut_down_pool_fails_the_branches_not_the_run():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    pool.shutdown()
    configs = [branch([reply("a")], "a"), branch([reply("b")], "b")]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), executor=pool)
    assert run.error is None
    assert [o.outcome for o in run.result.outcomes] == [RunOutcome.ERROR, RunOutcome.ERROR]  # never started: failed
    assert all("cannot schedule new futures" in o.error for o in run.result.outcomes)
    assert [m.text for m in run.result.messages] == ["q"]  # the prompt is kept
    assert run.types == ["ParallelLoopStart", "ParallelLoopEnd"]


def test_cancel_with_branches_still_waiting_ends_them_all_aborted():
    cancel = CancellationToken()

    def sink(event):
        if event.type == "MessageUpdate":
            cancel.cancel()

    hang = {"blocks": [{"type": "text", "chunks": ["partial", "more"]}], "hang_after_chunks": 1}
    configs = [branch([hang], f"c{i}") for i in range(4)]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), cancel=cancel, sink=sink, max_workers=2)
    assert run.error is None
    assert [o.outcome for o in run.result.outcomes] == [RunOutcome.ABORTED] * 4
    # in this process a waiting branch still runs, already cancelled: a complete run that calls no model
    assert len(run.of("AgentEnd")) == 4
    assert [c.provider.remaining for c in configs[2:]] == [1, 1]
    assert branch_threads() == []
