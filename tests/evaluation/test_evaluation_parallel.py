"""agent_loop_parallel: branches, identity, event order and attribution, failures, cancellation,
threads (seed 000 REQ-203, REQ-205, REQ-206; SPEC EVT-2)."""

from __future__ import annotations

import threading
import time

import pytest
from evaluation_helpers import branch, branch_threads, fresh_context, prompts, reply, run_parallel

from phi.loop.tool import FunctionTool
from phi.concurrency.cancel import CancellationToken
from phi.errors import ConfigError, InvalidContinue
from phi.evaluation import (
    ParallelLoopOutcome,
    PickFirstEvaluation,
    TokenEfficientEvaluation,
    agent_loop_parallel,
    branch_configs,
    merge_selected,
)
from phi.loop.config import AgentContext, AgentLoopConfig
from phi.types import (
    AssistantMessage,
    ContinuationKind,
    RunOutcome,
    StopReason,
    TextContent,
    TurnTrigger,
    UserMessage,
)


def _check_branch_run(events, loop_id):
    """One branch's events: a complete run, AgentStart first and AgentEnd last."""
    own = [e for e in events if getattr(e, "loop_id", None) == loop_id]
    assert own[0].type == "AgentStart" and own[-1].type == "AgentEnd", [e.type for e in own]
    assert [e.type for e in own].count("AgentEnd") == 1
    return own


def test_two_branches_pick_first_event_order_and_attribution():
    configs = [branch([reply("one", 5)], "a"), branch([reply("two", 3)], "b")]
    context = fresh_context()
    sid = context.session_id
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), context=context)
    assert run.error is None
    start, end = run.events[0], run.events[-1]
    assert start.type == "ParallelLoopStart" and end.type == "ParallelLoopEnd"
    assert start.session_id == end.session_id == sid
    assert start.loop_ids == [f"{sid}.a.1", f"{sid}.b.1"]
    assert (end.selected_loop_id, end.selected_config_index) == (f"{sid}.a.1", 0)
    middle = run.events[1:-1]
    assert all(hasattr(e, "loop_id") for e in middle)
    assert {e.loop_id for e in middle} == {f"{sid}.a.1", f"{sid}.b.1"}
    for loop_id, text in ((f"{sid}.a.1", "one"), (f"{sid}.b.1", "two")):
        own = _check_branch_run(middle, loop_id)
        assert own[0].session_id == sid and own[0].agent_id == "ag" and own[0].parent_loop_id is None
        assert [m.text for m in own[-1].messages] == ["q", text]
    result = run.result
    assert (result.selected_config_index, result.selected_loop_id, result.text) == (0, f"{sid}.a.1", "one")
    assert [o.loop_id for o in result.outcomes] == [f"{sid}.a.1", f"{sid}.b.1"]
    assert [o.usage.total_tokens for o in result.outcomes] == [5, 3]
    assert result.total_usage.total_tokens == 8


def test_sink_calls_are_serialised_on_the_calling_thread():
    inside = [0]
    overlap = []

    def slow_sink(event):
        inside[0] += 1
        overlap.append(inside[0])
        time.sleep(0.001)
        inside[0] -= 1

    configs = [branch([reply(f"b{i}")], f"c{i}") for i in range(4)]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), sink=slow_sink)
    assert run.error is None
    assert max(overlap) == 1
    assert run.sink_threads == {run.caller_thread}


def test_branches_really_run_at_the_same_time():
    barrier = threading.Barrier(3, timeout=5)

    def meet(_config):
        barrier.wait()  # every branch's model call must be in flight at once to get past this
        return reply("met")

    configs = [branch([meet], f"c{i}") for i in range(3)]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation())
    assert run.error is None
    assert all(o.succeeded for o in run.result.outcomes)


def test_each_branch_has_its_own_message_list_and_shares_the_tools():
    tool = FunctionTool("echo", "echo", {"type": "object"}, lambda args, ctx: "echoed")
    history = [UserMessage.from_text("before"), AssistantMessage([TextContent("earlier answer")])]
    base = fresh_context(system_prompt="sys", messages=list(history), tools=[tool])
    call = {"blocks": [{"type": "toolCall", "id": "t1", "name": "echo", "arguments": {}}]}
    configs = [branch([call, reply("done a")], "a"), branch([reply("done b")], "b")]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), context=base)
    outcomes = run.result.outcomes
    assert base.messages == history  # the base context is never extended
    assert outcomes[0].context.messages is not outcomes[1].context.messages
    assert [m.role for m in outcomes[0].new_messages] == ["user", "assistant", "toolResult", "assistant"]
    assert [m.role for m in outcomes[1].new_messages] == ["user", "assistant"]
    assert outcomes[0].context.tools[0] is outcomes[1].context.tools[0] is tool
    assert all(o.original_context_len == len(history) for o in outcomes)
    assert all(o.context.messages[: len(history)] == history for o in outcomes)
    assert configs[1].provider.calls[0].system_prompt == "sys"


