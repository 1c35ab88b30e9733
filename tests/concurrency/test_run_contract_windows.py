"""The windows issue 30 found in the run contract, each replayed deterministically under the simulator
(virtual time: a callback that "blocks 5 s" costs nothing, and nothing here depends on the machine).
Each scenario runs under several seeds, so under several interleavings of the same threads."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import pytest

from phi import Agent, FunctionTool, RunOutcome, ScriptedProvider, ToolExecution
from phi.concurrency import sync, workers
from phi.concurrency.cancel import CALLBACK_WAIT_S
from phi.agent.agent import SCHEDULING_SLACK_S
from phi.concurrency.simulator import Simulation

T = TypeVar("T")
SEEDS = range(8)
SCHEMA = {"type": "object", "properties": {}}


def simulate(main: Callable[[], T], seed: int, settle_s: float = 300.0) -> T:
    return Simulation(seed, settle_s=settle_s).run(main)


def calls(*names: str) -> dict[str, Any]:
    return {"blocks": [{"type": "toolCall", "id": f"c{i}", "name": n, "arguments": {}} for i, n in enumerate(names)]}


def tool(name: str, fn: Callable[[dict[str, Any], Any], object]) -> FunctionTool:
    return FunctionTool(name, name, SCHEMA, fn)


class _SlowStore:
    """A session store whose load() takes a while (a remote database, say)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def load(self, session_id: str) -> Any:
        from phi.session import NotFound

        sync.sleep(self.seconds)
        raise NotFound(session_id)

    def save(self, session: Any) -> None:
        pass


@pytest.mark.parametrize("seed", SEEDS)
def test_abort_cancels_every_tool_token_at_once_whatever_a_callback_does(seed: int):
    """Side effect after abort: tool A's cancellation callback blocks 5 s; tool B checks its token before
    each side effect. Once abort() has begun, B must do no side effect (SPEC CANCEL-1, CANCEL-3)."""

    def main() -> tuple[list[str], Any]:
        log: list[str] = []  # one thread runs at a time: the order of this list is the order of events

        def slow_to_cancel(args: dict[str, Any], ctx: Any) -> str:
            ctx.cancel.on_cancel(lambda: sync.sleep(5.0))
            ctx.cancel.wait(30.0)
            return "a"

        def careful(args: dict[str, Any], ctx: Any) -> str:
            for _ in range(400):
                if ctx.cancel.is_cancelled():
                    return "stopped"
                log.append("effect")
                sync.sleep(0.05)
            return "b"

        agent = Agent(provider=ScriptedProvider([calls("a", "b"), "done"]),
                      tools=[tool("a", slow_to_cancel), tool("b", careful)])
        stream = agent.prompt("go")
        sync.sleep(0.3)
        log.append("abort")
        agent.abort()
        return log, stream.result()

    log, result = simulate(main, seed)
    assert "effect" in log and "effect" not in log[log.index("abort"):], "a side effect came after abort() began"
    assert result.outcome == RunOutcome.ABORTED


@pytest.mark.parametrize("seed", SEEDS)
def test_a_run_ended_by_an_exception_abandons_the_tools_still_running(seed: int):
    """Hang by another road: a subscriber raises while a tool that ignores cancellation runs. Nobody waits
    for that tool any more, so its worker counts as abandoned, never as busy (else 256 of them would
    make every later tool call in the process wait for ever)."""

    def main() -> tuple[Any, Any]:
        def stubborn(args: dict[str, Any], ctx: Any) -> str:
            sync.sleep(60.0)
            return "late"

        def quick(args: dict[str, Any], ctx: Any) -> str:
            return "quick"

        def subscriber(event: Any) -> None:
            if event.type == "ToolExecutionEnd":
                raise RuntimeError("a buggy subscriber")

        agent = Agent(provider=ScriptedProvider([calls("stubborn", "quick"), "done"]),
                      tools=[tool("stubborn", stubborn), tool("quick", quick)])
        agent.subscribe(subscriber)
        with pytest.raises(RuntimeError, match="buggy subscriber"):
            agent.run("go")
        sync.sleep(0.001)
        during = workers.stats()
        sync.sleep(61.0)
        return during, workers.stats()

    during, after = simulate(main, seed)
    assert during.busy == 0 and during.abandoned == 1
    assert after.busy == 0 and after.abandoned == 0


