"""What a remote branch is made of pickles, and a config has a JSON form (SPEC EVAL-7)."""

from __future__ import annotations

import concurrent.futures
import json
import pickle

import pytest
import remote_helpers
from evaluation_helpers import prompts, run_parallel

from phi.context.config import ContextConfig, ExecutionLimits
from phi.errors import ConfigError, DecodeError
from phi.evaluation import PickFirstEvaluation, RemoteBranches, agent_loop_parallel
from phi.evaluation.remote import BranchTask
from phi.loop import agent_loop
from phi.loop.config import CODE_SETTINGS, DATA_SETTINGS, AgentContext, AgentLoopConfig
from phi.providers.base import CacheConfig, CacheStrategy
from phi.providers.mock import ScriptedProvider
from phi.providers.model_config import ModelConfig
from phi.providers.pricing import ModelPrice
from phi.providers.retry import RetryConfig
from phi.tools.function_tool import DecoratedTool, tool
from phi.types import ThinkingLevel, UserMessage


def full_config(**code) -> AgentLoopConfig:
    price = ModelPrice(3.0, 15.0, cache_read=0.3, long_context=(200_000, ModelPrice(6.0, 22.5)))
    model = ModelConfig.anthropic("claude-sonnet-4-5", api_key="sk-secret", headers={"x-team": "t"}, cost=price,
                                  options={"region": "eu"}, capabilities={"temperature": False})
    return AgentLoopConfig(model_config=model, thinking_level="high", max_tokens=900, temperature=0.3,
                           cache_config=CacheConfig(strategy=CacheStrategy.MANUAL, cache_tools=False),
                           config_id="grid-7", metadata={"tags": ["a", "b"], "n": 1}, tool_execution="batched",
                           batch_size=2, tool_timeout_ms=5000, tool_abort_grace_ms=10,
                           retry_config=RetryConfig(max_retries=1, backoff_multiplier=1.5, jitter=False),
                           context_config=ContextConfig(max_context_tokens=50_000, keep_recent=4),
                           execution_limits=ExecutionLimits(max_turns=None, max_duration=30), **code)


def test_every_setting_is_either_data_or_code():
    names = {f for f in AgentLoopConfig.__dataclass_fields__}
    assert set(DATA_SETTINGS) | set(CODE_SETTINGS) == names
    assert not set(DATA_SETTINGS) & set(CODE_SETTINGS)
    assert {"provider", "before_turn", "clock", "input_filters", "get_steering_messages"} <= set(CODE_SETTINGS)


def test_a_config_round_trips_through_json():
    config = full_config()
    data = json.loads(json.dumps(config.to_json(include_secrets=True)))
    again = AgentLoopConfig.from_json(data)
    assert again == config
    assert again.thinking_level is ThinkingLevel.HIGH and again.execution_limits.max_turns is None
    assert again.model_config.cost.long_context == (200_000, ModelPrice(6.0, 22.5))
    assert AgentLoopConfig.from_json(AgentLoopConfig().to_json()) == AgentLoopConfig()


def test_secrets_stay_out_of_the_json_unless_asked_for():
    data = full_config().to_json()
    assert "api_key" not in data["model_config"] and "headers" not in data["model_config"]
    assert "sk-secret" not in json.dumps(data)
    again = AgentLoopConfig.from_json(data)
    assert again.model_config.api_key is None and again.model_config.id == "claude-sonnet-4-5"


def test_code_settings_have_no_json_form_and_come_back_as_keywords():
    provider = ScriptedProvider(["hi"])
    config = full_config(provider=provider, before_turn=remote_helpers.refuse_turn)
    assert config.code_settings() == ["provider", "before_turn"]
    with pytest.raises(ConfigError, match=r"\['provider', 'before_turn'\] hold code"):
        config.to_json()
    data = config.to_json(omit_code=True, include_secrets=True)
    again = AgentLoopConfig.from_json(data, provider=provider, before_turn=remote_helpers.refuse_turn)
    assert again == config
    with pytest.raises(ConfigError, match="only code settings"):
        AgentLoopConfig.from_json(data, max_tokens=3)
    counted = AgentLoopConfig(context_config=ContextConfig(token_counter=len))
    assert counted.code_settings() == ["context_config.token_counter"]
    with pytest.raises(ConfigError, match="metadata has no JSON form"):
        AgentLoopConfig(metadata=object()).to_json()


