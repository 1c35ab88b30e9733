"""File reading tools: phi-core ``read_file`` and the coding layer's ``read_file`` (SPEC §9.3, §9.4).

Shared behaviour: paths resolve against the environment's working directory (reads are never
confined); images (png, jpg, gif, webp, bmp) come back as base64 ``ImageContent`` with their MIME
type, up to 20 MB; text comes back as ``NNN | content`` lines, 1-based ``offset`` and ``limit``
select a range; a file with NUL bytes in its first 8 KB is reported as binary; invalid UTF-8 is
shown with replacement characters; cancellation is checked before every I/O step.

* phi-core (REQ-048/098-100/137): ``path``, ``offset``, ``limit``; a header line names the file and
  the line range; text files over ``max_bytes`` (1 MB) need ``offset``/``limit``.
* coding (seed 004 §3.3): ``file_path``, ``offset``, ``limit`` (default 2000 lines); no header, a
  trailing note says how to continue when lines remain.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from typing import Any

from ..agent_tool import ToolContext
from ..errors import ToolError
from ..types import ImageContent, TextContent, ToolResult
from ._common import check_cancel, display_path, finish, get_env, number_lines, os_error
from .patch_parser import split_lines

IMAGE_MIME_TYPES = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".webp": "image/webp", ".bmp": "image/bmp",
}
MAX_IMAGE_BYTES = 20 * 1024 * 1024
_BINARY_SNIFF = 8192
# With offset/limit a larger text file may be read, up to this many times max_bytes.
_RANGED_READ_FACTOR = 50


@dataclass
class TextSlice:
    path: str          # as shown to the model
    lines: list[str]   # the selected lines
    first: int         # 1-based number of lines[0]
    total: int         # lines in the whole file


def _size(env: Any, path: str, shown: str) -> int:
    try:
        if env.is_dir(path):
            raise ToolError(f"{shown} is a directory; use a listing tool to see its contents")
        return env.file_size(path)
    except OSError as exc:
        raise os_error(exc, shown) from None


def read_image(env: Any, path: str, shown: str, ctx: ToolContext, max_bytes: int = MAX_IMAGE_BYTES) -> ToolResult | None:
    """An ImageContent result for an image path, or None when ``path`` is not an image."""
    mime = IMAGE_MIME_TYPES.get(os.path.splitext(path)[1].lower())
    if mime is None:
        return None
    size = _size(env, path, shown)
    if size > max_bytes:
        raise ToolError(f"Image too large: {shown} is {size} bytes; the limit is {max_bytes} bytes.")
    check_cancel(ctx)
    try:
        data = env.read_bytes(path)
    except OSError as exc:
        raise os_error(exc, shown) from None
    encoded = base64.b64encode(data).decode("ascii")
    return ToolResult([TextContent(f"Image file {shown} ({mime}, {size} bytes)"), ImageContent(encoded, mime)],
                      {"path": shown, "mime_type": mime, "bytes": size})


def read_text_slice(env: Any, path: str, offset: int | None, limit: int | None, ctx: ToolContext,
                    max_bytes: int) -> TextSlice:
    """Read ``path`` as text and select lines ``offset`` .. ``offset + limit - 1``."""
    shown = display_path(env, env.resolve_path(path))
    size = _size(env, path, shown)
    ranged = offset is not None or limit is not None
    if size > max_bytes and (not ranged or size > max_bytes * _RANGED_READ_FACTOR):
        raise ToolError(f"File too large: {shown} is {size} bytes (limit {max_bytes}). "
                        "Use offset/limit to read it in parts, or search it with grep.")
    check_cancel(ctx)
    try:
        data = env.read_bytes(path)
    except OSError as exc:
        raise os_error(exc, shown) from None
    if b"\x00" in data[:_BINARY_SNIFF]:
        raise ToolError(f"{shown} appears to be a binary file ({len(data)} bytes); it cannot be shown as text.")
    lines = split_lines(data.decode("utf-8", errors="replace"))
    start = (offset or 1) - 1
    if lines and start >= len(lines):
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {len(lines)} lines")
    end = len(lines) if limit is None else start + limit
    return TextSlice(shown, lines[start:end], start + 1, len(lines))


_RANGE_PROPS = {
    "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start reading from."},
    "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to read."},
}


@dataclass
class ReadFileTool:
    """phi-core's ``read_file`` tool."""

    env: Any = None
    max_bytes: int = 1024 * 1024
    max_image_bytes: int = MAX_IMAGE_BYTES
    max_chars: int | None = None
    name: str = "read_file"
    label: str = "Read file"
    description: str = (
        "Read a file. Text comes back with line numbers; use offset and limit (1-based lines) for "
        "large files. Images (png, jpg, gif, webp, bmp) come back as images."
    )
    parameters: dict = field(default_factory=lambda: {
        "type": "object",
        "properties": {"path": {"type": "string", "minLength": 1, "description": "Path of the file to read."},
                       **_RANGE_PROPS},
        "required": ["path"],
        "additionalProperties": False,
    })

    def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        check_cancel(ctx)
        env = get_env(self.env)
        path = args["path"]
        image = read_image(env, path, display_path(env, env.resolve_path(path)), ctx, self.max_image_bytes)
        if image is not None:
            return image
        part = read_text_slice(env, path, args.get("offset"), args.get("limit"), ctx, self.max_bytes)
        if not part.lines:
            header = f"File: {part.path} (empty)"
        else:
            last = part.first + len(part.lines) - 1
            header = f"File: {part.path} (lines {part.first}-{last} of {part.total})"
        text = header + ("\n" + number_lines(part.lines, part.first) if part.lines else "")
        return finish(text, self.name, {"path": part.path, "total_lines": part.total}, self.max_chars)


@dataclass
class CodingReadFileTool:
    """The coding layer's ``read_file`` tool (seed 004 §3.3)."""

    env: Any = None
    default_limit: int = 2000
    max_bytes: int = 10 * 1024 * 1024
    max_image_bytes: int = MAX_IMAGE_BYTES
    max_chars: int | None = None
    name: str = "read_file"
    label: str = "Read file"
    description: str = "Read a file from the filesystem. Returns line-numbered content."
    parameters: dict = field(default_factory=lambda: {
        "type": "object",
        "properties": {"file_path": {"type": "string", "minLength": 1, "description": "Absolute path to the file."},
                       **_RANGE_PROPS},
        "required": ["file_path"],
        "additionalProperties": False,
    })

    def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        check_cancel(ctx)
        env = get_env(self.env)
        path = args["file_path"]
        image = read_image(env, path, display_path(env, env.resolve_path(path)), ctx, self.max_image_bytes)
        if image is not None:
            return image
        limit = args.get("limit") or self.default_limit
        part = read_text_slice(env, path, args.get("offset"), limit, ctx, self.max_bytes)
        text = number_lines(part.lines, part.first) if part.lines else "(empty file)"
        next_line = part.first + len(part.lines)
        if next_line <= part.total:
            text += f"\n[... {part.total - next_line + 1} more lines; read on with offset={next_line}]"
        details = {"path": part.path, "total_lines": part.total, "first_line": part.first,
                   "lines_read": len(part.lines)}
        return finish(text, self.name, details, self.max_chars)