def test_identity_is_generated_and_written_back_in_origin_mode():
    base = AgentContext()
    run = run_parallel(prompts("q"), [branch([reply("x")])], PickFirstEvaluation(), context=base)
    assert base.agent_id and base.session_id
    assert run.result.selected_loop_id == f"{base.session_id}.mock.mock-model.1"
    assert run.events[1].agent_id == base.agent_id


def test_configs_with_the_same_segment_get_distinct_loop_numbers():
    configs = [branch([reply("x")], "same"), branch([reply("y")], "same")]
    context = fresh_context()
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), context=context)
    assert sorted(run.events[0].loop_ids) == [f"{context.session_id}.same.1", f"{context.session_id}.same.2"]


def test_loop_ids_given_by_the_caller_are_used():
    configs = [branch([reply("x")]), branch([reply("y")])]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), loop_ids=["L1", "L2"])
    assert run.events[0].loop_ids == ["L1", "L2"]
    assert [e.loop_id for e in run.of("AgentStart")] in (["L1", "L2"], ["L2", "L1"])


def test_continue_mode_runs_every_branch_with_agent_loop_continue():
    history = [UserMessage.from_text("first question")]
    base = fresh_context(messages=list(history), loop_id="s.prev.1")
    configs = [branch([reply("a")], "a"), branch([reply("b")], "b")]
    run = run_parallel([], configs, PickFirstEvaluation(), context=base)
    assert run.error is None
    for start in run.of("AgentStart"):
        assert start.continuation_kind == ContinuationKind.default()
        assert start.parent_loop_id == "s.prev.1"  # the branch point
    assert {e.triggered_by for e in run.of("TurnStart")} == {TurnTrigger.CONTINUATION}
    for outcome in run.result.outcomes:
        assert outcome.original_context_len == 1
        assert [m.role for m in outcome.new_messages] == ["assistant"]  # no prompt was added
        assert outcome.context.messages[0] is history[0]


def test_continue_mode_keeps_a_branch_kind_and_an_explicit_parent():
    base = fresh_context(messages=[UserMessage.from_text("q")], loop_id="s.x.3", parent_loop_id="s.x.1",
                         continuation_kind=ContinuationKind.branch("try"))
    run = run_parallel([], [branch([reply("a")])], PickFirstEvaluation(), context=base)
    start = run.of("AgentStart")[0]
    assert start.parent_loop_id == "s.x.1" and start.continuation_kind == ContinuationKind.branch("try")
    assert run.of("TurnStart")[0].triggered_by == TurnTrigger.BRANCH


def test_continue_mode_refuses_a_context_it_cannot_continue_before_emitting_anything():
    configs = [branch([reply("a")])]
    for base in (AgentContext(messages=[UserMessage.from_text("q")]),  # no identity
                 AgentContext(messages=[], agent_id="a", session_id="s")):  # nothing to continue
        run = run_parallel([], configs, PickFirstEvaluation(), context=base)
        assert isinstance(run.error, InvalidContinue)
        assert run.events == []
    assert configs[0].provider.calls == []


def test_a_branch_whose_code_raises_keeps_the_others_results():
    def explode(messages, turn_index):
        raise RuntimeError("hook failed")

    configs = [branch([reply("never")], "bad", before_turn=explode), branch([reply("fine", 4)], "good")]
    context = fresh_context()
    sid = context.session_id
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), context=context)
    assert run.error is None
    bad, good = run.result.outcomes
    assert isinstance(bad.exception, RuntimeError) and bad.error == "RuntimeError: hook failed"
    assert bad.outcome is None and not bad.succeeded
    assert [m.text for m in bad.new_messages] == ["q"]  # what its history had gained when it raised
    assert good.succeeded and good.text == "fine"
    assert run.result.selected_config_index == 1
    assert run.events[-1].selected_loop_id == f"{sid}.good.1"
    assert "AgentEnd" not in [e.type for e in run.of_loop(f"{sid}.bad.1")]  # an exception ends a run silently


def test_a_branch_whose_provider_fails_is_an_error_outcome():
    configs = [branch([{"throw": {"message": "provider bug"}}], "a"),
               branch([{"error": {"kind": "auth", "message": "bad key"}}], "b"),
               branch([reply("ok")], "c")]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation())
    first, second, third = run.result.outcomes
    assert (first.outcome, first.stop_reason) == (RunOutcome.ERROR, StopReason.ERROR)
    assert "provider bug" in first.error
    assert second.outcome == RunOutcome.ERROR and "bad key" in second.error
    assert third.succeeded and third.error is None
    assert run.result.selected_config_index == 2


