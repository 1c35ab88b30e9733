"""What ``tools/list`` and ``tools/call`` return, and how MCP content becomes phi content
(SPEC §12.1, MCP-6, MCP-7).

phi content has text and images; MCP has more. The mapping keeps everything a model can use and
everything else for the application:

* ``text`` → :class:`~phi.types.TextContent`; ``image`` → :class:`~phi.types.ImageContent`;
* an embedded ``resource`` with ``text`` → its text; with a ``blob`` whose mime type is an image →
  an image, of a textual type (``text/*``, JSON, XML, ...) that decodes as UTF-8 → its text; any
  other blob → a short placeholder naming the URI, mime type and size;
* ``audio`` → a placeholder naming the mime type and size; ``resource_link`` → a line naming the
  link (name, URI, mime type, description); a block of an unknown type → a placeholder;
* every block that became a placeholder is kept whole in ``ToolResult.details["content"]``;
  ``structuredContent`` goes to ``details["structuredContent"]`` and, when the result has no
  content blocks at all, is also rendered as JSON text; ``_meta`` goes to ``details["_meta"]``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from ..json_values import is_array, is_object
from ..log import get_logger
from ..types import Content, ImageContent, TextContent, ToolResult
from .errors import McpProtocolError

log = get_logger(__name__)

MAX_TEXT_BLOB = 4 << 20  # base64 characters: larger text blobs stay placeholders
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/yaml", "application/x-yaml",
                         "application/javascript", "application/toml", "application/sql"})


@dataclass
class McpToolInfo:
    """One entry of ``tools/list``. ``raw`` is the server's object as received."""

    name: str
    description: str = ""
    input_schema: Any = None
    title: str | None = None
    output_schema: Any = None
    annotations: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict[str, Any], repr=False)

    @classmethod
    def from_json(cls, data: Any) -> McpToolInfo:
        if not is_object(data) or not isinstance(data.get("name"), str) or not data["name"]:
            raise McpProtocolError(f"a tools/list entry has no name: {str(data)[:200]}")
        description = data.get("description")
        title = data.get("title")
        annotations = data.get("annotations")
        if title is None and is_object(annotations):
            title = annotations.get("title")
        return cls(data["name"], description if isinstance(description, str) else "", data.get("inputSchema"),
                   title if isinstance(title, str) else None, data.get("outputSchema"),
                   annotations if is_object(annotations) else None, data)


@dataclass
class McpToolCallResult:
    """The result of ``tools/call``: ``content`` blocks as the server sent them, ``is_error``,
    ``structured_content`` and ``meta``. :meth:`to_tool_result` gives phi content."""

    content: list[dict[str, Any]]
    is_error: bool = False
    structured_content: Any = None
    meta: Any = None

    @classmethod
    def from_json(cls, data: Any, label: str = "?") -> McpToolCallResult:
        if not is_object(data):
            raise McpProtocolError(f"MCP server {label} answered tools/call with {str(data)[:200]}, not an object")
        content: Any = data.get("content", [])  # the server's JSON value
        if content is None:
            content = []
        if not is_array(content):
            raise McpProtocolError(f"MCP server {label} answered tools/call with content that is not a list: "
                                   f"{str(content)[:200]}")
        return cls(content, data.get("isError") is True, data.get("structuredContent"), data.get("_meta"))

    def to_tool_result(self) -> ToolResult:
        """phi content blocks, with what they cannot carry in ``details`` (see the module doc)."""
        blocks: list[Content] = []
        kept: list[Any] = []
        for block in self.content:
            converted, lossless = convert_block(block)
            blocks.append(converted)
            if not lossless:
                kept.append(block)
        if not blocks and self.structured_content is not None:
            blocks.append(TextContent(json.dumps(self.structured_content, ensure_ascii=False)))
        details: dict[str, Any] = {}
        if self.structured_content is not None:
            details["structuredContent"] = self.structured_content
        if kept:
            details["content"] = kept
        if self.meta is not None:
            details["_meta"] = self.meta
        return ToolResult(blocks or [TextContent("")], details or None)

    @property
    def text(self) -> str:
        """The text of the result: text blocks and text resources, one per line."""
        parts: list[str] = []
        for block in self.content:
            converted, _ = convert_block(block)
            if isinstance(converted, TextContent) and converted.text:
                parts.append(converted.text)
        if not parts and self.structured_content is not None:
            parts.append(json.dumps(self.structured_content, ensure_ascii=False))
        return "\n".join(parts)


def convert_block(block: Any) -> tuple[Content, bool]:
    """One MCP content block as phi content; the flag says whether nothing was lost."""
    if not is_object(block):
        return TextContent(f"[malformed MCP content block: {str(block)[:100]}]"), False
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextContent(block["text"]), True
    if kind == "image" and _is_str(block, "data") and _is_str(block, "mimeType"):
        return ImageContent(block["data"], block["mimeType"]), True
    if kind == "audio":
        return TextContent(f"[audio: {_mime(block)}, {_size(block.get('data'))}]"), False
    if kind == "resource" and is_object(block.get("resource")):
        return _resource(block["resource"])
    if kind == "resource_link" and isinstance(block.get("uri"), str):
        return TextContent(_link_text(block)), False
    log.debug("MCP content block of type %r shown as a placeholder", kind)
    return TextContent(f"[MCP content of type {str(kind)[:40]!r} that phi cannot show]"), False


def _resource(resource: dict[str, Any]) -> tuple[Content, bool]:
    uri = str(resource.get("uri", ""))
    mime = resource.get("mimeType")
    if isinstance(resource.get("text"), str):
        return TextContent(resource["text"]), True
    blob = resource.get("blob")
    if isinstance(blob, str) and isinstance(mime, str):
        if mime.startswith("image/"):
            return ImageContent(blob, mime), True
        text = _text_blob(blob, mime)
        if text is not None:
            return TextContent(text), True
    return TextContent(f"[resource {uri}: {_mime(resource)}, {_size(blob)}]"), False


def _text_blob(blob: str, mime: str) -> str | None:
    """A blob of a textual mime type as text, when it decodes as UTF-8 and is not huge."""
    kind = mime.split(";")[0].strip().lower()
    textual = kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml"))
    if not textual or len(blob) > MAX_TEXT_BLOB:
        return None
    try:
        return base64.b64decode(blob, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None


def _link_text(block: dict[str, Any]) -> str:
    name = block.get("title") or block.get("name") or block["uri"]
    text = f"[resource link: {name} <{block['uri']}>"
    if isinstance(block.get("mimeType"), str):
        text += f" ({block['mimeType']})"
    if isinstance(block.get("description"), str) and block["description"]:
        text += f": {block['description']}"
    return text + "]"


def _is_str(block: dict[str, Any], key: str) -> bool:
    return isinstance(block.get(key), str)


def _mime(block: dict[str, Any]) -> str:
    mime = block.get("mimeType")
    return mime if isinstance(mime, str) and mime else "unknown type"


def _size(data: Any) -> str:
    """The decoded size of base64 ``data``, without decoding it."""
    if not isinstance(data, str):
        return "no data"
    data = data.strip()
    padding = len(data) - len(data.rstrip("="))
    return f"{max(0, len(data) * 3 // 4 - padding)} bytes"
