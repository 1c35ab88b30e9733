"""phi.providers.pricing: cost per category and total from Usage (seed 002 §3.3); unknown models cost None."""

from __future__ import annotations

import pytest

from phi.providers.pricing import PRICES, Cost, ModelPrice, cost_of, format_cost, price_for, set_price
from phi.providers.model_config import ModelConfig
from phi.types import Usage


def test_cost_per_category_and_total_from_usage():
    usage = Usage(input=1_000_000, output=200_000, cache_read=500_000, cache_write=100_000)
    cost = cost_of(usage, "claude-sonnet-4-5")
    assert cost == Cost(input=3.0, output=3.0, cache_read=0.15, cache_write=0.375)
    assert cost.total == pytest.approx(6.525)
    assert cost.to_json()["total"] == pytest.approx(6.525)


def test_unknown_models_cost_none_never_a_guess():
    assert cost_of(Usage(input=10), "my-private-model") is None
    assert price_for("gpt-5-turbo-max") is None  # a prefix of a known name is not that model
    assert format_cost(None) == "unknown"


def test_dated_snapshots_and_provider_prefixes_use_their_model_price():
    assert price_for("claude-sonnet-4-5-20250929") == PRICES["claude-sonnet-4-5"]
    assert price_for("gpt-4o-2024-08-06") == PRICES["gpt-4o"]
    assert price_for("anthropic:claude-haiku-4-5") == PRICES["claude-haiku-4-5"]
    assert price_for("models/gemini-2.5-flash") == PRICES["gemini-2.5-flash"]
    assert price_for("gpt-5-mini") == PRICES["gpt-5-mini"] != PRICES["gpt-5"]


def test_a_model_config_is_priced_by_its_id():
    assert price_for(ModelConfig.anthropic("claude-opus-4-5")) == PRICES["claude-opus-4-5"]


def test_overrides_per_call_and_per_process_win_over_the_table():
    mine = ModelPrice(1.0, 2.0)
    assert cost_of(Usage(input=1_000_000), "gpt-5", prices={"gpt-5": mine}).input == 1.0
    set_price("my-private-model", mine)
    try:
        cost = cost_of(Usage(input=1_000_000, output=1_000_000, cache_read=1_000_000), "my-private-model")
        assert cost == Cost(1.0, 2.0, 1.0, 0.0)  # no cache_read price: charged at the input rate
    finally:
        set_price("my-private-model", None)
    assert price_for("my-private-model") is None


def test_a_price_on_the_model_object_itself_is_used():
    class Config:
        id = "claude-sonnet-4-5"
        cost = ModelPrice(0.5, 0.5)

    assert cost_of(Usage(input=2_000_000), Config()).input == 1.0


def test_model_config_cost_overrides_the_table_and_prices_unknown_models():
    listed = ModelConfig.anthropic("claude-sonnet-4-5", cost=ModelPrice(0.5, 0.5))
    assert cost_of(Usage(input=2_000_000), listed).input == 1.0
    private = ModelConfig(id="my-private-deployment", base_url="http://127.0.0.1:9/v1")
    assert cost_of(Usage(input=1), private) is None
    private.cost = ModelPrice(input=2.0, output=8.0)
    assert cost_of(Usage(input=1_000_000, output=500_000), private).total == 6.0


def test_gemini_pro_long_prompts_use_the_higher_rate():
    short = cost_of(Usage(input=100_000, output=1_000_000), "gemini-2.5-pro")
    long = cost_of(Usage(input=300_000, output=1_000_000), "gemini-2.5-pro")
    assert short.output == 10.0 and long.output == 15.0
    assert long.input == pytest.approx(0.75)


def test_format_cost():
    assert format_cost(Cost(input=0.0123)) == "$0.0123"
    assert format_cost(Cost(output=12.5)) == "$12.50"
