"""The byte-level SSE decoder and the AWS event-stream decoder, split at every possible point."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phi.providers.eventstream import EventStreamDecoder, EventStreamError, decode_headers, encode_message
from phi.providers.sse import SSEDecoder, SSEEvent, iter_sse

from .conftest import FIXTURES, fixture_bytes


def decode(chunks) -> list[SSEEvent]:
    return list(iter_sse(chunks))


def split_every(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_line_endings_comments_fields_and_multiline_data() -> None:
    body = (b": comment\r\nevent: a\r\nid: 7\r\nretry: 300\r\ndata: one\r\ndata:two\r\n\r\n"
            b"data: x\rdata: y\r\r"
            b"event: b\ndata\n\n"
            b"id: bad\x00id\nunknown: z\ndata: last")
    events = decode([body])
    assert events == [
        SSEEvent("a", "one\ntwo", "7", 300),
        SSEEvent("message", "x\ny", "7"),
        SSEEvent("b", "", "7"),
        SSEEvent("message", "last", "7"),  # flushed at EOF without a blank line
    ]


def test_event_without_data_is_dropped_and_bom_stripped() -> None:
    assert decode([b"\xef\xbb\xbfevent: x\n\ndata: 1\n\n"]) == [SSEEvent("message", "1")]


def test_utf8_regardless_of_charset_and_unicode_line_separators_kept() -> None:
    text = "caf\u00e9 \u2028 \u2029 \x85 \u65e5\u672c"
    body = f"data: {text}\n\n".encode("utf-8")
    for size in (1, 2, 3):
        assert [e.data for e in decode(split_every(body, size))] == [text]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert decode([b"data: \xff\xfe\n\n"])[0].data == "\ufffd\ufffd"


def test_crlf_split_across_chunks_gives_no_extra_event() -> None:
    events = decode([b"data: a\r", b"\n\r", b"\ndata: b\r\n", b"\r\n"])
    assert [e.data for e in events] == ["a", "b"]


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt")))
def test_every_split_size_gives_the_same_events(name: str) -> None:
    body = fixture_bytes(name)
    whole = decode([body])
    assert whole
    for size in (1, 2, 3, 5, 13, 64):
        assert decode(split_every(body, size)) == whole


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "ev"]), st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
                                                                   max_size=20)), min_size=1, max_size=6),
       st.sampled_from([b"\n", b"\r\n", b"\r"]), st.data())
def test_random_streams_survive_random_splits(items, newline, data) -> None:
    body = b""
    for event, payload in items:
        if event:
            body += b"event: " + event.encode() + newline
        body += b"data: " + payload.encode("utf-8") + newline + newline
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    chunks = [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)])]
    events = decode(chunks)
    assert [(e.event, e.data) for e in events] == [(ev or "message", p) for ev, p in items]


def test_comment_count() -> None:
    decoder = SSEDecoder()
    decoder.feed(fixture_bytes("openai_compat__openrouter_comments_reasoning_length_inline_error.txt"))
    assert decoder.comments == 17


# --------------------------------------------------------------------------- event-stream


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.bin")))
def test_eventstream_recordings_decode_at_every_split(name: str) -> None:
    import json

    from .conftest import expected

    body = fixture_bytes(name)
    whole = EventStreamDecoder().feed(body)
    assert len(whole) == expected(name)["frames"]
    assert all(m.message_type == "event" for m in whole)
    assert [m.event_type for m in whole][0] == "messageStart"
    json.loads(whole[0].payload)
    for size in (1, 3, 7, 100):
        decoder = EventStreamDecoder()
        got = [m for part in split_every(body, size) for m in decoder.feed(part)]
        assert [(m.headers, m.payload) for m in got] == [(m.headers, m.payload) for m in whole]
        assert decoder.pending == 0


def test_eventstream_round_trip_and_crc_checks() -> None:
    frame = encode_message({":message-type": "event", ":event-type": "x"}, b'{"a":1}')
    (message,) = EventStreamDecoder().feed(frame)
    assert message.headers == {":message-type": "event", ":event-type": "x"} and message.payload == b'{"a":1}'
    bad_prelude = bytearray(frame)
    bad_prelude[9] ^= 1
    with pytest.raises(EventStreamError, match="prelude CRC"):
        EventStreamDecoder().feed(bytes(bad_prelude))
    bad_body = bytearray(frame)
    bad_body[-6] ^= 1
    with pytest.raises(EventStreamError, match="message CRC"):
        EventStreamDecoder().feed(bytes(bad_body))
    prelude = struct.pack(">II", 8, 0)
    with pytest.raises(EventStreamError, match="invalid event-stream prelude"):
        EventStreamDecoder().feed(prelude + struct.pack(">I", zlib.crc32(prelude)))


def test_all_header_types() -> None:
    import uuid

    block = b""
    block += b"\x01a\x00" + b"\x01b\x01" + b"\x01c\x02\xff" + b"\x01d\x03" + struct.pack(">h", -2)
    block += b"\x01e\x04" + struct.pack(">i", 70000) + b"\x01f\x05" + struct.pack(">q", 1 << 40)
    block += b"\x01g\x06" + struct.pack(">H", 2) + b"\x00\x01" + b"\x01h\x07" + struct.pack(">H", 2) + b"hi"
    block += b"\x01i\x08" + struct.pack(">q", 1700000000000) + b"\x01j\x09" + uuid.UUID(int=5).bytes
    assert decode_headers(block) == {"a": True, "b": False, "c": -1, "d": -2, "e": 70000, "f": 1 << 40,
                                     "g": b"\x00\x01", "h": "hi", "i": 1700000000000, "j": uuid.UUID(int=5)}
    with pytest.raises(EventStreamError):
        decode_headers(b"\x01a\x0b")
    with pytest.raises(EventStreamError):
        decode_headers(b"\x01h\x07\x00\x09hi")


# --------------------------------------------------------------------------- issue 10, item 7


def test_one_huge_event_costs_the_same_split_or_whole() -> None:
    """The decoder is linear in the size of one event: an 8 MB event arriving in 4 KB reads costs
    about what the same bytes cost in one read (it was quadratic: every read re-copied and
    re-searched everything buffered so far)."""
    import time

    payload = b'{"text":"' + b"x" * (8 << 20) + b'"}'
    body = b"data: " + payload + b"\n\n"

    def timed(chunks) -> float:
        decoder = SSEDecoder()
        began = time.perf_counter()
        events = [e for c in chunks for e in decoder.feed(c)]
        elapsed = time.perf_counter() - began
        assert len(events) == 1 and len(events[0].data) == len(payload)
        return elapsed

    whole = min(timed([body]) for _ in range(3))
    split = timed(split_every(body, 4096))
    assert split < 0.05 + 25 * whole, (split, whole)  # quadratic behaviour is ~1000x here


@pytest.mark.parametrize("body", [b"event: \ndata: x\n\n", b"event:\ndata: x\n\n", b"event: \r\ndata: x\r\n\r\n",
                                  b"event: \ndata: x\nid: 1\n\n"])
def test_empty_event_name_dispatches_as_message(body: bytes) -> None:
    """WHATWG: an empty event type buffer dispatches as "message", whichever path parses it."""
    assert [e.event for e in decode([body])] == ["message"]
    assert [e.event for e in decode(split_every(body, 1))] == ["message"]


def test_eventstream_good_frames_before_a_corrupt_one_are_returned() -> None:
    good = [encode_message({":message-type": "event", ":event-type": f"e{i}"}, b"{}") for i in range(3)]
    bad = bytearray(encode_message({":message-type": "event", ":event-type": "bad"}, b"{}"))
    bad[-1] ^= 1
    decoder = EventStreamDecoder()
    got = decoder.feed(b"".join(good) + bytes(bad))
    assert [m.event_type for m in got] == ["e0", "e1", "e2"]
    assert isinstance(decoder.error, EventStreamError) and "message CRC" in str(decoder.error)
    with pytest.raises(EventStreamError, match="message CRC"):
        decoder.feed(b"")


def test_eventstream_matches_botocore_on_random_streams() -> None:
    """Differential slice (scripts/fuzz/provider_differential.py runs thousands): the same messages
    before the first failure, and a failure exactly when botocore fails."""
    import random

    from .references import botocore_frames, phi_frames, random_eventstream

    rng = random.Random(10_7)
    failures = 0
    for case in range(400):
        _, chunks = random_eventstream(rng)
        want = botocore_frames(chunks)
        assert phi_frames(chunks) == want, f"case {case}"
        failures += want[1]
    assert failures > 50  # the corpus does exercise corruption