@pytest.mark.parametrize("data, field", [
    ("not an object", "config"),
    ({"modle": 1}, "config.modle"),
    ({"batch_size": "4"}, "config.batch_size"),
    ({"batch_size": True}, "config.batch_size"),
    ({"thinking_level": "extreme"}, "config.thinking_level"),
    ({"model_config": {"id": "x", "reasoning": "yes"}}, "config.model_config.reasoning"),
    ({"model_config": {"api": "x"}}, "config.model_config"),
    ({"model_config": {"id": "x", "cost": {"input": 1, "output": 2, "long_context": 5}}},
     "config.model_config.cost.long_context"),
    ({"cache_config": {"strategy": "sometimes"}}, "config.cache_config.strategy"),
    ({"retry_config": {"max_retries": 1, "extra": 0}}, "config.retry_config.extra"),
])
def test_bad_json_names_the_field(data, field):
    with pytest.raises(DecodeError) as raised:
        AgentLoopConfig.from_json(data)
    assert raised.value.field == field


def test_values_the_settings_refuse_are_config_errors():
    with pytest.raises(ConfigError, match="max_context_tokens"):
        AgentLoopConfig.from_json({"context_config": {"max_context_tokens": 0}})


def test_a_module_level_tool_pickles_by_reference():
    assert pickle.loads(pickle.dumps(remote_helpers.shout)) is remote_helpers.shout


def test_a_tool_made_from_a_function_pickles_as_that_function():
    again = pickle.loads(pickle.dumps(remote_helpers.counter))
    assert isinstance(again, DecoratedTool) and again is not remote_helpers.counter
    assert (again.name, again.description, again.parameters) == ("count", "Count the words of a text.",
                                                                 remote_helpers.counter.parameters)
    assert again.fn is remote_helpers.count_words and again("a b c") == 3


def test_a_tool_of_a_local_function_does_not_pickle():
    def local(text: str) -> str:
        """Local."""
        return text

    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(tool(local))


def test_a_scripted_provider_pickles_and_plays_on_from_where_it_was():
    provider = ScriptedProvider(["one", remote_helpers.echo_last, "three"])
    agent_loop([UserMessage.from_text("q")], AgentContext(), AgentLoopConfig(provider=provider), lambda e: None)
    copy = pickle.loads(pickle.dumps(provider))
    assert copy.remaining == 2 and len(copy.calls) == 1
    events: list = []
    agent_loop([UserMessage.from_text("hello")], AgentContext(), AgentLoopConfig(provider=copy), events.append)
    assert events[-1].messages[-1].text == "you said: hello"
    assert copy.remaining == 1 and provider.remaining == 2  # the copy is its own
    assert copy.add("four").remaining == 2  # its lock works


def test_a_branch_task_an_events_and_a_result_pickle():
    history = [UserMessage.from_text("earlier")]
    context = AgentContext("sys", list(history), [remote_helpers.shout, remote_helpers.counter], "ag", "s", "s.x.1")
    task = BranchTask(remote_helpers.config(remote_helpers.tool_then_answer(0, 5), "x"), context, prompts("go"))
    again = pickle.loads(pickle.dumps(task))
    assert again.context.tools[0] is remote_helpers.shout and again.context.loop_id == "s.x.1"
    assert again.config.provider.remaining == 2 and again.prompts[0].text == "go"
    run = run_parallel(prompts("go"), [task.config], PickFirstEvaluation(), context=AgentContext(tools=[remote_helpers.shout]))
    for event in run.events:
        assert pickle.loads(pickle.dumps(event)) == event
    result = pickle.loads(pickle.dumps(run.result))
    assert result.text == run.result.text and result.selected.context.tools[0] is remote_helpers.shout


def test_a_remote_branch_that_does_not_pickle_is_a_config_error_before_anything_runs():
    pool = concurrent.futures.ThreadPoolExecutor(2)
    events: list = []
    configs = [remote_helpers.config(["a"], "fine"), remote_helpers.config(["b"], "hooked", before_turn=lambda m, i: True)]
    with pytest.raises(ConfigError, match=r"configs\[1\] cannot run in another process: configs\[1\].before_turn"):
        agent_loop_parallel(prompts("q"), AgentContext(), configs, PickFirstEvaluation(), events.append,
                            executor=RemoteBranches(pool))

    def local(text: str) -> str:
        """Local."""
        return text

    with pytest.raises(ConfigError, match="the tool 'local'"):
        agent_loop_parallel(prompts("q"), AgentContext(tools=[tool(local)]), [configs[0]], PickFirstEvaluation(),
                            events.append, executor=RemoteBranches(pool))
    assert events == [] and configs[0].provider.calls == []
    pool.shutdown()
