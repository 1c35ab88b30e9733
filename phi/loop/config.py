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

:meth:`AgentLoopConfig.to_json` / :meth:`~AgentLoopConfig.from_json` give the data settings a JSON
form (SPEC EVAL-7); settings that hold code (the provider object, hooks, sources, filters) have none.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypedDict, TypeGuard, cast

from ..concurrency import sync
from ..errors import ConfigError, DecodeError
from ..json_values import is_array

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
    messages: list[AgentMessage] = field(default_factory=list[AgentMessage])
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
    clock: Callable[[], float] = sync.monotonic  # seconds; what the duration limit is measured with

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
        if self.tool_choice is not None and (
                not isinstance(self.tool_choice, str)  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
                or not self.tool_choice):
            raise ConfigError(f"tool_choice must be 'auto', 'none', 'required' or a tool name, "
                              f"not {self.tool_choice!r}")
        if self.parallel_tool_calls is not None and not isinstance(
                self.parallel_tool_calls, bool):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            raise ConfigError(f"parallel_tool_calls must be True, False or None, not {self.parallel_tool_calls!r}")

    def with_changes(self, **changes: Any) -> AgentLoopConfig:
        """``dataclasses.replace(self, **changes)`` — the same checks and conversions
        (``__post_init__``) — without rebuilding every field through ``__init__``: each run makes
        one (SPEC §4), so this is on the path of every run of every session. A subclass (an
        application's config with settings of its own) gets ``dataclasses.replace`` itself."""
        if type(self) is not AgentLoopConfig:
            return dataclasses.replace(self, **changes)
        copied = copy.copy(self)
        for name, value in changes.items():
            if name not in _FIELD_NAMES:
                raise TypeError(f"AgentLoopConfig has no setting {name!r}")
            setattr(copied, name, value)
        copied.__post_init__()
        return copied

    def code_settings(self) -> list[str]:
        """The settings that hold code and are set (not None, empty or their default): they have no
        JSON form (SPEC EVAL-7)."""
        found: list[str] = []
        for name in CODE_SETTINGS:
            value = getattr(self, name)
            if not (value is None or value is _DEFAULT_CODE.get(name) or (name == "input_filters" and not value)):
                found.append(name)
        context = self.context_config
        if context is not None and not _is_default_counter(context.token_counter):
            found.append("context_config.token_counter")
        return found

    def to_json(self, *, include_secrets: bool = False, omit_code: bool = False) -> dict[str, Any]:
        """The data settings (:data:`DATA_SETTINGS`) as JSON values (SPEC EVAL-7).

        ``model_config.api_key`` and ``headers`` are left out unless ``include_secrets``. A setting
        that holds code (:meth:`code_settings`) raises :class:`~phi.errors.ConfigError` unless
        ``omit_code``; give it back to :meth:`from_json` as a keyword. ``metadata`` must be JSON.
        """
        code = self.code_settings()
        if code and not omit_code:
            raise ConfigError(f"AgentLoopConfig settings {code} hold code and have no JSON form; pass "
                              "omit_code=True to leave them out and give them back to from_json(data, **code)")
        out = {name: _plain(getattr(self, name)) for name in DATA_SETTINGS}
        if not include_secrets:
            for secret in ("api_key", "headers"):
                out["model_config"].pop(secret)
        if out["context_config"] is not None:
            out["context_config"].pop("token_counter")
        try:
            json.dumps(out["metadata"])
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"AgentLoopConfig.metadata has no JSON form: {exc}") from None
        return out

    @classmethod
    def from_json(cls, data: object, **code: Any) -> AgentLoopConfig:
        """A config from :meth:`to_json`'s form; ``code`` gives the settings that hold code (e.g.
        ``provider=``, ``before_turn=``). Raises :class:`~phi.errors.DecodeError` naming a malformed
        or unknown field, :class:`~phi.errors.ConfigError` for a keyword that is not a code setting."""
        wrong = sorted(set(code) - set(CODE_SETTINGS))
        if wrong:
            raise ConfigError(f"from_json takes only code settings as keywords, not {wrong}; known: {list(CODE_SETTINGS)}")
        if not _is_mapping(data):
            raise DecodeError("config", data, "an object of AgentLoopConfig settings")
        unknown = sorted(set(data) - set(DATA_SETTINGS))
        if unknown:
            raise DecodeError(f"config.{unknown[0]}", data[unknown[0]], f"one of the data settings {list(DATA_SETTINGS)}")
        settings = {name: _decode(data[name], _template(cls, name), f"config.{name}") for name in data}
        return cls(**settings, **code)


