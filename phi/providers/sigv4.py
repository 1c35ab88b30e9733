"""AWS Signature Version 4 request signing with the standard library only (SPEC §7: authentication).

Used by the Bedrock provider when no Bedrock API key is set. Credentials come from the standard
environment variables ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and (for temporary
credentials) ``AWS_SESSION_TOKEN``. The algorithm follows the AWS reference "Create a signed AWS API
request": canonical request → string to sign → HMAC-SHA256 key derivation → ``Authorization``.
For services other than S3 the path is URI-encoded once more when canonicalised, so a model id
such as ``…-v1:0`` (sent as ``%3A``) is signed as ``%253A``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import os
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"


@dataclass(frozen=True)
class AwsCredentials:
    access_key: str
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls) -> AwsCredentials | None:
        access = os.environ.get("AWS_ACCESS_KEY_ID")
        secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
        if not access or not secret:
            return None
        return cls(access, secret, os.environ.get("AWS_SESSION_TOKEN") or None)

    def __repr__(self) -> str:
        return f"AwsCredentials(access_key={self.access_key[:4]}…, secret_key=<hidden>)"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def _canonical_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    encoded = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in pairs)
    return "&".join(f"{k}={v}" for k, v in encoded)


def sign(method: str, url: str, headers: dict[str, str], body: bytes, credentials: AwsCredentials,
         region: str, service: str, now: _dt.datetime | None = None) -> dict[str, str]:
    """Return ``headers`` plus ``x-amz-date``, the session token if any, and ``Authorization``.

    Every header passed in is signed (names are lower-cased); ``host`` is added from the URL.
    """
    now = now or _dt.datetime.now(_dt.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = amz_date[:8]
    parts = urlsplit(url)
    signed = {k.lower(): " ".join(str(v).strip().split()) for k, v in headers.items()}
    signed.setdefault("host", parts.netloc)
    signed["x-amz-date"] = amz_date
    if credentials.session_token:
        signed["x-amz-security-token"] = credentials.session_token
    names = sorted(signed)
    canonical_headers = "".join(f"{name}:{signed[name]}\n" for name in names)
    signed_headers = ";".join(names)
    path = quote(parts.path or "/", safe="/~")  # second encoding of an already-encoded path
    payload_hash = hashlib.sha256(body).hexdigest()
    canonical = "\n".join([method.upper(), path, _canonical_query(parts.query), canonical_headers,
                           signed_headers, payload_hash])
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(("AWS4" + credentials.secret_key).encode("utf-8"), date), region), service),
                "aws4_request")
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    out = dict(headers)
    out["x-amz-date"] = amz_date
    if credentials.session_token:
        out["x-amz-security-token"] = credentials.session_token
    out["authorization"] = (f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
                            f"SignedHeaders={signed_headers}, Signature={signature}")
    return out
