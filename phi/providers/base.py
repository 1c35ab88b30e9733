"""The provider contract (SPEC §7): what the loop asks of an LLM wire protocol.

A provider has a ``provider_id`` and one method, ``stream(config, on_event, cancel)``. It sends
``config`` to the model, calls ``on_event`` with a :class:`StreamEvent` for every piece of the reply
as it arrives, and returns the finished :class:`~phi.types.AssistantMessage`. It either returns a
message (whose stop reason may be ``error`` or ``aborted``, keeping the partial content) or raises a
:class:`ProviderError`; the loop handles both.

:class:`AssistantBuilder` does the bookkeeping every provider needs: it assembles content blocks
from deltas and emits the matching events, each carrying a snapshot of the message so far.
"""

from __future__ import annotations

import enum
import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NoReturn, Protocol, Sequence, runtime_checkable

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError, PhiError
from ..json_values import JsonObject, is_array, is_object
from ..types import (
    AssistantMessage,
    Content,
    Message,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolDefinition,
    Usage,
    now_ms,
)
from .model_config import ModelConfig
from .secret_registry import SECRETS
from .secrets import check_secret, scrub

# --------------------------------------------------------------------------- configuration


class CacheStrategy(str, enum.Enum):
    """Where providers with explicit prompt caching (Anthropic, Bedrock) put cache breakpoints
    (``CacheConfig.strategy``): ``AUTO`` on the system prompt, tools and messages; ``MANUAL`` only
    where ``CacheConfig.cache_system``/``cache_tools``/``cache_messages`` say; ``DISABLED`` nowhere."""

    AUTO = "auto"
    DISABLED = "disabled"
    MANUAL = "manual"


@dataclass(slots=True)
class CacheConfig:
    """Prompt-caching hints (Anthropic-style breakpoints). ``MANUAL`` uses the three flags."""

    enabled: bool = True
    strategy: CacheStrategy = CacheStrategy.AUTO
    cache_system: bool = True
    cache_tools: bool = True
    cache_messages: bool = True


@dataclass(slots=True)
class StreamConfig:
    """Everything one model call needs (SPEC §4.1, §7). ``messages`` hold only LLM roles (no
    extension messages)."""

    model_config: ModelConfig
    system_prompt: str = ""
    messages: Sequence[Message] = field(default_factory=list[Message])  # read only: any sequence will do
    tools: Sequence[ToolDefinition] = field(default_factory=list[ToolDefinition])
    thinking_level: ThinkingLevel = ThinkingLevel.OFF
    max_tokens: int | None = None
    temperature: float | None = None
    cache_config: CacheConfig = field(default_factory=CacheConfig)
    api_key: str | None = field(default=None, repr=False)  # resolved by the loop's get_api_key
    # Which tool the model may or must call: "auto", "none", "required" or a tool's name; None
    # leaves it to the service (auto). See convert.tool_choice for how each protocol says it.
    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None  # False: at most one tool call per reply; None: the service's default

    def resolved_api_key(self) -> str | None:
        """The call's key (the loop's ``get_api_key`` result) or else the model's, stripped of
        surrounding whitespace; a key with a control character inside is an ``auth`` error."""
        try:
            key = (check_secret(self.api_key, "the API key returned by get_api_key", ascii_only=True)
                   or check_secret(self.model_config.api_key, "ModelConfig.api_key", ascii_only=True))
        except ConfigError as exc:
            raise ProviderError(ErrorKind.AUTH, str(exc)) from None
        SECRETS.register(key)  # a key in use stays known however many others come (OTEL-11)
        return key


# --------------------------------------------------------------------------- stream events


class StreamEventKind(str, enum.Enum):
    START = "start"
    TEXT_DELTA = "text_delta"
    THINKING_DELTA = "thinking_delta"
    TOOLCALL_START = "toolcall_start"
    TOOLCALL_DELTA = "toolcall_delta"
    TOOLCALL_END = "toolcall_end"
    DONE = "done"
    ERROR = "error"


