"""SessionConfig (seed 004 §2.2): the seed's defaults, and settings phi cannot work with refused
with a ConfigError that names them."""

from __future__ import annotations

import pytest

from phi.coding import SessionConfig
from phi.errors import ConfigError
from phi.types import ThinkingLevel


def test_defaults_are_the_seeds():
    config = SessionConfig()
    assert (config.max_turns, config.max_tool_rounds_per_input, config.max_command_timeout_ms) == (0, 200, 600_000)
    assert config.reasoning_effort is None and config.thinking_level() == ThinkingLevel.OFF
    assert config.enable_loop_detection and config.loop_detection_window == 10
    assert config.max_subagent_depth == 1 and config.subagent_max_turns == 50
    assert config.tool_output_limits == {} and config.tool_line_limits == {}
    assert config.default_command_timeout_ms is None  # the profile's own default (10 s / 120 s)


@pytest.mark.parametrize("field, value", [
    ("max_turns", -1), ("max_subagent_depth", -1), ("max_tool_rounds_per_input", 0),
    ("max_command_timeout_ms", 0), ("subagent_max_turns", 0), ("default_command_timeout_ms", 0),
    ("loop_detection_window", 1), ("reasoning_effort", "maximum"),
    ("tool_output_limits", {"shell": -5}), ("tool_line_limits", {"shell": 0}),
])
def test_unusable_settings_are_refused_by_name(field, value):
    with pytest.raises(ConfigError, match=field):
        SessionConfig(**{field: value}).check()


@pytest.mark.parametrize("effort, level", [("low", ThinkingLevel.LOW), ("medium", ThinkingLevel.MEDIUM),
                                           ("high", ThinkingLevel.HIGH), ("xhigh", ThinkingLevel.XHIGH)])
def test_reasoning_effort_maps_to_the_cores_thinking_level(effort, level):
    assert SessionConfig(reasoning_effort=effort).thinking_level() == level