def test_aborting_one_branch_leaves_the_others_running():
    tokens = [CancellationToken(), CancellationToken()]

    def sink(event):
        if event.type == "MessageUpdate" and event.loop_id.endswith(".slow.1"):
            tokens[0].cancel()  # abort the slow branch once it has streamed something

    slow = {"blocks": [{"type": "text", "chunks": ["partial", "never"]}], "hang_after_chunks": 1}
    configs = [branch([slow], "slow"), branch([reply("quick", 9)], "quick")]
    run = run_parallel(prompts("q"), configs, TokenEfficientEvaluation(), sink=sink, branch_cancels=tokens)
    slow_outcome, quick = run.result.outcomes
    assert slow_outcome.outcome == RunOutcome.ABORTED and slow_outcome.stop_reason == StopReason.ABORTED
    assert slow_outcome.text == "partial"
    assert quick.succeeded
    assert run.result.selected_config_index == 1  # fewer tokens, but an aborted branch is never chosen
    assert not tokens[1].is_cancelled()


def test_cancel_aborts_every_branch_and_still_ends_the_group():
    cancel = CancellationToken()
    started = []

    def sink(event):
        if event.type == "MessageUpdate":
            started.append(event.loop_id)
            if len(set(started)) == 2:
                cancel.cancel()

    hang = {"blocks": [{"type": "text", "chunks": ["partial", "more"]}], "hang_after_chunks": 1}
    configs = [branch([hang], "a"), branch([hang], "b")]
    began = time.monotonic()
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), cancel=cancel, sink=sink)
    assert time.monotonic() - began < 5
    assert run.error is None
    assert [o.outcome for o in run.result.outcomes] == [RunOutcome.ABORTED, RunOutcome.ABORTED]
    assert run.result.selected_config_index == 0  # every branch failed: the first
    assert run.types[-1] == "ParallelLoopEnd"
    assert branch_threads() == []


def test_a_failing_sink_aborts_the_branches_and_is_re_raised():
    hang = {"blocks": [{"type": "text", "chunks": ["x", "y"]}], "hang_after_chunks": 1}
    seen = []

    def sink(event):
        seen.append(event.type)
        if event.type == "MessageUpdate":
            raise ValueError("consumer broke")

    configs = [branch([hang], "a"), branch([hang], "b")]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), sink=sink)
    assert isinstance(run.error, ValueError) and str(run.error) == "consumer broke"
    assert seen.count("MessageUpdate") == 1  # no event is delivered after the sink failed
    assert branch_threads() == []
    assert all(c.provider.remaining == 0 for c in configs)


def test_no_thread_is_left_behind():
    before = set(threading.enumerate())
    for strategy in (PickFirstEvaluation(), TokenEfficientEvaluation()):
        run = run_parallel(prompts("q"), [branch([reply("a")]), branch([reply("b")])], strategy)
        assert run.error is None
    leftover = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert leftover == []


def test_arguments_are_checked_before_anything_runs():
    config = branch([reply("a")])
    with pytest.raises(ConfigError, match="at least one"):
        agent_loop_parallel(prompts("q"), AgentContext(), [], PickFirstEvaluation(), None)
    with pytest.raises(ConfigError, match="not an AgentLoopConfig"):
        agent_loop_parallel(prompts("q"), AgentContext(), [{"model": "x"}], PickFirstEvaluation(), None)
    with pytest.raises(ConfigError, match="no evaluate"):
        agent_loop_parallel(prompts("q"), AgentContext(), [config], object(), None)
    with pytest.raises(ConfigError, match="distinct ids"):
        agent_loop_parallel(prompts("q"), AgentContext(), [config, config], PickFirstEvaluation(), None,
                            loop_ids=["x", "x"])
    with pytest.raises(ConfigError, match="one token per config"):
        agent_loop_parallel(prompts("q"), AgentContext(), [config], PickFirstEvaluation(), None, branch_cancels=[])
    assert config.provider.calls == []


def test_an_event_channel_works_as_the_sink():
    from phi.concurrency.channel import EventChannel

    channel = EventChannel()
    result = agent_loop_parallel(prompts("q"), AgentContext(), [branch([reply("a")])], PickFirstEvaluation(), channel)
    channel.close()
    types = [e.type for e in channel]
    assert types[0] == "ParallelLoopStart" and types[-1] == "ParallelLoopEnd"
    assert result.text == "a"


