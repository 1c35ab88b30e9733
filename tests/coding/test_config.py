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


def test_default_output_limits_are_the_seeds_table():
    """Seed 004 §5.2/§5.3 (§9.5 "default character limits match the table"), and every tool a profile
    offers has a row of it (its own name, or the seed tool it stands for) instead of the fallback."""
    from phi.coding import create_profile
    from phi.coding.pipeline import SESSION_TOOL_LIMITS, SESSION_TOOL_MODES
    from phi.tools.truncation import DEFAULT_LINE_LIMITS, DEFAULT_TOOL_LIMITS, DEFAULT_TRUNCATION_MODES

    # listings and search results keep their head (SPEC §9.2; issue 25 item 11), not the seed's tail
    seed = {"read_file": (50_000, "head_tail"), "shell": (30_000, "head_tail"), "grep": (20_000, "head"),
            "glob": (20_000, "head"), "edit_file": (10_000, "tail"), "apply_patch": (10_000, "tail"),
            "write_file": (1_000, "tail"), "spawn_agent": (20_000, "head_tail")}
    limits, modes = {**DEFAULT_TOOL_LIMITS, **SESSION_TOOL_LIMITS}, {**DEFAULT_TRUNCATION_MODES, **SESSION_TOOL_MODES}
    assert {name: (limits[name], modes[name]) for name in seed} == seed
    assert (DEFAULT_LINE_LIMITS["shell"], DEFAULT_LINE_LIMITS["grep"], DEFAULT_LINE_LIMITS["glob"]) == (256, 200, 500)
    for profile_id in ("openai", "anthropic", "gemini"):
        offered = create_profile(profile_id).tool_registry.names()
        unlisted = [n for n in offered if n not in limits and n not in ("send_input", "close_agent")]
        assert not unlisted, f"{profile_id} tools without a §5.2 limit: {unlisted}"
