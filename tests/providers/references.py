"""Generators and adapters for the differential tests against references phi did not write.

* botocore's ``EventStreamBuffer`` (AWS event-stream framing) and ``SigV4Auth`` (request signing);
* the official OpenAI OpenAPI document (request-body schemas, see tests/fixtures/openapi/).

Used with a small number of cases by the test suite and with many by
``scripts/fuzz/provider_differential.py``. botocore is a test extra; phi never imports it.
"""

from __future__ import annotations

import random
import struct
import uuid
import zlib
from typing import Any

# --------------------------------------------------------------------------- event-stream


def _header(rng: random.Random, name: str) -> bytes:
    raw_name = name.encode("utf-8")
    kind = rng.randrange(10)
    out = bytes([len(raw_name)]) + raw_name + bytes([kind])
    if kind in (0, 1):
        return out
    if kind == 2:
        return out + struct.pack(">b", rng.randrange(-128, 128))
    if kind == 3:
        return out + struct.pack(">h", rng.randrange(-(1 << 15), 1 << 15))
    if kind == 4:
        return out + struct.pack(">i", rng.randrange(-(1 << 31), 1 << 31))
    if kind in (5, 8):
        return out + struct.pack(">q", rng.randrange(-(1 << 63), 1 << 63))
    if kind == 6:
        value = rng.randbytes(rng.randrange(40))
        return out + struct.pack(">H", len(value)) + value
    if kind == 7:
        value = "".join(rng.choice("abcé日\u2028 :-") for _ in range(rng.randrange(30))).encode("utf-8")
        return out + struct.pack(">H", len(value)) + value
    return out + rng.randbytes(16)


def random_frame(rng: random.Random) -> bytes:
    """One valid message with 0-5 headers of random types and a random payload."""
    names = rng.sample([":message-type", ":event-type", ":content-type", "x", "ünï", "a" * 60], rng.randrange(6))
    if names and rng.random() < 0.05:
        names.append(names[0])  # a duplicate header: both decoders must refuse the message
    block = b"".join(_header(rng, name) for name in names)
    payload = rng.randbytes(rng.choice([0, 1, 10, 200, 3000]))
    total = 12 + len(block) + len(payload) + 4
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + block + payload
    return body + struct.pack(">I", zlib.crc32(body))


def random_eventstream(rng: random.Random) -> tuple[bytes, list[bytes]]:
    """A stream of 1-8 frames, sometimes corrupted (bit flip, garbage, truncation), and a random
    split of it into network chunks."""
    body = b"".join(random_frame(rng) for _ in range(rng.randrange(1, 9)))
    damage = rng.random()
    if damage < 0.35:
        data = bytearray(body)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        body = bytes(data)
    elif damage < 0.45:
        body += rng.randbytes(rng.randrange(1, 40))
    elif damage < 0.55:
        body = body[: rng.randrange(len(body))]
    cuts = sorted(rng.sample(range(1, max(2, len(body))), min(len(body) - 1, rng.randrange(0, 12)))) if body else []
    chunks = [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)])]
    return body, chunks


def _normalise(headers: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.bytes if isinstance(v, uuid.UUID) else v) for k, v in headers.items()}


def botocore_frames(chunks: list[bytes]) -> tuple[list[tuple[dict[str, Any], bytes]], bool]:
    """The messages botocore's EventStreamBuffer yields before it fails, and whether it failed."""
    from botocore.eventstream import EventStreamBuffer

    buffer = EventStreamBuffer()
    out: list[tuple[dict[str, Any], bytes]] = []
    try:
        for chunk in chunks:
            buffer.add_data(chunk)
            for message in buffer:
                out.append((_normalise(message.headers), message.payload))
    except Exception:  # any failure counts: ParserError, struct.error, KeyError...
        return out, True
    return out, False


def phi_frames(chunks: list[bytes]) -> tuple[list[tuple[dict[str, Any], bytes]], bool]:
    """The same for phi's EventStreamDecoder: deferred errors count as failures too."""
    from phi.providers.eventstream import EventStreamDecoder, EventStreamError

    decoder = EventStreamDecoder()
    out: list[tuple[dict[str, Any], bytes]] = []
    try:
        for chunk in chunks:
            for message in decoder.feed(chunk):
                out.append((_normalise(message.headers), message.payload))
            if getattr(decoder, "error", None) is not None:  # (older decoders raised at once)
                return out, True
    except EventStreamError:
        return out, True
    return out, False


# --------------------------------------------------------------------------- SigV4

_SEGMENTS = ["model", "a", "B", ".", "..", "", "%2E%2E", "%2e", "sp ace", "é", "~t", "x:y", "a%3Ab", "%7E", "-_."]


def random_base_url(rng: random.Random, scheme: str, host: str, port: int | None) -> str:
    """A base URL with the features that once made the signature differ from the wire request:
    an explicit default port, upper-case host, user-info, ``//``, ``.`` and ``..`` segments."""
    if rng.random() < 0.5:
        host = "".join(c.upper() if rng.random() < 0.5 else c for c in host)
    userinfo = rng.choice(["", "", "user@", "user:pa%40ss@"])
    netloc = userinfo + host + (f":{port}" if port is not None else "")
    path = "/".join(rng.choice(_SEGMENTS) for _ in range(rng.randrange(0, 5)))
    if rng.random() < 0.3:
        path = "/" + path
    return f"{scheme}://{netloc}/{path}"


def random_query(rng: random.Random) -> str:
    pairs = [f"{rng.choice(['a', 'B', 'x-y', 'k~'])}={rng.choice(['1', '', 'v%20w', '%C3%A9', 'z'])}"
             for _ in range(rng.randrange(0, 4))]
    return "&".join(pairs)


def botocore_authorization(method: str, url: str, headers: dict[str, str], body: bytes, access_key: str,
                           secret_key: str, token: str | None, region: str, service: str, amz_date: str) -> str:
    """The Authorization header botocore's SigV4Auth computes for this request at ``amz_date``."""
    import datetime as dt
    from unittest import mock

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    skip = {"authorization", "x-amz-date", "x-amz-security-token"}
    request = AWSRequest(method=method, url=url, data=body,
                         headers={k: v for k, v in headers.items() if k.lower() not in skip})
    when = dt.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    with mock.patch("botocore.auth.get_current_datetime", return_value=when):
        SigV4Auth(Credentials(access_key, secret_key, token), service, region).add_auth(request)
    return str(request.headers["Authorization"])