@pytest.mark.parametrize("where", ["after_loop", "AgentEnd subscriber"])
@pytest.mark.parametrize("seed", SEEDS)
def test_run_with_a_timeout_returns_a_completed_run_as_completed(seed: int, where: str):
    """A completed run reported as a timeout: the run completed, but its after_loop (or an AgentEnd
    subscriber) is slow. run(timeout=0.5) returns the completed result by the deadline (AGENT-2)."""

    def main() -> tuple[Any, float]:
        def slow(*args: Any) -> None:
            if where == "after_loop" or getattr(args[0], "type", "") == "AgentEnd":
                sync.sleep(10.0)

        agent = Agent(provider=ScriptedProvider(["done"]), after_loop=slow if where == "after_loop" else None)
        if where != "after_loop":
            agent.subscribe(slow)
        started = sync.monotonic()
        result = agent.run("go", timeout=0.5)
        return result, sync.monotonic() - started

    result, took = simulate(main, seed)
    assert result.outcome == RunOutcome.COMPLETED and not result.timed_out and result.text == "done"
    assert took <= 0.5 + CALLBACK_WAIT_S + 1.0 + SCHEDULING_SLACK_S + 1e-6  # was a TimeoutError after 6.5 s


@pytest.mark.parametrize("answers_after", [3.0, 10_000.0])
@pytest.mark.parametrize("seed", SEEDS)
def test_run_with_a_timeout_bounds_the_start_up(seed: int, answers_after: float):
    """run(timeout=) does not bound start-up: a tool source whose tools() takes 3 s (or hangs). The
    timeout counts the start-up (AGENT-2): the run is aborted at the deadline, keeps its prompt, and
    run() is back within timeout + abort's wait + the tool grace."""

    class SlowSource:
        def tools(self) -> list[Any]:
            sync.sleep(answers_after)
            return []

    def main() -> tuple[Any, float, list[Any]]:
        agent = Agent(provider=ScriptedProvider(["done"]), tool_sources=[SlowSource()])
        started = sync.monotonic()
        result = agent.run("go", timeout=0.5)
        return result, sync.monotonic() - started, agent.messages

    result, took, history = simulate(main, seed, settle_s=answers_after + 60.0)  # until tools() returns
    assert took <= 0.5 + CALLBACK_WAIT_S + 1.0 + SCHEDULING_SLACK_S + 1e-6
    assert result.outcome == RunOutcome.ABORTED and result.timed_out
    assert [m.text for m in history] == ["go"]  # the input is kept


@pytest.mark.parametrize("seed", SEEDS)
def test_timed_out_calls_do_not_wait_for_their_cancellation_callbacks(seed: int):
    """Timeouts queue behind slow cancellation callbacks: eight parallel calls time out at 100 ms and
    each one's cancellation callback is slow. The run waits for none of them (TOOL-6)."""

    def main() -> tuple[Any, float]:
        def slow_callbacks(args: dict[str, Any], ctx: Any) -> str:
            ctx.cancel.on_cancel(lambda: sync.sleep(2.0))
            sync.sleep(30.0)  # and it ignores its token
            return "late"

        agent = Agent(provider=ScriptedProvider([calls(*["slow"] * 8), "done"]), tools=[tool("slow", slow_callbacks)],
                      tool_timeout_ms=100, tool_execution=ToolExecution.PARALLEL)
        started = sync.monotonic()
        result = agent.run("go")
        return result, sync.monotonic() - started

    result, took = simulate(main, seed)
    assert result.outcome == RunOutcome.COMPLETED and result.text == "done"
    assert took <= 0.1 + 1e-6


