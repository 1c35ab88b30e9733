"""Chainable setters for an Agent's loop settings (seed 001 §1, the builder API; SPEC §4.1).

Each ``with_<setting>(value)`` sets one field of the agent's :class:`~phi.loop.config.AgentLoopConfig`
(the same keyword also works in ``Agent(...)``) and returns the agent, so settings chain::

    agent = Agent(provider=p).with_max_tokens(1024).with_tool_execution(ToolExecution.SEQUENTIAL)

They apply to runs started afterwards; a run in progress keeps the settings it started with.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from ..loop.config import AgentLoopConfig, ToolExecution
from ..providers.base import CacheConfig, StreamProvider
from ..providers.model_config import ModelConfig
from ..providers.retry import RetryConfig
from ..types import AgentMessage, Message, ThinkingLevel, TurnTrigger

A = TypeVar("A", bound="AgentSettings")

Hook = Callable[..., Any]


class AgentSettings:
    """The ``with_*`` methods of :class:`~phi.agent.Agent` for its loop settings."""

    config: AgentLoopConfig

    # ----------------------------------------------------------------- model and request

    def with_model_config(self: A, model_config: ModelConfig) -> A:
        self.config.model_config = model_config
        return self

    def with_provider(self: A, provider: StreamProvider | None) -> A:
        """Use ``provider`` instead of the one ``model_config.api`` selects (None: back to that)."""
        self.config.provider = provider
        return self

    def with_thinking_level(self: A, level: ThinkingLevel | str) -> A:
        self.config.thinking_level = ThinkingLevel(level)
        return self

    def with_max_tokens(self: A, max_tokens: int | None) -> A:
        self.config.max_tokens = max_tokens
        return self

    def with_temperature(self: A, temperature: float | None) -> A:
        self.config.temperature = temperature
        return self

    def with_cache_config(self: A, cache_config: CacheConfig) -> A:
        self.config.cache_config = cache_config
        return self

    def with_retry_config(self: A, retry_config: RetryConfig) -> A:
        self.config.retry_config = retry_config
        return self

    def with_get_api_key(self: A, get_api_key: Callable[[str], str | None] | None) -> A:
        self.config.get_api_key = get_api_key
        return self

    # ----------------------------------------------------------------- identity

    def with_config_id(self: A, config_id: str | None) -> A:
        self.config.config_id = config_id
        return self

    def with_first_turn_trigger(self: A, trigger: TurnTrigger | str) -> A:
        self.config.first_turn_trigger = TurnTrigger(trigger)
        return self

    def with_metadata(self: A, metadata: Any) -> A:
        self.config.metadata = metadata
        return self

    # ----------------------------------------------------------------- tools

    def with_tool_execution(self: A, mode: ToolExecution | str) -> A:
        self.config.tool_execution = ToolExecution(mode)
        return self

    def with_batch_size(self: A, batch_size: int) -> A:
        self.config.batch_size = batch_size
        return self

    def with_tool_timeout_ms(self: A, timeout_ms: int | None) -> A:
        self.config.tool_timeout_ms = timeout_ms
        return self

    def with_tool_abort_grace_ms(self: A, grace_ms: int) -> A:
        self.config.tool_abort_grace_ms = grace_ms
        return self

    # ----------------------------------------------------------------- context and limits

    def with_context_config(self: A, context_config: Any) -> A:
        """Compaction settings (a :class:`phi.ContextConfig`; None disables compaction)."""
        self.config.context_config = context_config
        return self

    def with_compaction_strategy(self: A, strategy: Any) -> A:
        self.config.compaction_strategy = strategy
        return self

    def with_execution_limits(self: A, limits: Any) -> A:
        """Turn, token and duration caps (a :class:`phi.ExecutionLimits`; None: no limits)."""
        self.config.execution_limits = limits
        return self

    def with_input_filters(self: A, filters: Sequence[Any]) -> A:
        self.config.input_filters = list(filters)
        return self

    def with_transform_context(self: A, transform: Callable[[list[AgentMessage]], list[AgentMessage]] | None) -> A:
        self.config.transform_context = transform
        return self

    def with_convert_to_llm(self: A, convert: Callable[[list[AgentMessage]], list[Message]] | None) -> A:
        self.config.convert_to_llm = convert
        return self

    # ----------------------------------------------------------------- hooks (SPEC LOOP-14)

    def with_before_loop(self: A, hook: Hook | None) -> A:
        self.config.before_loop = hook
        return self

    def with_after_loop(self: A, hook: Hook | None) -> A:
        self.config.after_loop = hook
        return self

    def with_before_turn(self: A, hook: Hook | None) -> A:
        self.config.before_turn = hook
        return self

    def with_after_turn(self: A, hook: Hook | None) -> A:
        self.config.after_turn = hook
        return self

    def with_on_error(self: A, hook: Hook | None) -> A:
        self.config.on_error = hook
        return self

    def with_before_tool_execution(self: A, hook: Hook | None) -> A:
        self.config.before_tool_execution = hook
        return self

    def with_after_tool_execution(self: A, hook: Hook | None) -> A:
        self.config.after_tool_execution = hook
        return self

    def with_before_tool_execution_update(self: A, hook: Hook | None) -> A:
        self.config.before_tool_execution_update = hook
        return self

    def with_after_tool_execution_update(self: A, hook: Hook | None) -> A:
        self.config.after_tool_execution_update = hook
        return self
