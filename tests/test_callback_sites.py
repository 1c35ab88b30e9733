"""Every place phi calls user code, with user code that aborts, steers or raises (SPEC LOOP-5, LOOP-18,
LOOP-19; issue 9 item 2).

For each callback site — every subscriber event type, every hook, input filters, the tool itself
and a tool's cancellation callback — the run must end (no deadlock: every run is bounded by a
timeout), the agent must be idle again, the history must be a valid conversation, a steered message
must be in the history or still queued exactly once, and an exception must reach ``result()``
unchanged (except where SPEC turns it into something else: a tool's own exception is its result,
a cancellation callback's is logged).
"""

from __future__ import annotations

import itertools

import pytest
from history_checks import assert_valid_conversation

from phi import Agent, FunctionTool, ScriptedProvider
from phi.types import UserMessage

RUN_TIMEOUT = 10.0

EVENT_SITES = ["AgentStart", "TurnStart", "MessageStart", "MessageUpdate", "MessageEnd", "ToolExecutionStart",
               "ToolExecutionUpdate", "ProgressMessage", "ToolExecutionEnd", "TurnEnd", "AgentEnd"]
HOOK_SITES = ["before_loop", "before_turn", "after_turn", "before_tool_execution", "after_tool_execution",
              "before_tool_execution_update", "after_tool_execution_update", "after_loop", "transform_context",
              "convert_to_llm", "get_api_key", "on_error", "input_filter"]
TOOL_SITES = ["tool", "cancel_callback"]
SITES = [f"event:{name}" for name in EVENT_SITES] + [f"hook:{name}" for name in HOOK_SITES] + TOOL_SITES
BEHAVIOURS = ["abort", "steer", "raise"]

STEER_TEXT = "steered from a callback"


class UserCodeFailed(Exception):
    pass


def script(site: str) -> list:
    if site == "hook:on_error":
        return [{"error": {"kind": "api", "message": "bad request"}}]
    call = {"type": "toolCall", "id": "t1", "name": "work", "arguments": {}}
    return [{"blocks": [{"type": "text", "chunks": ["let me ", "check"]}, call]}, "done"]


def make_agent(site: str, behaviour: str) -> tuple[Agent, dict]:
    state = {"fired": 0}
    holder: dict = {}

    def act(*args):
        state["fired"] += 1
        agent = holder["agent"]
        if behaviour == "abort":
            agent.abort()
        elif behaviour == "steer":
            if state["fired"] == 1:
                agent.steer(STEER_TEXT)
        else:
            raise UserCodeFailed(site)

    def work(args, ctx):
        if site == "cancel_callback":
            ctx.cancel.on_cancel(act)
            ctx.cancel.on_cancel(lambda: ctx.progress("cancelling"))
            holder["agent"].abort()  # the cancellation runs the callbacks
            ctx.cancel.wait(2)
            return "stopped"
        if site == "tool":
            act()
        ctx.update("partial")
        ctx.progress("half way")
        return "ok"

    settings: dict = {}
    if site.startswith("hook:"):
        name = site[5:]
        if name == "input_filter":
            settings["input_filters"] = [lambda text: act()]
        elif name in ("transform_context", "convert_to_llm"):
            def passthrough(messages, _name=name):
                act()
                if _name == "convert_to_llm":
                    from phi.loop import default_convert_to_llm
                    return default_convert_to_llm(messages)
                return messages
            settings[name] = passthrough
        else:
            settings[name] = lambda *args: act()  # returns None: "continue"
    agent = Agent(provider=ScriptedProvider(script(site), default="more"),
                  tools=[FunctionTool("work", "does work", {"type": "object"}, work)], **settings)
    holder["agent"] = agent
    if site.startswith("event:"):
        wanted = site[6:]
        state["unsubscribe"] = agent.subscribe(lambda event: act() if event.type == wanted else None)
    return agent, state


def steer_count(agent: Agent) -> int:
    def is_steer(m):
        return isinstance(m, UserMessage) and m.text == STEER_TEXT
    return sum(map(is_steer, agent.messages)) + sum(map(is_steer, agent.steering_queue.snapshot()))


@pytest.mark.parametrize("site,behaviour", list(itertools.product(SITES, BEHAVIOURS)))
def test_user_code_at_every_site(site: str, behaviour: str) -> None:
    agent, state = make_agent(site, behaviour)
    stream = agent.prompt("go")
    assert stream.wait(RUN_TIMEOUT), f"{site}/{behaviour}: the run did not end (deadlock?)"
    assert agent.wait_for_idle(RUN_TIMEOUT)
    raises = behaviour == "raise" and state["fired"] and site not in ("tool", "cancel_callback")
    if raises:
        with pytest.raises(UserCodeFailed):
            stream.result()
    else:
        result = stream.result()
        if result.messages:  # the run's messages are the tail of the history
            assert agent.messages[-len(result.messages):] == result.messages
    assert state["fired"], f"{site} was never called"
    assert_valid_conversation(agent.messages)
    if behaviour == "steer":
        assert steer_count(agent) == 1, f"{site}: the steered message was lost or duplicated"
    # the agent is usable again, and what it sends next is a valid conversation
    agent.config.provider = ScriptedProvider(["again"])
    for name in HOOK_SITES:
        if name != "input_filter" and hasattr(agent.config, name):
            setattr(agent.config, name, None)
    agent.config.input_filters = []
    if "unsubscribe" in state:
        state["unsubscribe"]()
    assert agent.run("next", timeout=RUN_TIMEOUT).text == "again"