@pytest.mark.parametrize("call", ["reset", "close"])
@pytest.mark.parametrize("seed", SEEDS)
def test_reset_from_an_agent_end_subscriber_does_not_wait_for_the_next_run(seed: int, call: str):
    """reset() from an AgentEnd subscriber when another thread has already started the next run: that
    run's events wait for this callback, so reset() must not wait for that run (AGENT-1)."""

    def main() -> tuple[float, bool]:
        agent = Agent(provider=ScriptedProvider(default="done"))
        first_started, next_started, took = sync.Event(), sync.Event(), []

        def subscriber(event: Any) -> None:
            if event.type == "AgentStart":
                first_started.set()
            if event.type == "AgentEnd" and not took:
                next_started.wait(10.0)
                started = sync.monotonic()
                getattr(agent, call)()
                took.append(sync.monotonic() - started)

        agent.subscribe(subscriber)

        def other() -> None:
            first_started.wait()
            agent.wait_for_idle()
            agent.prompt("second")
            next_started.set()

        thread = sync.Thread(target=other, name="other")
        thread.start()
        agent.run("first")
        thread.join()
        return took[0], agent.wait_for_idle(60.0)

    took, idle = simulate(main, seed)
    assert took <= CALLBACK_WAIT_S + 1e-6 and idle


# --------------------------------------------------------------------------- found by the fresh review


@pytest.mark.parametrize("seed", range(24))
def test_a_reset_just_before_resume_starts_is_never_undone(seed: int):
    """resume() used to work out the history to keep before taking the lock, so a reset() from another
    thread in between was undone: the old conversation came back (AGENT-1, AGENT-6)."""

    def main() -> list[Any]:
        agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["half"]}],
                                                  "hang_after_chunks": 1}], default="resumed"))
        started = sync.Event()
        agent.subscribe(lambda e: started.set() if e.type == "MessageUpdate" else None)
        stream = agent.prompt("OLD")
        started.wait()
        agent.abort()
        stream.wait()

        def resume() -> None:
            try:
                agent.resume().wait()
            except Exception:
                pass  # InvalidContinue when the reset came first

        thread = sync.Thread(target=resume, name="resume")
        thread.start()
        agent.reset()
        thread.join()
        agent.wait_for_idle()
        return agent.messages

    history = simulate(main, seed)
    assert not any(getattr(m, "text", "") == "OLD" for m in history), "the reset conversation came back"


@pytest.mark.parametrize("seed", SEEDS)
def test_run_with_a_timeout_bounds_loading_a_stored_session(seed: int):
    """The first run of an agent with a store continues the stored session; a store whose load() is slow
    is part of the start-up that run(timeout=) bounds (AGENT-2): RunTimeout by the bound, never a hang."""
    from phi import RunTimeout
    from phi.session import SessionRecorder

    def main() -> tuple[str, float]:
        agent = Agent(provider=ScriptedProvider(["done"]), recorder=SessionRecorder(), store=_SlowStore(30.0))
        started = sync.monotonic()
        try:
            outcome = agent.run("go", timeout=0.5).outcome.value
        except RunTimeout:
            outcome = "RunTimeout"
        took = sync.monotonic() - started
        agent.wait_for_idle()
        return outcome, took

    outcome, took = simulate(main, seed)
    assert took <= 0.5 + CALLBACK_WAIT_S + 1.0 + SCHEDULING_SLACK_S + 1e-6 and outcome in ("RunTimeout", "aborted")