class StreamEvent:
    """One step of a streamed reply: ``kind``, the content block ``index`` concerned, the new text
    ``delta`` (for the delta kinds) and ``partial``, the message so far.

    ``partial`` may be given as a message or as a function that builds one; the function is called
    when ``partial`` is first read (read it inside the callback: built later, it shows the message
    as it is then). :class:`AssistantBuilder` passes a function, so a delta costs O(1) instead of a
    copy of the message (SPEC EVT-6).
    """

    __slots__ = ("kind", "index", "delta", "error", "_partial")

    def __init__(self, kind: StreamEventKind, partial: AssistantMessage | Callable[[], AssistantMessage],
                 index: int = 0, delta: str = "", error: ProviderError | None = None) -> None:
        self.kind = kind
        self._partial = partial
        self.index = index
        self.delta = delta
        self.error = error

    @property
    def partial(self) -> AssistantMessage:
        partial = self._partial
        if not isinstance(partial, AssistantMessage):
            partial = self._partial = partial()
        return partial

    def __repr__(self) -> str:
        return f"StreamEvent({self.kind.value}, index={self.index}, delta={self.delta!r})"


StreamEventSink = Callable[[StreamEvent], None]


@runtime_checkable
class StreamProvider(Protocol):
    """An LLM wire protocol. See the module docstring for the contract."""

    provider_id: str

    def stream(self, config: StreamConfig, on_event: StreamEventSink, cancel: CancellationToken) -> AssistantMessage:
        ...


# --------------------------------------------------------------------------- errors (SPEC PROV-2, ERR-1)


class ErrorKind(str, enum.Enum):
    """How a provider failure is classified (SPEC PROV-2), as ``ProviderError.kind``. Only
    ``RATE_LIMITED`` and ``NETWORK`` are retried (ERR-1); ``CONTEXT_OVERFLOW`` compacts the context
    and retries once when context settings are configured (ERR-4)."""

    RATE_LIMITED = "rate_limited"
    NETWORK = "network"
    AUTH = "auth"
    API = "api"
    CONTEXT_OVERFLOW = "context_overflow"
    CANCELLED = "cancelled"
    OTHER = "other"


# Phrases services use when the prompt does not fit the context window (case-insensitive).
OVERFLOW_PATTERNS: tuple[str, ...] = (
    r"prompt is too long",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"model_context_window_exceeded",
    # local servers (PROV-6): llama.cpp's error type, Ollama, vLLM, LM Studio
    r"exceed_context_size_error",
    r"input length exceeds the context length",
    r"prompt is longer than the context length",
    r"longer than the maximum model length",
    r"loaded with context length of only \d+",
)
_OVERFLOW_RE = re.compile("|".join(OVERFLOW_PATTERNS), re.IGNORECASE)


def is_context_overflow(status: int | None, body: str | None) -> bool:
    """True when an error says the prompt is larger than the model's window.

    Matches any of :data:`OVERFLOW_PATTERNS`, or an empty body with status 400/413 (how Cerebras
    and Mistral answer an oversized request).
    """
    text = (body or "").strip()
    if not text:
        return status in (400, 413)
    return _OVERFLOW_RE.search(text) is not None


MAX_RETRY_AFTER_MS = 24 * 3600 * 1000  # a day; RetryConfig.max_retry_after_ms caps it further


def parse_retry_after(headers: Mapping[str, str] | None) -> int | None:
    """Milliseconds to wait, from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date).

    Untrusted: a value that is not a finite number or a date (``inf``, ``nan``, ``1e999``, junk)
    counts as absent; negative values and dates in the past mean 0; values above a day are capped.
    """
    if not headers:
        return None
    lowered = {str(k).lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1.0), ("retry-after", 1000.0)):
        raw = lowered.get(name)
        if raw is None:
            continue
        value: float | None
        try:
            value = float(str(raw).strip()) * scale
        except ValueError:
            value = _http_date_ms(str(raw)) if name == "retry-after" else None
        if value is not None and math.isfinite(value):
            return int(min(max(0.0, value), MAX_RETRY_AFTER_MS))
    return None


def _http_date_ms(raw: str) -> float | None:
    import email.utils  # lazy: 15 ms of imports (socket, datetime, ...) for a rare header form

    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None  # an unreadable date raises (ValueError; TypeError on older 3.x), it is never None
    try:
        return (when.timestamp() - time.time()) * 1000
    except (OverflowError, ValueError, OSError):
        return None


