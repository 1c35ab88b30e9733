"""AWS event-stream binary framing decoder, used by Bedrock ConverseStream (SPEC PROV-1).

Bedrock's streaming body is ``application/vnd.amazon.eventstream``, not SSE. Each message is::

    [total_len u32][headers_len u32][prelude_crc u32][headers][payload][message_crc u32]

all big-endian; ``prelude_crc`` is the CRC32 of the first 8 bytes and ``message_crc`` the CRC32 of
everything before it. A header is ``[name_len u8][name][type u8][value]`` with value types 0-9
(true, false, byte, short, int, long, bytes, string, timestamp, uuid). Messages may be split across
network chunks anywhere; :class:`EventStreamDecoder` reassembles them and checks both CRCs.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from typing import Any

from ..errors import PhiError

_PRELUDE = struct.Struct(">III")
_MIN_MESSAGE = 16  # prelude (12) + message crc (4)
MAX_HEADERS = 128 * 1024  # botocore's limits
MAX_PAYLOAD = 24 * 1024 * 1024


class EventStreamError(PhiError, ValueError):
    """The bytes are not a valid event-stream message (bad length, CRC or header)."""


class EventStreamMessage:
    """One decoded message: string-keyed ``headers`` and the raw ``payload`` bytes."""

    __slots__ = ("headers", "payload")

    def __init__(self, headers: dict[str, Any], payload: bytes) -> None:
        self.headers = headers
        self.payload = payload

    @property
    def message_type(self) -> str:
        return str(self.headers.get(":message-type", "event"))

    @property
    def event_type(self) -> str:
        return str(self.headers.get(":event-type", ""))

    def __repr__(self) -> str:
        return f"EventStreamMessage(headers={self.headers!r}, payload={len(self.payload)} bytes)"


class EventStreamDecoder:
    """Incremental decoder: ``feed(bytes)`` returns the messages completed by those bytes.

    A corrupt message does not cost the good ones before it: ``feed`` returns the messages that
    decoded, keeps the error in :attr:`error`, and raises it on the next call (it raises at once
    when nothing decoded). The checks and limits are those of botocore's ``EventStreamBuffer``
    (prelude CRC, then header block <= 128 KiB and payload <= 24 MiB, then message CRC, then
    headers, duplicates refused), which the differential tests compare it with.
    """

    __slots__ = ("_buf", "_error")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._error: EventStreamError | None = None

    @property
    def pending(self) -> int:
        """Bytes received that do not yet form a whole message."""
        return len(self._buf)

    @property
    def error(self) -> EventStreamError | None:
        """The corruption found after the messages last returned, if any."""
        return self._error

    def feed(self, chunk: bytes) -> list[EventStreamMessage]:
        if self._error is not None:
            raise self._error
        buf = self._buf
        buf += chunk
        out: list[EventStreamMessage] = []
        offset = 0
        try:
            while len(buf) - offset >= 12:
                total = _check_prelude(buf, offset)
                if len(buf) - offset < total:
                    break
                out.append(_decode_message(buf, offset, total))
                offset += total
        except EventStreamError as exc:
            self._error = exc
            if not out:
                raise
        finally:
            if offset:
                del buf[:offset]
        return out


def _check_prelude(buf: bytearray, offset: int) -> int:
    """Validate the prelude at ``offset``; return the message's total length."""
    total: int
    headers_len: int
    prelude_crc: int
    total, headers_len, prelude_crc = _PRELUDE.unpack_from(buf, offset)
    if zlib.crc32(buf[offset : offset + 8]) != prelude_crc:
        raise EventStreamError("event-stream prelude CRC mismatch")
    if total < _MIN_MESSAGE or headers_len > total - _MIN_MESSAGE:
        raise EventStreamError(f"invalid event-stream prelude: total length {total}, headers {headers_len}")
    if headers_len > MAX_HEADERS:
        raise EventStreamError(f"event-stream header block of {headers_len} bytes exceeds {MAX_HEADERS}")
    if total - headers_len - _MIN_MESSAGE > MAX_PAYLOAD:
        raise EventStreamError(f"event-stream payload of {total - headers_len - _MIN_MESSAGE} bytes "
                               f"exceeds {MAX_PAYLOAD}")
    return total


def _decode_message(buf: bytearray, offset: int, total: int) -> EventStreamMessage:
    end = offset + total
    (message_crc,) = struct.unpack_from(">I", buf, end - 4)
    if zlib.crc32(buf[offset : end - 4]) != message_crc:
        raise EventStreamError("event-stream message CRC mismatch")
    (headers_len,) = struct.unpack_from(">I", buf, offset + 4)
    headers_start = offset + 12
    payload_start = headers_start + headers_len
    headers = decode_headers(bytes(buf[headers_start:payload_start]))
    return EventStreamMessage(headers, bytes(buf[payload_start : end - 4]))


def decode_headers(data: bytes) -> dict[str, Any]:
    """Decode the header block of one message."""
    headers: dict[str, Any] = {}
    pos = 0
    size = len(data)
    try:
        while pos < size:
            name_len = data[pos]
            name = data[pos + 1 : pos + 1 + name_len].decode("utf-8")
            pos += 1 + name_len
            kind = data[pos]
            pos += 1
            value, pos = _header_value(kind, data, pos)
            if pos > size:
                raise EventStreamError(f"event-stream header {name!r} runs past the header block")
            if name in headers:
                raise EventStreamError(f"duplicate event-stream header {name!r}")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise EventStreamError(f"malformed event-stream headers: {exc}") from None
    return headers


_FIXED = {2: struct.Struct(">b"), 3: struct.Struct(">h"), 4: struct.Struct(">i"), 5: struct.Struct(">q"),
          8: struct.Struct(">q")}


def _header_value(kind: int, data: bytes, pos: int) -> tuple[Any, int]:
    if kind == 0:
        return True, pos
    if kind == 1:
        return False, pos
    fixed = _FIXED.get(kind)
    if fixed is not None:
        (value,) = fixed.unpack_from(data, pos)
        return value, pos + fixed.size  # timestamps (8) stay as epoch milliseconds
    if kind in (6, 7):
        (length,) = struct.unpack_from(">H", data, pos)
        raw = data[pos + 2 : pos + 2 + length]
        if len(raw) != length:
            raise EventStreamError("event-stream header value truncated")
        return (raw.decode("utf-8") if kind == 7 else bytes(raw)), pos + 2 + length
    if kind == 9:
        raw = data[pos : pos + 16]
        if len(raw) != 16:
            raise EventStreamError("event-stream uuid header truncated")
        return uuid.UUID(bytes=bytes(raw)), pos + 16
    raise EventStreamError(f"unknown event-stream header type {kind}")


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """Encode one message with string headers (for tests and local servers that imitate Bedrock)."""
    block = bytearray()
    for name, value in headers.items():
        raw_name = name.encode("utf-8")
        raw_value = value.encode("utf-8")
        block += bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value
    total = 12 + len(block) + len(payload) + 4
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + bytes(block) + payload
    return body + struct.pack(">I", zlib.crc32(body))
