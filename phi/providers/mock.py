"""ScriptedProvider: a deterministic, offline provider for tests, demos and the conformance suite.

Each call of ``stream`` plays the next :class:`ScriptedResponse`: content blocks streamed in chunks
(text, thinking, tool calls with argument chunks), a stop reason and usage, optionally an error
before or after N chunks (a classified ProviderError, or with ``throw`` a plain exception, as a
buggy provider would raise), a delay per chunk, or a hang that lasts until the run is cancelled.
Every :class:`~phi.providers.base.StreamConfig` it receives is recorded in ``calls``. It pickles
(for a parallel branch in another process, SPEC EVAL-7) when its script's callables are module-level.

A script item may be a ScriptedResponse, a plain string (a one-chunk text reply), a dict in the
conformance fixture format (see ``phi/conformance/suite/README.md``), or a callable that receives the call's
StreamConfig and returns one of those (so a script can react to tool results), e.g.::

    {"blocks": [{"type": "text", "chunks": ["Hel", "lo"]},
                {"type": "toolCall", "id": "t1", "name": "echo", "arguments": {"x": 1}}],
     "stop_reason": "toolUse", "usage": {"input": 10, "output": 5},
     "error": {"kind": "rate_limited", "after_chunks": 0, "retry_after_ms": 0}}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypedDict, Union

from ..concurrency import sync
from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..json_values import is_object
from ..types import AssistantMessage, StopReason, Usage
from .base import (
    AssistantBuilder,
    ErrorKind,
    ProviderError,
    StreamConfig,
    StreamEventSink,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack


@dataclass
class ScriptedBlock:
    """One content block: ``type`` is ``text``, ``thinking`` or ``toolCall``."""

    type: str
    chunks: list[str] = field(default_factory=list[str])
    signature: str | None = None  # thinking
    id: str = ""  # toolCall
    name: str = ""  # toolCall
    arguments: dict[str, Any] | None = None  # toolCall; streamed as JSON text when chunks is empty


@dataclass
class ScriptedError:
    """A failure a scripted reply raises after ``after_chunks`` chunks: a ``ProviderError`` of
    ``kind`` with ``message``, an optional HTTP ``status`` and ``retry_after_ms``. With ``started``
    the reply's start is reported first, as a service does whose response began before it failed:
    still nothing visible (SPEC EVT-7), so the attempt may be retried."""

    kind: str = "api"
    message: str = "scripted error"
    after_chunks: int = 0
    status: int | None = None
    retry_after_ms: int | None = None
    started: bool = False


class ReplyFields(TypedDict, total=False):
    """The :class:`ScriptedResponse` fields :meth:`ScriptedResponse.text` and
    :meth:`~ScriptedResponse.tool_call` take as keyword arguments."""

    stop_reason: StopReason | None
    usage: Usage
    error: ScriptedError | None
    chunk_delay_ms: float
    hang_after_chunks: int | None
    model: str
    error_message: str | None
    throw: ScriptedError | None
    cancelled_as: str | None
    first_chunk_delay_ms: float | None


@dataclass
class ScriptedResponse:
    """One scripted model reply: content ``blocks`` streamed chunk by chunk, a ``stop_reason``
    (default: ``toolUse`` with tool calls, else ``stop``), ``usage``, and optionally an ``error``
    (raised as a ProviderError) or ``throw`` (a plain exception, as a buggy provider would raise),
    a delay per chunk (and another before the first, if given), a hang until cancelled after N chunks, an ``error_message`` for the reply
    (with ``stop_reason`` ``error``), and ``cancelled_as``: the error kind a cancellation surfaces as
    (an HTTP stream whose socket was closed fails as ``network``) instead of an aborted reply.
    Build common ones with :meth:`text`, :meth:`tool_call` and :meth:`failure`."""

    blocks: list[ScriptedBlock] = field(default_factory=list[ScriptedBlock])
    stop_reason: StopReason | None = None  # default: toolUse when there are tool calls, else stop
    usage: Usage = field(default_factory=Usage)
    error: ScriptedError | None = None
    chunk_delay_ms: float = 0.0
    hang_after_chunks: int | None = None  # block until cancelled once this many chunks are out
    model: str = ""
    error_message: str | None = None
    throw: ScriptedError | None = None  # a provider bug: a plain exception (not a ProviderError)
    cancelled_as: str | None = None  # once cancelled, fail with this error kind instead of ending aborted
    first_chunk_delay_ms: float | None = None  # before the first chunk (a server's time to first token); None: chunk_delay_ms

    def __post_init__(self) -> None:
        _delay(self.chunk_delay_ms, "chunk_delay_ms")
        if self.first_chunk_delay_ms is not None:
            _delay(self.first_chunk_delay_ms, "first_chunk_delay_ms")

    @classmethod
    def text(cls, *chunks: str, **kwargs: Unpack[ReplyFields]) -> ScriptedResponse:
        return cls([ScriptedBlock("text", list(chunks))], **kwargs)

    @classmethod
    def tool_call(cls, name: str, arguments: dict[str, Any], call_id: str = "call_1",
                  **kwargs: Unpack[ReplyFields]) -> ScriptedResponse:
        return cls([ScriptedBlock("toolCall", id=call_id, name=name, arguments=arguments)], **kwargs)

    @classmethod
    def failure(cls, kind: str = "api", message: str = "scripted error", after_chunks: int = 0,
                status: int | None = None, retry_after_ms: int | None = None) -> ScriptedResponse:
        return cls(error=ScriptedError(kind, message, after_chunks, status, retry_after_ms))

    @classmethod
    def from_json(cls, data: object) -> ScriptedResponse:
        """Build from the fixture format; raises :class:`ConfigError` on a malformed script."""
        if isinstance(data, str):
            return cls.text(data)
        if not is_object(data):
            raise ConfigError(f"scripted response must be a string or an object, got {data!r}")
        blocks: list[ScriptedBlock] = []
        for i, raw in enumerate(data.get("blocks", [])):
            if not is_object(raw) or raw.get("type") not in ("text", "thinking", "toolCall"):
                raise ConfigError(f"blocks[{i}] must be an object with type text, thinking or toolCall")
            chunks = raw.get("chunks")
            if chunks is None and "text" in raw:
                chunks = [raw["text"]]
            blocks.append(
                ScriptedBlock(
                    raw["type"],
                    list(chunks or []),
                    raw.get("signature"),
                    raw.get("id", f"call_{i}"),
                    raw.get("name", ""),
                    raw.get("arguments"),
                )
            )
        error = _scripted_error(data.get("error"), "error")
        stop = data.get("stop_reason")
        return cls(
            blocks,
            StopReason(stop) if stop else None,
            Usage.from_json(data.get("usage", {}), "usage"),
            error,
            _delay(data.get("chunk_delay_ms", 0), "chunk_delay_ms"),
            data.get("hang_after_chunks"),
            data.get("model", ""),
            data.get("error_message"),
            _scripted_error(data.get("throw"), "throw"),
            _error_kind(data.get("cancelled_as"), "cancelled_as"),
            None if data.get("first_chunk_delay_ms") is None else _delay(data["first_chunk_delay_ms"],
                                                                          "first_chunk_delay_ms"),
        )


# A reply as a script gives it: a ScriptedResponse, a one-chunk text, or the fixture format's object.
ScriptReply = Union[ScriptedResponse, str, dict[str, Any]]
# A script item: a reply, or a function of the call's request that returns one.
ScriptItem = Union[ScriptReply, Callable[[StreamConfig], ScriptReply]]


def _delay(value: object, name: str) -> float:
    """A scripted pause in milliseconds: a finite number, 0 or more (a script's typo is said, not slept)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 86_400_000:
        raise ConfigError(f"{name} must be a number of milliseconds from 0 to a day, got {value!r}")
    return float(value)


def _error_kind(kind: object, name: str) -> str | None:
    kinds = [k.value for k in ErrorKind]
    if kind is not None and kind not in kinds:
        raise ConfigError(f"{name} must be one of {kinds}, got {kind!r}")
    return None if kind is None else str(kind)


def _scripted_error(err: object, name: str) -> ScriptedError | None:
    if err is None:
        return None
    if not is_object(err):
        raise ConfigError(f"{name} must be an object, got {err!r}")
    kinds = [k.value for k in ErrorKind]
    if err.get("kind", "api") not in kinds:
        raise ConfigError(f"{name}.kind must be one of {kinds}, got {err.get('kind')!r}")
    return ScriptedError(err.get("kind", "api"), err.get("message", "scripted error"), int(err.get("after_chunks", 0)),
                         err.get("status"), err.get("retry_after_ms"), bool(err.get("started", False)))


class ScriptedProvider:
    """Plays a script of responses, one per call; records what each call received.

    ``default`` (if given) is played when the script runs out; otherwise running out is a
    ``ProviderError`` of kind ``other`` that says how many calls were scripted. With
    ``record_calls=False`` the requests are not kept in ``calls`` (each holds its whole history).
    """

    def __init__(self, script: Iterable[ScriptItem] = (), provider_id: str = "mock", model: str = "mock-model",
                 default: ScriptItem | None = None, record_calls: bool = True) -> None:
        self.provider_id = provider_id
        self.record_calls = record_calls  # False for long runs: each recorded request holds its history
        self.model = model
        self._script = [_coerce(item) for item in script]
        self._default = None if default is None else _coerce(default)
        self._next = 0
        self._lock = sync.Lock()
        self.calls: list[StreamConfig] = []

    def __getstate__(self) -> dict[str, Any]:
        """Pickling (SPEC EVAL-7): everything but the lock. A copy plays the script on from where it
        was made and records its own calls; callables in the script pickle by reference."""
        with self._lock:
            state = dict(self.__dict__)
            state["_script"], state["calls"] = list(self._script), list(self.calls)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = sync.Lock()

    def add(self, *items: ScriptItem) -> ScriptedProvider:
        with self._lock:
            self._script.extend(_coerce(item) for item in items)
        return self

    @property
    def remaining(self) -> int:
        return len(self._script) - self._next

    def stream(self, config: StreamConfig, on_event: StreamEventSink, cancel: CancellationToken) -> AssistantMessage:
        with self._lock:
            if self.record_calls:
                self.calls.append(config)
            if self._next < len(self._script):
                response = self._script[self._next]
                self._next += 1
            elif self._default is not None:
                response = self._default
            else:
                raise ProviderError(
                    ErrorKind.OTHER, f"ScriptedProvider: script exhausted after {len(self._script)} responses"
                )
        if callable(response):
            produced = response(config)
            response = produced if isinstance(produced, ScriptedResponse) else ScriptedResponse.from_json(produced)
        return _play(response, on_event, cancel, response.model or config.model_config.id or self.model,
                     self.provider_id)


def _coerce(item: ScriptItem) -> ScriptedResponse | Callable[[StreamConfig], ScriptReply]:
    if isinstance(item, ScriptedResponse) or callable(item):
        return item  # a callable is asked for its response when its call comes
    return ScriptedResponse.from_json(item)


def _pieces(block: ScriptedBlock) -> list[str]:
    if block.type == "toolCall" and not block.chunks:
        return [json.dumps(block.arguments or {})] if block.arguments else []
    return block.chunks


def _play(response: ScriptedResponse, on_event: StreamEventSink, cancel: CancellationToken, model: str,
          provider: str) -> AssistantMessage:
    builder = AssistantBuilder(on_event, model, provider)
    error = response.error
    hang_at = response.hang_after_chunks
    delay = response.chunk_delay_ms / 1000.0
    first_delay = delay if response.first_chunk_delay_ms is None else response.first_chunk_delay_ms / 1000.0
    sent = 0
    waits = 0  # checkpoints passed (a tool call's start is one, before its first chunk)

    def checkpoint() -> AssistantMessage | None:
        """Before each chunk: fail, hang or stop as scripted. Returns a final message to end with."""
        nonlocal waits
        if error is not None and sent == error.after_chunks:
            # after deltas the loop ends the message as an error, keeping what was sent
            if error.started:
                builder.start()
            raise ProviderError(error.kind, error.message, status=error.status, retry_after_ms=error.retry_after_ms)
        if response.throw is not None and sent == response.throw.after_chunks:
            raise RuntimeError(response.throw.message)
        if hang_at is not None and sent == hang_at:
            builder.start()
            cancel.wait()
        wait = first_delay if waits == 0 else delay
        waits += 1
        if wait:
            cancel.wait(wait)
        if cancel.is_cancelled():
            if response.cancelled_as is not None:
                raise ProviderError(response.cancelled_as, "the stream was closed")
            return builder.finish(StopReason.ABORTED, "aborted")
        return None

    for block in response.blocks:
        pieces = _pieces(block)
        if block.type == "toolCall":
            if (final := checkpoint()) is not None:
                return final
            index = builder.tool_call_start(block.id, block.name)
            for piece in pieces:
                if (final := checkpoint()) is not None:
                    return final
                builder.tool_call_delta(index, piece)
                sent += 1
            builder.tool_call_end(index, dict(block.arguments) if block.arguments is not None and not block.chunks else None)
            continue
        first = True
        for piece in pieces or [""]:
            if (final := checkpoint()) is not None:
                return final
            if block.type == "text":
                builder.text(piece, new_block=first)
            else:
                builder.thinking(piece, new_block=first)
            first = False
            sent += 1
        if block.type == "thinking" and block.signature is not None:
            builder.thinking_signature(block.signature)
    if (final := checkpoint()) is not None:
        return final
    builder.usage = response.usage
    stop = response.stop_reason
    if stop is None:
        stop = StopReason.TOOL_USE if any(b.type == "toolCall" for b in response.blocks) else StopReason.STOP
    return builder.finish(stop, response.error_message)