class ProviderError(PhiError):
    """A failed model call, classified so the loop knows whether to retry (SPEC ERR-1)."""

    def __init__(
        self,
        kind: ErrorKind | str,
        message: str,
        *,
        status: int | None = None,
        retry_after_ms: int | None = None,
        body: str | None = None,
    ) -> None:
        self.kind = ErrorKind(kind)
        # servers send odd "message"s (numbers, lists), and callers without a type checker too
        message = message if isinstance(message, str) else str(message)  # pyright: ignore[reportUnnecessaryIsInstance]
        self.message = message
        self.status = status
        self.retry_after_ms = retry_after_ms
        self.body = body
        super().__init__(message)

    def __str__(self) -> str:
        prefix = f"HTTP {self.status}: " if self.status is not None else ""
        return f"{self.kind.value}: {prefix}{self.message}"

    def __repr__(self) -> str:
        return f"ProviderError({self.kind.value!r}, {self.message!r}, status={self.status})"

    def redact(self, secrets: tuple[str, ...] | list[str]) -> ProviderError:
        """Scrub every representation of ``secrets`` from the message, body and ``args``."""
        self.message = scrub(self.message, secrets)
        if self.body:
            self.body = scrub(self.body, secrets)
        self.args = (self.message,)
        return self

    def is_retryable(self) -> bool:
        """Only rate limits and network failures (including 5xx and 529) are retried."""
        return self.kind in (ErrorKind.RATE_LIMITED, ErrorKind.NETWORK)

    def retry_after(self) -> float | None:
        """Seconds the server asked us to wait, if it said."""
        return None if self.retry_after_ms is None else self.retry_after_ms / 1000.0

    @classmethod
    def classify(cls, status: int, body: str | None = None, headers: Mapping[str, str] | None = None) -> ProviderError:
        """Map an HTTP error response to a kind: overflow first, then 429, 401/403, 5xx, else API."""
        text = body or ""
        message = _error_message_from_body(text) or f"HTTP {status}"
        retry_after_ms = parse_retry_after(headers)
        if status in (400, 413) and is_context_overflow(status, text):
            kind = ErrorKind.CONTEXT_OVERFLOW
        elif status == 429:
            kind = ErrorKind.RATE_LIMITED
        elif status in (401, 403):
            kind = ErrorKind.AUTH
        elif status >= 500 or status in (408, 409):
            kind = ErrorKind.NETWORK
        elif is_context_overflow(None, text):
            kind = ErrorKind.CONTEXT_OVERFLOW
        else:
            kind = ErrorKind.API
        return cls(kind, message, status=status, retry_after_ms=retry_after_ms, body=text[:4000] or None)

    @classmethod
    def cancelled(cls) -> ProviderError:
        return cls(ErrorKind.CANCELLED, "request cancelled")


def _error_message_from_body(body: str) -> str:
    """The human message inside a JSON error body (``{"error": {"message": ...}}`` and friends)."""
    body = body.strip()
    if not body:
        return ""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return body[:500]
    if is_array(data) and data:  # Gemini sometimes wraps the error in a list
        data = data[0]
    if is_object(data):
        error = data.get("error", data)
        if is_object(error):
            for key in ("message", "Message", "detail"):
                if isinstance(text := error.get(key), str):
                    return text
        elif isinstance(error, str):
            return error
        if isinstance(text := data.get("message"), str):
            return text
    return body[:500]


# --------------------------------------------------------------------------- message assembly


