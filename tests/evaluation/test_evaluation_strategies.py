"""The built-in strategies and the strategy contract (seed 000 REQ-199, REQ-200)."""

from __future__ import annotations

import pytest
from evaluation_helpers import branch, prompts, reply, run_parallel

from phi.errors import ConfigError
from phi.evaluation import (
    ElaborateEvaluation,
    EvaluationDecision,
    EvaluationError,
    EvaluationStrategy,
    LlmJudgeEvaluation,
    PickFirstEvaluation,
    TokenEfficientEvaluation,
    TransparentEvaluation,
    agent_loop_parallel,
)
from phi.loop.config import AgentContext, AgentLoopConfig
from phi.types import Usage

FAIL = {"error": {"kind": "api", "message": "boom"}}


def failed(total):
    """A reply that fails after using ``total`` tokens (the provider reports usage with the error)."""
    return {"blocks": [{"type": "text", "chunks": ["half"]}], "stop_reason": "error", "error_message": "cut off",
            "usage": {"total_tokens": total}}


def _three(*totals):
    return [branch([reply(f"answer {i}", total)], f"c{i}") for i, total in enumerate(totals)]


def test_every_built_in_strategy_satisfies_the_protocol():
    for strategy in (TransparentEvaluation(), PickFirstEvaluation(), TokenEfficientEvaluation(),
                     ElaborateEvaluation(), LlmJudgeEvaluation(AgentLoopConfig())):
        assert isinstance(strategy, EvaluationStrategy)


def test_transparent_passes_one_branch_through():
    run = run_parallel(prompts("q"), [branch([reply("only", 3)])], TransparentEvaluation())
    assert run.result.selected_config_index == 0 and run.result.text == "only"
    assert run.result.evaluation_usage == Usage()
    assert run.types[0] == "ParallelLoopStart" and run.types[-1] == "ParallelLoopEnd"


def test_transparent_refuses_several_configs_before_running_any():
    configs = _three(1, 2)
    with pytest.raises(ConfigError, match="exactly one config, got 2"):
        agent_loop_parallel(prompts("q"), AgentContext(), configs, TransparentEvaluation(), None)
    assert all(c.provider.calls == [] for c in configs)


def test_pick_first_selects_the_first_config():
    run = run_parallel(prompts("q"), _three(30, 10, 20), PickFirstEvaluation())
    assert run.result.selected_config_index == 0


def test_pick_first_skips_a_failed_first_branch():
    configs = [branch([FAIL], "bad"), branch([reply("good")], "good")]
    run = run_parallel(prompts("q"), configs, PickFirstEvaluation())
    assert run.result.selected_config_index == 1 and run.result.text == "good"


def test_token_efficient_selects_the_fewest_tokens():
    run = run_parallel(prompts("q"), _three(30, 10, 20), TokenEfficientEvaluation())
    assert run.result.selected_config_index == 1
    assert run.result.reason == "fewest tokens (10)"


def test_elaborate_selects_the_most_tokens():
    run = run_parallel(prompts("q"), _three(30, 10, 40), ElaborateEvaluation())
    assert run.result.selected_config_index == 2


def test_ties_go_to_the_earlier_config():
    assert run_parallel(prompts("q"), _three(7, 7, 9), TokenEfficientEvaluation()).result.selected_config_index == 0
    assert run_parallel(prompts("q"), _three(9, 7, 9), ElaborateEvaluation()).result.selected_config_index == 0


def test_a_failed_branch_is_never_selected_while_another_succeeded():
    # the failed branch reports the fewest (0) tokens; it must still lose
    configs = [branch([reply("long", 50)], "a"), branch([FAIL], "b"), branch([reply("short", 20)], "c")]
    assert run_parallel(prompts("q"), configs, TokenEfficientEvaluation()).result.selected_config_index == 2
    configs = [branch([reply("long", 50)], "a"), branch([failed(999)], "b")]  # the failed one used the most
    result = run_parallel(prompts("q"), configs, ElaborateEvaluation()).result
    assert result.outcomes[1].usage.total_tokens == 999 and result.selected_config_index == 0


def test_when_every_branch_failed_the_strategies_choose_among_all():
    configs = [branch([failed(5)], "a"), branch([failed(2)], "b")]
    run = run_parallel(prompts("q"), configs, TokenEfficientEvaluation())
    assert [o.usage.total_tokens for o in run.result.outcomes] == [5, 2]
    assert run.result.selected_config_index == 1
    assert all(not o.succeeded for o in run.result.outcomes)


class _Fixed:
    def __init__(self, index, usage=None):
        self.index, self.usage = index, usage or Usage()

    def evaluate(self, prompts, outcomes, sink, cancel):
        return EvaluationDecision.select(self.index, "fixed"), self.usage


def test_a_custom_strategy_decides_and_reports_its_usage():
    run = run_parallel(prompts("q"), _three(1, 2, 3), _Fixed(2, Usage(input=4, total_tokens=4)))
    assert run.result.selected_config_index == 2 and run.result.reason == "fixed"
    end = run.events[-1]
    assert (end.selected_config_index, end.evaluation_usage.total_tokens) == (2, 4)
    assert run.result.total_usage.total_tokens == 1 + 2 + 3 + 4


def test_a_strategy_choosing_no_branch_is_an_error_that_keeps_the_outcomes():
    run = run_parallel(prompts("q"), _three(1, 2), _Fixed(5))
    assert isinstance(run.error, EvaluationError)
    assert "selected" in str(run.error) and len(run.error.outcomes) == 2
    assert [o.text for o in run.error.outcomes] == ["answer 0", "answer 1"]
    assert "ParallelLoopEnd" not in run.types


def test_a_strategy_that_raises_is_an_error_that_keeps_the_outcomes():
    class Broken:
        def evaluate(self, prompts, outcomes, sink, cancel):
            raise KeyError("oops")

    run = run_parallel(prompts("q"), _three(1, 2), Broken())
    assert isinstance(run.error, EvaluationError) and isinstance(run.error.__cause__, KeyError)
    assert all(o.succeeded for o in run.error.outcomes)
