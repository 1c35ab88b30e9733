"""What one loop run is given: the conversation (AgentContext) and the behaviour (AgentLoopConfig).

SPEC §4.1 lists every setting and hook; this module only declares them. The hook signatures are:

=============================  ==========================================================
``before_loop``                ``(messages, loop_index) -> bool`` — False: no run at all
``after_loop``                 ``(messages, usage)``
``before_turn``                ``(messages, turn_index) -> bool`` — False: end the run
``after_turn``                 ``(messages, usage)``
``on_error``                   ``(error_message)``
``before_tool_execution``      ``(tool_name, tool_call_id, args) -> bool`` — False: skip
``after_tool_execution``       ``(tool_name, tool_call_id, is_error)``
``before_tool_execution_update`` ``(tool_name, tool_call_id, text) -> bool`` — False: drop
``after_tool_execution_update``  ``(tool_name, tool_call_id, text)``
=============================  ==========================================================

A hook that returns ``None`` counts as True; only an explicit ``False`` vetoes.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypedDict

from ..errors import ConfigError
from ..providers.base import CacheConfig, StreamProvider
from ..providers.model_config import ModelConfig
from ..providers.retry import RetryConfig
from ..types import AgentMessage, ContinuationKind, Message, ThinkingLevel, TurnTrigger, Usage

if TYPE_CHECKING:  # imported lazily at run time to keep ``import phi`` light
    from ..context.compaction import CompactionStrategy
    from ..context.config import ContextConfig, ExecutionLimits
    from .filters import InputFilter
    from .tool import AgentTool


class ToolExecution(str, enum.Enum):
    """How the tool calls of one assistant message run (SPEC TOOL-3)."""

    PARALLEL = "parallel"
    SEQUENTIAL = "sequential"
    BATCHED = "batched"


@dataclass
class AgentContext:
    """The conversation a loop works on. ``messages`` is extended in place as the run goes."""

    system_prompt: str = ""
    messages: list[AgentMessage] = field(default_factory=list)
    tools: Sequence[AgentTool] = ()
    agent_id: str | None = None
    session_id: str | None = None
    loop_id: str | None = None
    parent_loop_id: str | None = None
    continuation_kind: ContinuationKind | None = None


@dataclass
class AgentLoopConfig:
    """Every behavioural setting of a run (SPEC §4.1). Enum settings also accept their string values."""

    model_config: ModelConfig = field(default_factory=ModelConfig.mock)
    provider: StreamProvider | None = None  # None: chosen by model_config.api from the registry
    thinking_level: ThinkingLevel = ThinkingLevel.OFF
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | None = None  # "auto", "none", "required" or a tool name; None: the service decides
    parallel_tool_calls: bool | None = None  # False: at most one tool call per reply; None: the service decides
    cache_config: CacheConfig = field(default_factory=CacheConfig)
    config_id: str | None = None
    first_turn_trigger: TurnTrigger = TurnTrigger.USER
    metadata: Any = None

    tool_execution: ToolExecution = ToolExecution.PARALLEL
    batch_size: int = 4
    tool_timeout_ms: int | None = None
    tool_abort_grace_ms: int = 1000  # how long an aborted run waits for running tools to return

    retry_config: RetryConfig = field(default_factory=RetryConfig)
    context_config: ContextConfig | None = None  # None disables compaction
    compaction_strategy: CompactionStrategy | None = None  # None: the default cascade
    execution_limits: ExecutionLimits | None = None  # None: no limits
    input_filters: Sequence[InputFilter | Callable[[str], Any]] = ()

    # Queue sources (SPEC LOOP-8, LOOP-9): ``get_*`` takes messages; ``put_back_*`` returns messages
    # the run took but could not deliver to the front of the queue, in order (LOOP-18). Without a
    # put-back, such messages are appended and announced before AgentEnd instead.
    get_steering_messages: Callable[[], list[AgentMessage]] | None = None
    get_follow_up_messages: Callable[[], list[AgentMessage]] | None = None
    put_back_steering_messages: Callable[[list[AgentMessage]], None] | None = None
    put_back_follow_up_messages: Callable[[list[AgentMessage]], None] | None = None
    clock: Callable[[], float] = time.monotonic  # seconds; what the duration limit is measured with

    transform_context: Callable[[list[AgentMessage]], list[AgentMessage]] | None = None
    convert_to_llm: Callable[[list[AgentMessage]], list[Message]] | None = None
    get_api_key: Callable[[str], str | None] | None = None

    before_loop: Callable[[list[AgentMessage], int], object] | None = None
    after_loop: Callable[[list[AgentMessage], Usage], object] | None = None
    before_turn: Callable[[list[AgentMessage], int], object] | None = None
    after_turn: Callable[[list[AgentMessage], Usage], object] | None = None
    on_error: Callable[[str], object] | None = None
    before_tool_execution: Callable[[str, str, Any], object] | None = None
    after_tool_execution: Callable[[str, str, bool], object] | None = None
    before_tool_execution_update: Callable[[str, str, str], object] | None = None
    after_tool_execution_update: Callable[[str, str, str], object] | None = None

    def __post_init__(self) -> None:
        self.thinking_level = ThinkingLevel(self.thinking_level)
        self.tool_execution = ToolExecution(self.tool_execution)
        self.first_turn_trigger = TurnTrigger(self.first_turn_trigger)
        if self.tool_choice is not None and (not isinstance(self.tool_choice, str) or not self.tool_choice):
            raise ConfigError(f"tool_choice must be 'auto', 'none', 'required' or a tool name, "
                              f"not {self.tool_choice!r}")
        if self.parallel_tool_calls is not None and not isinstance(self.parallel_tool_calls, bool):
            raise ConfigError(f"parallel_tool_calls must be True, False or None, not {self.parallel_tool_calls!r}")


QUEUE_SOURCES = ("get_steering_messages", "get_follow_up_messages", "put_back_steering_messages",
                 "put_back_follow_up_messages")


class LoopSettings(TypedDict, total=False):
    """The settings of :class:`AgentLoopConfig` an :class:`~phi.agent.Agent` takes as keyword arguments
    (all but the queue sources, which are the agent's own queues). Kept equal to the dataclass by
    ``tests/test_layout.py``."""

    model_config: ModelConfig
    provider: StreamProvider | None
    thinking_level: ThinkingLevel
    max_tokens: int | None
    temperature: float | None
    tool_choice: str | None
    parallel_tool_calls: bool | None
    cache_config: CacheConfig
    config_id: str | None
    first_turn_trigger: TurnTrigger
    metadata: Any
    tool_execution: ToolExecution
    batch_size: int
    tool_timeout_ms: int | None
    tool_abort_grace_ms: int
    retry_config: RetryConfig
    context_config: ContextConfig | None
    compaction_strategy: CompactionStrategy | None
    execution_limits: ExecutionLimits | None
    input_filters: Sequence[InputFilter | Callable[[str], Any]]
    clock: Callable[[], float]
    transform_context: Callable[[list[AgentMessage]], list[AgentMessage]] | None
    convert_to_llm: Callable[[list[AgentMessage]], list[Message]] | None
    get_api_key: Callable[[str], str | None] | None
    before_loop: Callable[[list[AgentMessage], int], object] | None
    after_loop: Callable[[list[AgentMessage], Usage], object] | None
    before_turn: Callable[[list[AgentMessage], int], object] | None
    after_turn: Callable[[list[AgentMessage], Usage], object] | None
    on_error: Callable[[str], object] | None
    before_tool_execution: Callable[[str, str, Any], object] | None
    after_tool_execution: Callable[[str, str, bool], object] | None
    before_tool_execution_update: Callable[[str, str, str], object] | None
    after_tool_execution_update: Callable[[str, str, str], object] | None
