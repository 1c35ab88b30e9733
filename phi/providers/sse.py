"""Byte-level Server-Sent Events decoder shared by every SSE provider (SPEC PROV-1).

Implements the event-stream parsing rules of the WHATWG HTML standard ("9.2 Server-sent events")
directly on bytes, so it does not depend on how ``requests`` guesses the charset:

* line endings ``\\n``, ``\\r\\n`` and ``\\r``, even when a ``\\r\\n`` pair is split across two chunks;
* a leading UTF-8 byte-order mark is dropped;
* lines starting with ``:`` are comments (OpenRouter's ``: OPENROUTER PROCESSING``);
* ``field:value`` with one optional space after the colon; ``data`` lines are joined with ``\\n``;
  ``event``, ``id`` (ignored when it contains NUL) and ``retry`` (digits only) are kept;
* a blank line dispatches the event; an event without any ``data`` line is dropped — except one
  with an ``error`` field, which llama.cpp's server writes instead of ``data`` for an error in the
  middle of a stream (``error: {...}``, not a field of the standard): it becomes an event of type
  ``error`` carrying that value, so the failure is read, not lost (SPEC PROV-6);
* the payload is always decoded as UTF-8 (invalid bytes become U+FFFD, never an exception).

Unlike the standard (which drops it), a pending event at end of input is flushed by
:meth:`SSEDecoder.close`, because several providers end their stream without a final blank line.

The decoder is written for throughput: it normalises line endings with ``bytes.replace``, decodes
all complete events of a chunk in one call and splits them with ``str.split``, so the Python-level
work is a handful of operations per event; and it is linear in the size of one event (a 16 MB
event split into 4 KB network reads costs one join, not thousands of copies).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ..log import get_logger

log = get_logger(__name__)

_BOM = b"\xef\xbb\xbf"


class SSEEvent:
    """One dispatched event. ``event`` defaults to ``"message"``; ``id`` is the last event id seen."""

    __slots__ = ("event", "data", "id", "retry")

    def __init__(self, event: str, data: str, id: str | None = None, retry: int | None = None) -> None:
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        shown = self.data if len(self.data) <= 60 else self.data[:57] + "..."
        return f"SSEEvent(event={self.event!r}, data={shown!r}, id={self.id!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SSEEvent):
            return NotImplemented
        return (self.event, self.data, self.id, self.retry) == (other.event, other.data, other.id, other.retry)


class SSEDecoder:
    """Incremental decoder: ``feed(bytes)`` returns the events completed by those bytes.

    Bytes of an unfinished event are kept as a list of chunks and joined once, when the blank line
    that ends the event arrives; each chunk is searched for a blank line only once. The work is
    therefore linear in the size of the stream however large one event is and however finely the
    network splits it.
    """

    __slots__ = ("_parts", "_last", "_pending_cr", "_started", "_last_id", "_comments")

    def __init__(self) -> None:
        self._parts: list[bytes] = []  # normalised bytes of the unfinished event(s)
        self._last = -1  # last byte of the buffered bytes (-1 when nothing is buffered)
        self._pending_cr = False  # the previous chunk ended in "\r" (maybe half of "\r\n")
        self._started = False  # BOM check done
        self._last_id: str | None = None
        self._comments = 0

    @property
    def comments(self) -> int:
        """How many comment lines were skipped (useful for diagnostics and tests)."""
        return self._comments

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if not chunk:
            return []
        if self._pending_cr:
            chunk = b"\r" + chunk
            self._pending_cr = False
        if b"\r" in chunk:
            if chunk[-1] == 13:  # keep a trailing CR until we know whether "\n" follows
                chunk = chunk[:-1]
                self._pending_cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if not chunk:
                return []
        if not self._started:
            chunk = self._strip_bom(chunk)
            if not chunk:
                return []
        cut = chunk.rfind(b"\n\n")
        if cut < 0:
            if not (self._last == 10 and chunk[0] == 10):  # no blank line completed: keep buffering
                self._parts.append(chunk)
                self._last = chunk[-1]
                return []
            cut = -1  # the blank line straddles the previous chunk and this one
        parts, self._parts = self._parts, []
        rest = chunk[cut + 2 :]
        if rest:
            self._parts.append(rest)
            self._last = rest[-1]
        else:
            self._last = -1
        if parts:
            parts.append(chunk[: max(cut, 0)])
            whole = b"".join(parts)
            if cut < 0:
                whole = whole[:-1]  # the first "\n" of the straddling blank line
        else:
            whole = chunk[:cut]
        return self._dispatch(whole.decode("utf-8", "replace"))

    def _strip_bom(self, chunk: bytes) -> bytes:
        """Drop a leading UTF-8 BOM, which may itself arrive split over the first chunks."""
        head = b"".join(self._parts) + chunk
        if len(head) < 3 and _BOM.startswith(head):
            self._parts, self._last = [head], head[-1]
            return b""
        self._started = True
        self._parts, self._last = [], -1
        return head[3:] if head.startswith(_BOM) else head

    def _dispatch(self, text: str) -> list[SSEEvent]:
        """Decode whole events (everything before the last blank line)."""
        events: list[SSEEvent] = []
        append = events.append
        last_id = self._last_id
        for block in text.split("\n\n"):
            # Fast paths: a lone ``data:`` line, or ``event:`` followed by one ``data:`` line.
            if block[:6] == "data: ":
                if "\n" not in block:
                    append(SSEEvent("message", block[6:], last_id))
                    continue
            elif block[:7] == "event: ":
                nl = block.find("\n")
                if block[nl + 1 : nl + 7] == "data: " and block.find("\n", nl + 1) < 0:
                    append(SSEEvent(block[7:nl] or "message", block[nl + 7 :], last_id))
                    continue
            self._parse_lines(block.split("\n"), events)
            last_id = self._last_id
        return events

    def close(self) -> list[SSEEvent]:
        """End of input: dispatch whatever is pending (a stream may end without a blank line)."""
        self._pending_cr = False
        buf, self._parts, self._last = b"".join(self._parts), [], -1
        events: list[SSEEvent] = []
        if buf.strip(b"\n"):
            self._parse_lines(buf.rstrip(b"\n").decode("utf-8", "replace").split("\n"), events)
        return events

    def _parse_lines(self, lines: Iterable[str], out: list[SSEEvent]) -> None:
        event = ""
        data: list[str] = []
        error: list[str] = []  # llama.cpp's "error: {...}" (see the module docstring)
        retry: int | None = None
        for line in lines:
            if not line:  # a blank line inside the block (e.g. leading "\n"): dispatch
                self._emit(out, event, data, error, retry)
                event, data, error, retry = "", [], [], None
                continue
            if line[0] == ":":  # comment
                self._comments += 1
                continue
            name, colon, value = line.partition(":")
            if colon and value[:1] == " ":
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
            elif name == "id":
                if "\x00" not in value:
                    self._last_id = value
            elif name == "retry":
                if value.isascii() and value.isdigit():
                    retry = int(value)
            elif name == "error":
                error.append(value)
            else:
                log.debug("ignoring unknown SSE field %r", name[:40])
        self._emit(out, event, data, error, retry)

    def _emit(self, out: list[SSEEvent], event: str, data: list[str], error: list[str], retry: int | None) -> None:
        if data:
            out.append(SSEEvent(event or "message", "\n".join(data), self._last_id, retry))
        elif error:
            out.append(SSEEvent("error", "\n".join(error), self._last_id, retry))


def iter_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Decode a whole iterable of byte chunks (convenience for tests and simple callers)."""
    decoder = SSEDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()