@pytest.mark.parametrize("seed", SEEDS)
def test_wait_for_idle_from_a_tool_source_is_refused_not_a_deadlock(seed: int):
    from phi import AlreadyRunning

    def main() -> tuple[list[str], float]:
        seen: list[str] = []
        holder: list[Agent] = []

        class Source:
            def tools(self) -> list[Any]:
                try:
                    holder[0].wait_for_idle(3.0)
                    seen.append("waited")
                except AlreadyRunning:
                    seen.append("AlreadyRunning")
                return []

        agent = Agent(provider=ScriptedProvider(["done"]), tool_sources=[Source()])
        holder.append(agent)
        started = sync.monotonic()
        agent.run("go")
        return seen, sync.monotonic() - started

    seen, took = simulate(main, seed)
    assert seen == ["AlreadyRunning"] and took < 1e-6


@pytest.mark.parametrize("seed", SEEDS)
def test_an_exception_keeps_the_result_of_a_call_that_had_finished(seed: int):
    """after_tool_execution raises for t1 while t2 has already returned, though the loop had not read its
    outcome yet: t2 keeps its own result in the history (LOOP-5)."""

    def main() -> dict[str, str]:
        def quick(args: dict[str, Any], ctx: Any) -> str:
            return f"result-{ctx.tool_call_id}"

        def after(name: str, call_id: str, is_error: bool) -> None:
            sync.sleep(0.1)  # meanwhile the other call returns
            raise RuntimeError("the hook broke")

        agent = Agent(provider=ScriptedProvider([calls("quick", "quick"), "done"]), tools=[tool("quick", quick)],
                      after_tool_execution=after)
        with pytest.raises(RuntimeError, match="hook broke"):
            agent.run("go")
        return {m.tool_call_id: m.text for m in agent.messages if getattr(m, "role", "") == "toolResult"}

    assert simulate(main, seed) == {"c0": "result-c0", "c1": "result-c1"}


@pytest.mark.parametrize("seed", range(24))
def test_a_replaced_history_and_a_starting_run_never_cross(seed: int):
    """restore_messages() checked "no run active" before parsing and replaced the history after, so a run
    starting meanwhile ran on the old history and its merge overwrote the restore (AGENT-1)."""
    from phi import AlreadyRunning

    def main() -> tuple[bool, list[str]]:
        agent = Agent(provider=ScriptedProvider(default="answer"))
        agent.run("OLD")
        saved = Agent(provider=ScriptedProvider(["x"]), messages=[]).save_messages()
        restored = []

        def restore() -> None:
            try:
                agent.restore_messages(saved.replace("[]", '[{"role": "user", "content": [{"type": "text", '
                                                              '"text": "NEW"}]}]'))
                restored.append(True)
            except AlreadyRunning:
                restored.append(False)

        thread = sync.Thread(target=restore, name="restore")
        thread.start()
        try:
            agent.run("next")
        except AlreadyRunning:
            pass
        thread.join()
        agent.wait_for_idle()
        return restored[0], [getattr(m, "text", "") for m in agent.messages]

    restored, texts = simulate(main, seed)
    if restored:
        assert texts[0] == "NEW", texts  # the run that started after it continued the restored history
    else:
        assert texts[0] == "OLD", texts


# --------------------------------------------------------------------------- found by the second review


@pytest.mark.parametrize("seed", SEEDS)
def test_new_session_while_a_run_starts_never_repeats_a_loop_id(seed: int):
    from phi.session import SessionRecorder

    def main() -> tuple[list[str], Any]:
        recorder = SessionRecorder()
        agent = Agent(provider=ScriptedProvider(default="done"), recorder=recorder, store=_SlowStore(1.0))
        starts: list[str] = []
        agent.subscribe(lambda e: starts.append(e.loop_id) if e.type == "AgentStart" else None)
        agent.run("zero")  # the session's first loop
        first = agent.prompt("one")
        agent.new_session()
        after_new_session = agent.last_loop_id
        first.result()
        agent.run("two")
        return starts, after_new_session

    starts, after_new_session = simulate(main, seed)
    assert len(set(starts)) == len(starts) == 3, starts
    assert after_new_session is None


