"""Parameter values on the wire: OpenAPI's ``style``/``explode`` rules and RFC 3986 percent-encoding
(SPEC §12.2, OAPI-7).

Every value is percent-encoded with only the RFC 3986 *unreserved* characters left as they are, so
``/ ? # % & =``, spaces and non-ASCII text (as UTF-8) cannot change the URL's structure; the
delimiters a style adds (``,`` ``.`` ``;`` ``=`` ``&``) are literal. ``allowReserved: true`` on a
query parameter leaves ``: / ? @ ! $ ' ( ) * , ; [ ]`` literal too; ``& = # +`` are always encoded
since they would change the query. Booleans are ``true``/``false``; objects inside arrays and values
of parameters described with ``content`` are sent as compact JSON text. ``None`` means "not sent".

Styles (defaults: ``simple`` for path and header, ``form`` with ``explode`` for query):

=================  ==========================  ==============================
style              array ``[a, b]``            object ``{k: v, j: w}``
=================  ==========================  ==============================
simple             ``a,b``                     ``k,v,j,w`` / explode ``k=v,j=w``
label              ``.a,b`` / ``.a.b``         ``.k,v,j,w`` / ``.k=v.j=w``
matrix             ``;n=a,b`` / ``;n=a;n=b``   ``;n=k,v,j,w`` / ``;k=v;j=w``
form               ``n=a,b`` / ``n=a&n=b``     ``n=k,v,j,w`` / ``k=v&j=w``
spaceDelimited     ``n=a%20b``                 (as form)
pipeDelimited      ``n=a%7Cb``                 (as form)
deepObject         (as form)                   ``n[k]=v&n[j]=w``
=================  ==========================  ==============================
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from ..errors import ToolError
from ..json_values import is_array, is_object
from .operations import Param

_RESERVED_KEPT = ":/?@!$'()*,;[]"


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def text_of(value: Any) -> str:
    """A scalar as text (JSON spelling for booleans and numbers, compact JSON for structures)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return _json(value)


def _as_sent(param: Param, value: Any) -> Any:
    """A parameter described with ``content`` is sent as JSON text; others as they are."""
    return _json(value) if param.as_json else value


def encode(text: str, allow_reserved: bool = False) -> str:
    return quote(text, safe=_RESERVED_KEPT if allow_reserved else "")


def _pairs(value: dict[str, Any]) -> list[tuple[str, str]]:
    return [(str(k), text_of(v)) for k, v in value.items() if v is not None]


def path_segment(param: Param, value: Any) -> str:
    """What replaces ``{name}`` in the path template."""
    value = _as_sent(param, value)
    if is_object(value):
        pairs = [(encode(k), encode(v)) for k, v in _pairs(value)]
        items = [f"{k}={v}" for k, v in pairs] if param.explode else [part for pair in pairs for part in pair]
    else:
        items = [encode(text_of(v)) for v in (value if is_array(value) else [value])]
    exploded = param.explode and isinstance(value, (list, dict))
    if param.style == "label":
        return "." + ("." if exploded else ",").join(items)
    if param.style == "matrix":
        name = encode(param.name)
        if not exploded:
            return f";{name}=" + ",".join(items)
        return "".join(f";{item}" if isinstance(value, dict) else f";{name}={item}" for item in items)
    return ",".join(items)


def query_items(param: Param, value: Any) -> list[str]:
    """The ``name=value`` pieces of the query string for one parameter."""
    if value is None:
        return []
    value = _as_sent(param, value)
    name = encode(param.name)

    def enc(text: str) -> str:
        return encode(text, param.allow_reserved)

    if is_array(value):
        items = [enc(text_of(v)) for v in value]
        if not items:
            return []
        if param.style == "spaceDelimited":
            return [f"{name}=" + "%20".join(items)]
        if param.style == "pipeDelimited":
            return [f"{name}=" + "%7C".join(items)]
        if param.explode:
            return [f"{name}={v}" for v in items]
        return [f"{name}=" + ",".join(items)]
    if is_object(value):
        pairs = [(encode(k), enc(v)) for k, v in _pairs(value)]
        if param.style == "deepObject":
            return [f"{name}[{k}]={v}" for k, v in pairs]
        if param.explode:
            return [f"{k}={v}" for k, v in pairs]
        return [f"{name}=" + ",".join(f"{k},{v}" for k, v in pairs)]
    return [f"{name}={enc(text_of(value))}"]


def header_value(param: Param, value: Any) -> str:
    """A header parameter's value (``simple`` style, not percent-encoded)."""
    value = _as_sent(param, value)
    if is_array(value):
        text = ",".join(text_of(v) for v in value)
    elif is_object(value):
        joiner = "=" if param.explode else ","
        text = ",".join(f"{k}{joiner}{v}" for k, v in _pairs(value))
    else:
        text = text_of(value)
    if any(c in text for c in "\r\n\0"):
        raise ToolError(f"header parameter {param.arg!r} must not contain line breaks or NUL characters")
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        raise ToolError(f"header parameter {param.arg!r} must be Latin-1 text (HTTP headers cannot carry "
                        "other characters)") from None
    return text