#: The settings of :class:`AgentLoopConfig` that have a JSON form (SPEC EVAL-7); every other one holds code.
DATA_SETTINGS = ("model_config", "thinking_level", "max_tokens", "temperature", "cache_config", "config_id",
                 "first_turn_trigger", "metadata", "tool_execution", "batch_size", "tool_timeout_ms",
                 "tool_abort_grace_ms", "retry_config", "context_config", "execution_limits")
CODE_SETTINGS = tuple(f.name for f in dataclasses.fields(AgentLoopConfig) if f.name not in DATA_SETTINGS)
_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(AgentLoopConfig))
_DEFAULT_CODE: dict[str, Any] = {"clock": sync.monotonic, "input_filters": ()}


def _is_default_counter(counter: object) -> bool:
    from ..context.tokens import DEFAULT_COUNTER

    return counter is DEFAULT_COUNTER


def _plain(value: Any) -> Any:
    """A value of the config as JSON: dataclasses as objects, enums as their values, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in cast("Sequence[Any]", value)]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in cast("Mapping[Any, Any]", value).items()}
    return value


def _is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    """True for any mapping (its keys and values are whatever the caller decoded)."""
    return isinstance(value, Mapping)


def _template(owner: type, name: str) -> Any:
    """What a field of ``owner`` holds, to decode it: its default, or the class when the default is None."""
    from ..context.config import ContextConfig, ExecutionLimits
    from ..providers.pricing import ModelPrice

    classes: dict[str, Any] = {"AgentLoopConfig.context_config": ContextConfig,
                               "AgentLoopConfig.execution_limits": ExecutionLimits, "ModelConfig.cost": ModelPrice,
                               "ModelPrice.long_context": _long_context}
    found = next(f for f in dataclasses.fields(owner) if f.name == name)
    if f"{owner.__name__}.{name}" in classes:
        return classes[f"{owner.__name__}.{name}"]
    if owner in (ContextConfig, ExecutionLimits):  # they check their own fields (None is allowed in places)
        return None
    if found.default_factory is not dataclasses.MISSING:
        return found.default_factory()
    return None if found.default is dataclasses.MISSING else found.default


# a JSON value's template kind, the types that decode as it, and what a wrong value is told it should be
_SCALARS: tuple[tuple[type, tuple[type, ...], str], ...] = (
    (bool, (bool,), "a boolean"), (int, (int,), "an integer"), (float, (int, float), "a number"),
    (str, (str,), "a string"), (dict, (dict,), "an object"))


def _decode(raw: Any, template: Any, path: str) -> Any:
    """``raw`` as the kind of value ``template`` is: a dataclass (or its class, when None is allowed),
    an enum member, a decoding function, or a JSON scalar whose type must match."""
    if dataclasses.is_dataclass(template):
        if raw is None and isinstance(template, type):
            return None
        return _build(template if isinstance(template, type) else type(template), raw, path)
    if isinstance(template, enum.Enum):
        try:
            return type(template)(raw)
        except ValueError:
            raise DecodeError(path, raw, "one of " + ", ".join(repr(m.value) for m in type(template))) from None
    if callable(template) and not isinstance(template, type):
        return template(raw, path)
    for kind, accepted, expected in _SCALARS:
        if isinstance(template, kind):
            if not isinstance(raw, accepted) or (kind is not bool and isinstance(raw, bool)):
                raise DecodeError(path, raw, expected)
            return float(raw) if kind is float and isinstance(raw, (int, float)) else raw
    return raw


def _build(kind: type, raw: Any, path: str) -> Any:
    if not _is_mapping(raw):
        raise DecodeError(path, raw, f"a {kind.__name__} object")
    names = {f.name for f in dataclasses.fields(kind)}
    for name in raw:
        if name not in names:
            raise DecodeError(f"{path}.{name}", raw[name], f"one of the {kind.__name__} fields {sorted(names)}")
    values = {name: _decode(value, _template(kind, name), f"{path}.{name}") for name, value in raw.items()}
    try:
        return kind(**values)
    except TypeError as exc:
        raise DecodeError(path, raw, f"a {kind.__name__} object ({exc})") from None


def _long_context(raw: Any, path: str) -> Any:
    """``ModelPrice.long_context``: None or ``[threshold, price]``."""
    from ..providers.pricing import ModelPrice

    if raw is None:
        return None
    if not is_array(raw) or len(raw) != 2 or not isinstance(raw[0], int):
        raise DecodeError(path, raw, "null or [prompt-token threshold, price object]")
    return (raw[0], _build(ModelPrice, raw[1], f"{path}[1]"))


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