@pytest.mark.parametrize("seed", SEEDS)
def test_a_run_the_caller_aborted_is_not_reported_timed_out(seed: int):
    def main() -> Any:
        def stubborn(args: dict[str, Any], ctx: Any) -> str:
            sync.sleep(0.8)  # ignores its token: the run waits for it within the grace period
            return "late"

        agent = Agent(provider=ScriptedProvider([calls("stubborn"), "done"]), tools=[tool("stubborn", stubborn)])

        def abort_soon() -> None:
            sync.sleep(0.1)
            agent.abort()

        thread = sync.Thread(target=abort_soon, name="aborter")
        thread.start()
        result = agent.run("go", timeout=0.5)
        thread.join()
        return result

    result = simulate(main, seed)
    assert result.outcome == RunOutcome.ABORTED and not result.timed_out


@pytest.mark.parametrize("seed", SEEDS)
def test_waiting_for_the_next_run_from_an_agent_end_subscriber_is_refused(seed: int):
    """AGENT-1: whichever thread started the next run, its events wait for this subscriber."""
    from phi import AlreadyRunning

    def main() -> list[str]:
        agent = Agent(provider=ScriptedProvider(default="done"))
        streams: list[Any] = []
        seen: list[str] = []
        started = sync.Event()

        def subscriber(event: Any) -> None:
            if event.type == "AgentEnd" and not seen:
                started.wait(5.0)
                try:
                    streams[0].result()
                    seen.append("waited")
                except AlreadyRunning:
                    seen.append("AlreadyRunning")
                try:
                    agent.run("from the subscriber")
                    seen.append("ran")
                except AlreadyRunning:
                    seen.append("run refused")

        agent.subscribe(subscriber)

        def other() -> None:
            agent.wait_for_idle()
            sync.sleep(0.01)
            streams.append(agent.prompt("second"))
            started.set()

        first = agent.prompt("first")
        thread = sync.Thread(target=other, name="other")
        thread.start()
        first.result()
        thread.join()
        streams[0].result()
        return seen

    assert simulate(main, seed) == ["AlreadyRunning", "run refused"]


def test_a_parallel_run_that_raises_before_choosing_keeps_the_last_loop_id():
    class Broken:
        def evaluate(self, prompts: Any, outcomes: Any, sink: Any, cancel: Any) -> Any:
            raise RuntimeError("the judge broke")

    agent = Agent(provider=ScriptedProvider(default="done"))
    agent.run("first")
    before = agent.last_loop_id
    with pytest.raises(Exception):
        agent.run_parallel("second", [{}, {"temperature": 0.5}], Broken())  # type: ignore[arg-type]
    assert before is not None and agent.last_loop_id == before
    assert [m.text for m in agent.messages if getattr(m, "role", "") == "user"] == ["first", "second"]


def test_a_source_whose_instructions_fail_is_left_out_not_fatal():
    from phi import PhiError

    class Failing:
        def tools(self) -> list[Any]:
            return []

        def instructions(self) -> str:
            raise PhiError("the server is down")

    agent = Agent(provider=ScriptedProvider(["done"]), system_prompt="base", tool_sources=[Failing()])
    assert agent.run("go").text == "done"
    assert [m.text for m in agent.messages] == ["go", "done"]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_what_a_run_raises_after_run_timeout_gave_up_on_it_is_logged(seed: int, caplog: pytest.LogCaptureFixture):
    import logging

    from phi import RunTimeout

    def main() -> str:
        def before_turn(messages: Any, index: int) -> None:
            sync.sleep(3.0)
            raise RuntimeError("the hook broke late")

        agent = Agent(provider=ScriptedProvider(["done"]), before_turn=before_turn)
        try:
            agent.run("go", timeout=0.2)
            outcome = "returned"
        except RunTimeout:
            outcome = "RunTimeout"
        agent.wait_for_idle()
        sync.sleep(0.01)
        return outcome

    with caplog.at_level(logging.ERROR, logger="phi"):
        assert simulate(main, seed) == "RunTimeout"
    assert "the hook broke late" in caplog.text
