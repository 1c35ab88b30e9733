"""Issue 35 item 8: the run's ``tool_choice`` and ``parallel_tool_calls`` are the user's word
(SPEC TOOL-14). Each protocol sends them in its own form where it has one (PROV-3), but a service
may ignore them or have no way to say them, so the loop holds to them whatever comes back.

Every test talks to a server on 127.0.0.1 that ignores the setting and answers with tool calls
anyway, through a real Agent (real loop, real provider, real HTTP), for every protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest

from phi.agent import Agent
from phi.events import event_to_json
from phi.loop.tool_execution import NOT_RUN_CHOICE_NONE, NOT_RUN_ONE_PER_REPLY
from phi.providers.retry import RetryConfig
from phi.tools.function_tool import tool
from phi.types import AssistantMessage, ToolResultMessage

from .conftest import Recorded
from .wire_calls import PROTOCOLS, model_for, reply


def _recording_tool(ran: list[dict[str, Any]]):
    @tool
    def note(text: str) -> str:
        """Write a note down.

        Args:
            text: The note.
        """
        ran.append({"text": text})
        return f"noted {text}"

    return note


def _run(server, api: str, calls: int, **settings: Any):
    """One prompt against a server whose first reply makes ``calls`` tool calls (whatever the
    request said) and whose second reply is text; returns (tool runs, events, messages)."""

    def respond(request: Recorded):
        if len(server.requests) == 1:
            return reply(api, "", [(f"call_{n}", "note", {"text": f"n{n}"}) for n in range(calls)])
        return reply(api, "Done.")

    server.responder = respond
    ran: list[dict[str, Any]] = []
    hooks: list[tuple[str, str]] = []
    agent = Agent(model_config=model_for(api, server.url), tools=[_recording_tool(ran)],
                  retry_config=RetryConfig.none(), **settings)
    agent.config.before_tool_execution = lambda name, call_id, args: hooks.append(("before", call_id)) or True
    agent.config.after_tool_execution = lambda name, call_id, is_error: hooks.append(("after", call_id))
    stream = agent.prompt("take notes")
    events = [event_to_json(e) for e in stream]
    result = stream.result(20)
    assert result.messages[-1].stop_reason.value == "stop", result.messages[-1].error_message
    return ran, events, result.messages, hooks


def _every_call_answered(messages: list) -> None:
    """The history is a valid conversation: each call of each reply has exactly one result,
    in call order, before the next reply."""
    for i, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            results = messages[i + 1:i + 1 + len(message.tool_calls)]
            assert [r.tool_call_id for r in results if isinstance(r, ToolResultMessage)] == \
                [c.id for c in message.tool_calls]


@pytest.mark.parametrize("api", PROTOCOLS)
def test_no_tool_runs_under_tool_choice_none(server, api) -> None:
    """``tool_choice="none"``: the server answers with two calls anyway; neither runs. Each is
    answered with the TOOL-14 error (ToolExecutionStart/End, no approval hook), the history stays
    valid and the run goes on to the model's text answer."""
    ran, events, messages, hooks = _run(server, api, 2, tool_choice="none")
    assert ran == []
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 2 and all(r.is_error and r.text == NOT_RUN_CHOICE_NONE for r in results)
    _every_call_answered(messages)
    ids = [c.id for c in messages[1].tool_calls]
    starts = [e["tool_call_id"] for e in events if e["type"] == "ToolExecutionStart"]
    ends = [(e["tool_call_id"], e["is_error"]) for e in events if e["type"] == "ToolExecutionEnd"]
    assert starts == ids and ends == [(i, True) for i in ids]
    assert hooks == [("after", i) for i in ids]  # nothing to approve: no before_tool_execution
    announced = [e["message"]["toolCallId"] for e in events
                 if e["type"] == "MessageEnd" and e["message"]["role"] == "toolResult"]
    assert announced == ids
    turn_end = next(e for e in events if e["type"] == "TurnEnd")
    assert [r["toolCallId"] for r in turn_end["tool_results"]] == ids
    # the next request carries both answers (the conversation the service sees is valid too)
    second = json.dumps(server.requests[1].json())
    assert second.count("tool_choice is 'none'") == 2


@pytest.mark.parametrize("api", PROTOCOLS)
def test_only_the_first_call_runs_when_parallel_calls_are_off(server, api) -> None:
    """``parallel_tool_calls=False``: the server answers with two calls in one reply; only the
    first runs, the second gets the TOOL-14 error, both in call order."""
    ran, events, messages, hooks = _run(server, api, 2, parallel_tool_calls=False)
    assert ran == [{"text": "n0"}]
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, True]
    assert results[0].text == "noted n0" and results[1].text == NOT_RUN_ONE_PER_REPLY
    _every_call_answered(messages)
    first, second = (c.id for c in messages[1].tool_calls)
    assert hooks == [("before", first), ("after", first), ("after", second)]
    ends = [e["tool_call_id"] for e in events if e["type"] == "ToolExecutionEnd"]
    assert ends == [first, second]


@pytest.mark.parametrize("api", ["openai", "bedrock"])
def test_settings_left_unset_run_every_call(server, api) -> None:
    """Without the settings (the service decides) both calls run, as before."""
    ran, _, messages, _ = _run(server, api, 2)
    assert sorted(r["text"] for r in ran) == ["n0", "n1"]
    _every_call_answered(messages)