def test_merge_selected_appends_the_winners_new_messages():
    history = [UserMessage.from_text("old")]
    base = fresh_context(messages=list(history))
    configs = [branch([reply("one", 9)], "x"), branch([reply("two", 2)], "y")]
    run = run_parallel(prompts("q"), configs, TokenEfficientEvaluation(), context=base)
    merged = merge_selected(history, run.result)
    assert [m.text for m in merged] == ["old", "q", "two"]
    assert merged[1:] == run.result.outcomes[1].new_messages
    with pytest.raises(ConfigError, match="started from 1"):
        merge_selected([], run.result)


def test_branch_configs_builds_variants_of_a_base_config():
    base = AgentLoopConfig(config_id="base", max_tokens=100, get_steering_messages=lambda: [])
    own = AgentLoopConfig(config_id="own")
    configs = branch_configs(base, [{"config_id": "v1", "temperature": 0.2}, own])
    assert configs[0].config_id == "v1" and configs[0].temperature == 0.2 and configs[0].max_tokens == 100
    assert configs[0].get_steering_messages is None  # queues are never shared among branches
    assert configs[1] is own
    with pytest.raises(ConfigError, match="unknown settings"):
        branch_configs(base, [{"modle": "x"}])
    with pytest.raises(ConfigError, match="must be an AgentLoopConfig"):
        branch_configs(base, ["gpt-5"])


def test_outcome_fields_have_the_seed_names():
    names = set(ParallelLoopOutcome.__dataclass_fields__)
    assert {"config_index", "loop_id", "context", "new_messages", "usage", "original_context_len"} <= names


def test_a_sink_failing_on_parallel_loop_start_stops_before_any_branch():
    def sink(event):
        raise ValueError("no")

    configs = [branch([reply("a")]), branch([reply("b")])]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation(), sink=sink)
    assert isinstance(run.error, ValueError) and run.types == ["ParallelLoopStart"]
    assert all(c.provider.calls == [] for c in configs) and branch_threads() == []


def test_the_selected_context_continues_from_the_winner():
    from phi.loop import agent_loop_continue

    configs = [branch([reply("one", 9)], "x"), branch([reply("two", 2)], "y")]
    context = fresh_context(system_prompt="sys")
    result = run_parallel(prompts("q"), configs, TokenEfficientEvaluation(), context=context).result
    follow = result.selected_context
    assert [m.text for m in follow.messages] == ["q", "two"]
    assert (follow.agent_id, follow.session_id, follow.system_prompt) == ("ag", context.session_id, "sys")
    assert follow.loop_id is None and follow.parent_loop_id == result.selected_loop_id
    follow.messages.append(UserMessage.from_text("and then?"))
    events = []
    agent_loop_continue(follow, branch([reply("three")], "y"), events.append)
    start = events[0]
    assert start.parent_loop_id == result.selected_loop_id
    assert start.loop_id == f"{context.session_id}.y.2"  # a new loop, not the winner's id again
    assert result.outcomes[1].context.messages[-1].text == "two"  # the branch's own context is untouched


def _script(i):
    call = {"blocks": [{"type": "text", "chunks": [f"b{i} step {k} " for k in range(20)]},
                       {"type": "toolCall", "id": f"t{i}", "name": "echo", "arguments": {"n": i}}]}
    return [call, {"blocks": [{"type": "text", "chunks": [f"b{i} answer {k} " for k in range(30)]}]}]


def _shape(events):
    """Event types with their deltas and announced texts (ids and timestamps differ between runs)."""
    shape = []
    for e in events:
        delta = e.delta.delta if e.type == "MessageUpdate" else None
        message = getattr(e, "message", None)
        shape.append((e.type, delta, getattr(message, "text", None)))
    return shape


def test_each_branch_emits_exactly_what_the_same_run_alone_emits():
    """Differential: a branch's events, picked out of the interleaved stream by loop id, are the
    events agent_loop produces for the same config and prompt on its own."""
    from phi.loop import agent_loop

    tool = FunctionTool("echo", "echo", {"type": "object"}, lambda args, ctx: f"echo {args['n']}")
    context = fresh_context(tools=[tool])
    configs = [branch(_script(i), f"c{i}") for i in range(6)]
    run = run_parallel(prompts("go"), configs, PickFirstEvaluation(), context=context)
    assert run.error is None
    for i in range(6):
        alone: list = []
        agent_loop(prompts("go"), fresh_context(tools=[tool]), branch(_script(i), f"c{i}"), alone.append)
        mine = _shape(run.of_loop(f"{context.session_id}.c{i}.1"))
        assert mine == _shape(alone)
        assert len(mine) > 60 and any(delta == f"b{i} answer 29 " for _, delta, _ in mine)