class AssistantBuilder:
    """Assembles an assistant message from streamed pieces and emits the matching events.

    The open text or thinking block (always the last block) is kept as a list of its deltas and
    joined only when a snapshot is asked for or the block closes, so assembling a reply costs
    O(total bytes) however finely it is streamed. Events carry :meth:`snapshot` unevaluated.
    """

    __slots__ = ("_content", "_on_event", "_args", "model", "provider", "usage", "_started", "emitted",
                 "_open_kind", "_chunks", "_signature", "_empty")

    def __init__(self, on_event: StreamEventSink, model: str, provider: str) -> None:
        self._content: list[Content] = []
        self._on_event = on_event
        self._args: dict[int, list[str]] = {}  # argument JSON text per open tool-call block
        self.model = model
        self.provider = provider
        self.usage = Usage()
        self._started = False
        self.emitted = 0  # delta events emitted so far
        self._empty = 0  # of them, empty text or thinking deltas (no progress: see progress_mark)
        self._open_kind: type | None = None  # TextContent / ThinkingContent while the last block is open
        self._chunks: list[str] = []  # the open block's text, in pieces
        self._signature: str | None = None  # the open thinking block's signature

    @property
    def content(self) -> list[Content]:
        self._join_open()
        return self._content

    def progress_mark(self) -> tuple[object, ...]:
        """What changes only when the reply moves on (a delta, a block opened or closed, a usage
        report, the start): equal marks before and after an event mean it carried nothing (a
        keep-alive such as Anthropic's ``ping``, or an empty delta), which must not hold an idle
        bound open."""
        return (self._started, self.emitted - self._empty, len(self._content), len(self._args), self._open_kind,
                self.usage)

    def snapshot(self, stop_reason: StopReason = StopReason.STOP, error_message: str | None = None) -> AssistantMessage:
        self._join_open()
        return AssistantMessage(
            list(self._content), stop_reason, self.model, self.provider, self.usage, now_ms(), error_message
        )

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._on_event(StreamEvent(StreamEventKind.START, self.snapshot()))

    # ----------------------------------------------------------------- the open text/thinking block

    def _join_open(self) -> None:
        """Write the open block's text into its content slot (it stays open)."""
        kind = self._open_kind
        if kind is None:
            return
        text = "".join(self._chunks)
        self._chunks = [text]
        self._content[-1] = TextContent(text) if kind is TextContent else ThinkingContent(text, self._signature)

    def _close_open(self) -> None:
        if self._open_kind is not None:
            self._join_open()
            self._open_kind = None
            self._chunks = []

    def _extend(self, kind: type, delta: str, new_block: bool) -> int:
        """Add ``delta`` to the open block of ``kind`` (or open one); returns the block's index."""
        if not self._started:
            self.start()
        if new_block or self._open_kind is not kind:
            self._close_open()
            self._content.append(kind(""))
            self._open_kind = kind
            self._signature = None
        self._chunks.append(delta)
        self.emitted += 1
        if not delta:
            self._empty += 1
        return len(self._content) - 1

    # text() and thinking() are the hot path of every provider (one call per streamed delta).

    def text(self, delta: str, new_block: bool = False) -> None:
        """Append text to the open text block (or open one)."""
        index = self._extend(TextContent, delta, new_block)
        self._on_event(StreamEvent(_TEXT_DELTA, self.snapshot, index, delta))

    def thinking(self, delta: str, signature: str | None = None, new_block: bool = False) -> None:
        """Append reasoning text to the open thinking block (or open one)."""
        index = self._extend(ThinkingContent, delta, new_block)
        if signature:
            self._signature = signature
        self._on_event(StreamEvent(_THINKING_DELTA, self.snapshot, index, delta))

    def thinking_signature(self, signature: str, append: bool = False) -> None:
        """Set (or extend) the signature of the most recent thinking block; opens one if needed."""
        if self._open_kind is ThinkingContent:
            self._signature = (self._signature or "") + signature if append else signature
            return
        content = self._content
        for i in range(len(content) - 1, -1, -1):
            block = content[i]
            if type(block) is ThinkingContent:
                new = (block.signature or "") + signature if append else signature
                content[i] = ThinkingContent(block.thinking, new, block.redacted)
                return
        self._close_open()  # a signature before any reasoning text: it opens the thinking block
        content.append(ThinkingContent("", signature))
        self._open_kind, self._chunks, self._signature = ThinkingContent, [], signature

    def redacted_thinking(self, data: str, signature: str | None = None) -> None:
        """An opaque reasoning block that must be replayed verbatim (no delta event). With a
        ``signature`` from :func:`~phi.providers.convert.opaque_signature` it holds a whole block of
        a type phi does not model (SPEC DATA-1), as JSON, for the service that sent it."""
        if not self._started:
            self.start()
        self._close_open()
        self._content.append(ThinkingContent(data, signature, redacted=True))

    # ----------------------------------------------------------------- tool calls

    def tool_call_start(self, call_id: str, name: str) -> int:
        """Open a tool-call block; returns its index (pass it to ``tool_call_delta``/``_end``)."""
        if not self._started:
            self.start()
        self._close_open()
        self._content.append(ToolCall(call_id, name, {}))
        index = len(self._content) - 1
        self._args[index] = []
        self._on_event(StreamEvent(StreamEventKind.TOOLCALL_START, self.snapshot, index))
        return index

    def tool_call_delta(self, index: int, delta: str) -> None:
        if not delta:
            return
        if not self._started:
            self.start()
        self._args.setdefault(index, []).append(delta)
        self.emitted += 1
        self._on_event(StreamEvent(StreamEventKind.TOOLCALL_DELTA, self.snapshot, index, delta))

    def tool_call_end(self, index: int, arguments: dict[str, Any] | None = None) -> ToolCall:
        """Close a tool-call block. Without ``arguments`` the streamed JSON text is parsed; text
        that is not a JSON object leaves ``{}`` and keeps the raw text under ``__raw_arguments``."""
        block = self._content[index]
        assert isinstance(block, ToolCall)
        raw = "".join(self._args.pop(index, ()))
        if arguments is None:
            arguments = parse_arguments(raw)
        call = ToolCall(block.id, block.name, arguments)
        self._content[index] = call
        self._on_event(StreamEvent(StreamEventKind.TOOLCALL_END, self.snapshot, index))
        return call

    def tool_call_arguments_text(self, index: int) -> str:
        """The argument JSON text streamed so far for an open tool-call block ("" if none)."""
        return "".join(self._args.get(index, ()))

    def open_tool_calls(self) -> list[int]:
        return sorted(self._args)

    def close_open_tool_calls(self) -> None:
        for index in self.open_tool_calls():
            self.tool_call_end(index)

    def finish(self, stop_reason: StopReason, error_message: str | None = None) -> AssistantMessage:
        """Close any open tool calls and emit ``done`` (or ``error`` for error/aborted)."""
        self.close_open_tool_calls()
        if not self._started:
            self.start()
        self._close_open()
        message = self.snapshot(stop_reason, error_message)
        kind = StreamEventKind.DONE if stop_reason not in (StopReason.ERROR, StopReason.ABORTED) else StreamEventKind.ERROR
        self._on_event(StreamEvent(kind, message))
        return message


