"""AWS Signature Version 4 request signing with the standard library only (SPEC §7: authentication).

Used by the Bedrock provider when no Bedrock API key is set. Credentials come from the standard
environment variables ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and (for temporary
credentials) ``AWS_SESSION_TOKEN``. The algorithm follows the AWS reference "Create a signed AWS API
request": canonical request → string to sign → HMAC-SHA256 key derivation → ``Authorization``.
For services other than S3 the path is URI-encoded once more when canonicalised, so a model id
such as ``…-v1:0`` (sent as ``%3A``) is signed as ``%253A``.

The signature must cover the request as it goes on the wire, so :func:`canonical_url` gives the
one form of a URL that is both sent and signed: lower-case scheme and host, no default port, no
user-info, and a path without ``.``/``..`` segments or empty segments (``//``), which is how AWS
canonicalises a path before checking the signature. The ``Host`` header is derived the same way
(what ``http.client`` sends). The canonical query string follows botocore: the URL's query, taken
as already percent-encoded, split into pairs and sorted.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import os
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit, urlunsplit

from .secrets import check_secret

ALGORITHM = "AWS4-HMAC-SHA256"
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class AwsCredentials:
    access_key: str
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls) -> AwsCredentials | None:
        """Credentials from ``AWS_*`` variables, stripped (ConfigError for a control character inside)."""
        access = check_secret(os.environ.get("AWS_ACCESS_KEY_ID"), "$AWS_ACCESS_KEY_ID", ascii_only=True)
        secret = check_secret(os.environ.get("AWS_SECRET_ACCESS_KEY"), "$AWS_SECRET_ACCESS_KEY", ascii_only=True)
        if not access or not secret:
            return None
        token = check_secret(os.environ.get("AWS_SESSION_TOKEN"), "$AWS_SESSION_TOKEN", ascii_only=True)
        return cls(access, secret, token)

    def __repr__(self) -> str:
        return f"AwsCredentials(access_key={self.access_key[:4]}…, secret_key=<hidden>)"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def _canonical_query(query: str) -> str:
    pairs = sorted(pair.partition("=")[::2] for pair in query.split("&")) if query else []
    return "&".join(f"{k}={v}" for k, v in pairs)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 dot-segment removal, also dropping empty segments (AWS collapses ``//``)."""
    if not path:
        return "/"
    kept: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if kept:
                kept.pop()
        elif segment and segment != ".":
            kept.append(segment)
    trailing = "/" if path.endswith("/") and kept else ""
    return "/" + "/".join(kept) + trailing


def host_header(url: str) -> str:
    """The ``Host`` value an HTTP client sends for ``url``: lower case, no user-info, no default port."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if parts.port is not None and parts.port != DEFAULT_PORTS.get(parts.scheme.lower()):
        host = f"{host}:{parts.port}"
    return host


def canonical_url(url: str) -> str:
    """The form of ``url`` that is both sent and signed (see the module docstring)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), host_header(url), remove_dot_segments(parts.path), parts.query, ""))


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
    signed.setdefault("host", host_header(url))
    signed["x-amz-date"] = amz_date
    if credentials.session_token:
        signed["x-amz-security-token"] = credentials.session_token
    names = sorted(signed)
    canonical_headers = "".join(f"{name}:{signed[name]}\n" for name in names)
    signed_headers = ";".join(names)
    path = quote(remove_dot_segments(parts.path), safe="/~")  # second encoding of an already-encoded path
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
