"""``AgentLoopConfig.with_changes`` (each run's copy of its agent's settings, issue 36) is
``dataclasses.replace`` — the same values, checks and conversions — without the field-by-field
rebuild."""

from __future__ import annotations

import dataclasses

import pytest

from phi.errors import ConfigError
from phi.loop.config import AgentLoopConfig
from phi.types import ThinkingLevel


def _drain() -> list[object]:
    return []


def test_it_equals_replace_and_leaves_the_original_alone() -> None:
    base = AgentLoopConfig(batch_size=7, tool_choice="auto")
    copied = base.with_changes(get_steering_messages=_drain, batch_size=3)
    assert copied == dataclasses.replace(base, get_steering_messages=_drain, batch_size=3)
    assert copied is not base and base.batch_size == 7 and base.get_steering_messages is None


def test_it_converts_and_checks_like_construction() -> None:
    base = AgentLoopConfig()
    assert base.with_changes(thinking_level="high").thinking_level is ThinkingLevel.HIGH
    with pytest.raises(ConfigError, match="tool_choice"):
        base.with_changes(tool_choice="")
    with pytest.raises(ValueError):
        base.with_changes(thinking_level="enormous")
    with pytest.raises(TypeError, match="no setting 'batch_sizes'"):
        base.with_changes(batch_sizes=1)


def test_a_setting_changed_on_the_agent_after_construction_is_checked_at_the_next_run() -> None:
    from phi import Agent, ScriptedProvider

    agent = Agent(provider=ScriptedProvider(["ok"]))
    agent.config.tool_choice = ""  # type: ignore[assignment]  # a caller without a type checker
    with pytest.raises(ConfigError, match="tool_choice"):
        agent.run("go")
    agent.config.tool_choice = None
    assert agent.run("go").text == "ok"


@dataclasses.dataclass
class _TaggedConfig(AgentLoopConfig):
    """An application's config with settings of its own (found by the issue-36 attack)."""

    tag: str = ""
    runs: list[str] = dataclasses.field(default_factory=list, init=False)  # per-config bookkeeping


def test_a_subclass_gets_replace_itself() -> None:
    base = _TaggedConfig(tag="a")
    base.runs.append("run-1")
    changed = base.with_changes(tag="b", batch_size=2)
    assert type(changed) is _TaggedConfig and changed.tag == "b" and changed.batch_size == 2
    assert changed.runs == [] and base.runs == ["run-1"]  # made anew, as replace makes it
    with pytest.raises(TypeError):
        base.with_changes(tags="c")
