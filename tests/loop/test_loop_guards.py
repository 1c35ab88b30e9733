"""Input filters, hook vetoes and execution limits (DESIGN §5 steps 1, 3, 4 and "Limits")."""

from __future__ import annotations

import time

from loop_helpers import call, check_announcements, run, text_of, text_tool, tool_turn

from phi.context.config import ExecutionLimits
from phi.loop.filters import FilterResult
from phi.loop.tool_execution import VETOED
from phi.types import UserMessage


# --------------------------------------------------------------------------- input filters


def test_input_filter_reject_ends_before_any_turn():
    after_loop = []
    seen = []

    def no_secrets(text):
        seen.append(text)
        return FilterResult.reject("contains a secret") if "password" in text else None

    out = run(["never"], prompts=["my password is x", UserMessage.from_text("second")], input_filters=[no_secrets],
              after_loop=lambda m, u: after_loop.append(1))
    assert seen == ["my password is x\nsecond"]
    assert out.types == ["AgentStart", "InputRejected", "AgentEnd"]
    assert out.of("InputRejected")[0].reason == "contains a secret"
    assert out.end.messages == [] and out.end.rejection == "contains a secret"
    assert out.messages == [] and out.context.messages == []
    assert out.provider.calls == [] and after_loop == []


def test_first_rejection_wins_and_later_filters_do_not_run():
    calls = []

    def rejecting(name):
        return lambda text: calls.append(name) or FilterResult.reject(name)

    out = run(["never"], input_filters=[rejecting("a"), rejecting("b")])
    assert calls == ["a"] and out.end.rejection == "a"


def test_input_filter_warnings_are_appended_to_the_last_prompt():
    class Shouty:
        def filter(self, text):
            return FilterResult.warn("all caps") if text.isupper() else FilterResult.passed()

    out = run(["ok"], prompts=["first", "HELLO"],
              input_filters=[Shouty(), lambda t: FilterResult.warn("second warning")])
    sent = out.provider.calls[0].messages
    assert [text_of(m) for m in sent[:1]] == ["first"]
    assert [b.text for b in sent[1].content] == ["HELLO", "[Warning: second warning]"]
    out2 = run(["ok"], prompts=["A", "B"], input_filters=[Shouty(), lambda t: FilterResult.warn("w2")])
    assert [b.text for b in out2.provider.calls[0].messages[1].content] == ["B", "[Warning: all caps]\n[Warning: w2]"]
    check_announcements(out2)


# --------------------------------------------------------------------------- hook vetoes


def test_before_loop_veto_emits_only_agent_end():
    out = run(["never"], before_loop=lambda messages, index: False)
    assert out.types == ["AgentEnd"]
    assert out.end.messages == [] and out.messages == []
    assert out.provider.calls == []


def test_before_loop_returning_none_does_not_veto():
    out = run(["ok"], before_loop=lambda messages, index: None)
    assert out.types[0] == "AgentStart" and len(out.provider.calls) == 1


def test_before_turn_veto_still_ends_the_run_with_agent_end():
    seen = []

    def before_turn(messages, index):
        seen.append(index)
        return index < 1

    after_loop = []
    out = run([tool_turn(call("t1", "echo")), "never"], [text_tool("echo")], before_turn=before_turn,
              after_loop=lambda m, u: after_loop.append(1))
    assert seen == [0, 1]
    assert len(out.provider.calls) == 1
    assert len(out.of("TurnStart")) == 1 and out.types[-1] == "AgentEnd"
    assert after_loop == [1]
    check_announcements(out)


def test_before_turn_veto_on_first_turn_still_announces_prompts():
    out = run(["never"], before_turn=lambda m, i: False)
    assert out.types == ["AgentStart", "MessageStart", "MessageEnd", "AgentEnd"]
    assert out.provider.calls == []


def test_before_tool_execution_veto_skips_without_events():
    ran = []
    vetoed_args = []

    def before(name, call_id, args):
        vetoed_args.append(args)
        return call_id != "t2"

    out = run([tool_turn(call("t1", "echo", {"a": 1}), call("t2", "echo", {"b": 2})), "ok"],
              [text_tool("echo", lambda a, c: ran.append(c.tool_call_id) or "ran")], before_tool_execution=before)
    assert ran == ["t1"]
    assert vetoed_args == [{"a": 1}, {"b": 2}]
    assert [e.tool_call_id for e in out.of("ToolExecutionStart")] == ["t1"]
    assert [e.tool_call_id for e in out.of("ToolExecutionEnd")] == ["t1"]
    t1, t2 = out.results
    assert text_of(t2) == VETOED and t2.is_error
    assert text_of(t1) == "ran" and not t1.is_error
    check_announcements(out)


# --------------------------------------------------------------------------- limits


def _stop_notice(out):
    last = out.messages[-1]
    assert isinstance(last, UserMessage)
    return text_of(last)


def _assert_notice_outside_turns(out):
    types = out.types
    # ... TurnEnd, MessageStart (notice), MessageEnd (notice), AgentEnd
    assert types[-4:] == ["TurnEnd", "MessageStart", "MessageEnd", "AgentEnd"]
    assert out.end.messages[-1] is out.messages[-1]
    check_announcements(out)


def test_max_turns_limit():
    script = [tool_turn(call(f"t{i}", "echo")) for i in range(5)]
    out = run(script, [text_tool("echo")], execution_limits=ExecutionLimits(max_turns=2, max_total_tokens=None,
                                                                            max_duration=None))
    assert len(out.provider.calls) == 2
    assert _stop_notice(out) == "[Agent stopped: Max turns reached (2/2)]"
    _assert_notice_outside_turns(out)


def test_max_tokens_limit():
    usage = {"input": 60, "output": 10}
    script = [tool_turn(call(f"t{i}", "echo"), usage=usage) for i in range(5)]
    out = run(script, [text_tool("echo")], execution_limits=ExecutionLimits(max_turns=None, max_total_tokens=100,
                                                                            max_duration=None))
    assert len(out.provider.calls) == 2
    assert _stop_notice(out) == "[Agent stopped: Max tokens reached (140/100)]"
    assert out.end.usage.input == 120
    _assert_notice_outside_turns(out)


def test_max_duration_limit():
    def slow(args, ctx):
        time.sleep(0.06)
        return "slow"

    script = [tool_turn(call(f"t{i}", "slow")) for i in range(5)]
    out = run(script, [text_tool("slow", slow)], execution_limits=ExecutionLimits(max_turns=None, max_total_tokens=None,
                                                                                  max_duration=0.05))
    assert len(out.provider.calls) == 1
    assert _stop_notice(out).startswith("[Agent stopped: Max duration reached (")
    _assert_notice_outside_turns(out)


def test_limit_reached_before_first_turn_announces_prompt_then_notice():
    out = run(["never"], execution_limits=ExecutionLimits(max_turns=None, max_total_tokens=None, max_duration=1e-9))
    assert out.provider.calls == []
    assert out.types == ["AgentStart", "MessageStart", "MessageEnd", "MessageStart", "MessageEnd", "AgentEnd"]
    assert [text_of(m) for m in out.messages][0] == "hi"
    assert _stop_notice(out).startswith("[Agent stopped: Max duration")