_TEXT_DELTA = StreamEventKind.TEXT_DELTA
_THINKING_DELTA = StreamEventKind.THINKING_DELTA


MAX_DEPTH = 100  # nesting levels allowed in tool arguments built from server data


def parse_arguments(raw: str) -> dict[str, Any]:
    """Parse streamed tool-argument JSON. Empty text is ``{}``; text that is not a JSON object (or
    one nested deeper than :data:`MAX_DEPTH`, which could not be saved and loaded back) gives
    ``{"__raw_arguments": raw}`` so validation fails with a clear message instead of a crash."""
    if not raw.strip():
        return {}
    value: JsonObject | list[Any] | str | int | float | bool | None  # what JSON text decodes to
    try:
        value = json.loads(raw, parse_constant=no_json_constant)
    except (ValueError, RecursionError):
        return {"__raw_arguments": raw}
    return value if isinstance(value, dict) and depth(value) <= MAX_DEPTH else {"__raw_arguments": raw}


def no_json_constant(name: str) -> NoReturn:
    """``parse_constant`` hook refusing ``NaN``/``Infinity`` (not JSON; they could not be saved back)."""
    raise ValueError(f"{name} is not valid JSON")


def depth(value: object, limit: int = MAX_DEPTH + 1) -> int:
    """Nesting depth of a JSON value (scalars 0), counted up to ``limit`` without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if is_object(node):
            children: Any = node.values()
        elif is_array(node):
            children = node
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if deepest >= limit:
            return deepest
        stack.extend((child, level) for child in children)
    return deepest
