"""File reading: the ``read_file`` tool in phi-core's wording (``path``) and in the coding layer's
(``file_path``) (SPEC §9.3, §9.4).

Every successful read is noted in the tool session's record (:mod:`phi.tools.file_state`), which
the writing tools consult, with the stamp of the file object the read used (so a change made just
after the read is not taken as seen). One implementation serves both; :class:`ReadFileWording` holds what differs (parameter name,
descriptions, how the lines are presented). Shared behaviour: paths resolve against the
environment's working directory (reads are never confined); only regular files are read (FIFOs,
sockets and devices such as ``/dev/zero`` are refused before anything could block); images (png,
jpg, gif, webp, bmp) come back as base64 ``ImageContent`` with their MIME type, up to 20 MB; text
comes back as ``NNN | content`` lines, 1-based ``offset`` and ``limit`` select a range; a file with
NUL bytes in its first 8 KB is reported as binary; invalid UTF-8 is shown with replacement
characters; cancellation is checked before every I/O step and between chunks.

Memory is bounded whatever the file's size: the file is streamed (:mod:`phi.tools.text_lines`) and at
most ``max_bytes`` of lines are returned per call; the rest is reached with ``offset``.

* phi-core (:class:`ReadFileTool`, REQ-048/098-100/137): ``path``, ``offset``, ``limit``; a header
  line names the file and the line range; a whole-file read of a file over ``max_bytes`` (1 MB) is
  refused with a hint to use ``offset``/``limit``.
* coding (:class:`CodingReadFileTool`, seed 004 §3.3): ``file_path``, ``offset``, ``limit`` (default
  2000 lines); no header, a trailing note says how to continue when lines remain.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..errors import ToolError
from ..loop.tool import ToolContext
from ..types import ImageContent, TextContent, ToolResult
from ._common import check_cancel, finish, get_env, number_lines, object_schema, os_error, resolve
from .file_state import FileStamp, fstat_of, stamp_of_bytes, stamp_of_handle
from .text_lines import scan_lines
from .tool_session import ToolSession, tool_session

if TYPE_CHECKING:
    from .environment import ExecutionEnvironment

IMAGE_MIME_TYPES = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".webp": "image/webp", ".bmp": "image/bmp",
}
MAX_IMAGE_BYTES = 20 * 1024 * 1024
_BINARY_SNIFF = 8192


@dataclass
class TextSlice:
    path: str                    # as shown to the model
    lines: list[str]             # the selected lines
    first: int                   # 1-based number of lines[0]
    total: int                   # lines in the whole file
    next_line: int | None = None  # first requested line left out because of the byte budget
    cut_bytes: int = 0           # bytes cut off a single line longer than the budget
    stamp: FileStamp | None = None  # the version of the file that was read

    def notes(self, max_bytes: int, continuation: bool = True) -> str:
        """What the model needs to know about a selection the byte budget shortened ("" if none)."""
        out = ""
        if self.cut_bytes:
            out += f"\n[line {self.first} is longer than {max_bytes} bytes; {self.cut_bytes} bytes of it are not shown]"
        if continuation and self.next_line is not None and self.next_line <= self.total:
            out += f"\n[output limited to {max_bytes} bytes; read on with offset={self.next_line}]"
        return out


def _check_not_dir(env: ExecutionEnvironment, path: str, shown: str) -> None:
    try:
        if env.is_dir(path):
            raise ToolError(f"{shown} is a directory; use a listing tool to see its contents")
    except OSError as exc:
        raise os_error(exc, shown) from None


def read_image(env: ExecutionEnvironment, path: str, shown: str, ctx: ToolContext,
               max_bytes: int = MAX_IMAGE_BYTES) -> tuple[ToolResult, FileStamp] | None:
    """An ImageContent result for an image path and the stamp of the bytes read, or None when
    ``path`` is not an image."""
    mime = IMAGE_MIME_TYPES.get(os.path.splitext(path)[1].lower())
    if mime is None:
        return None
    _check_not_dir(env, path, shown)
    check_cancel(ctx)
    try:
        data = env.read_bytes(path, max_bytes)
    except OSError as exc:
        if getattr(exc, "limit", None) is not None:
            raise ToolError(f"Image too large: {shown} is over {max_bytes} bytes; "
                            f"the limit is {max_bytes} bytes.") from None
        raise os_error(exc, shown) from None
    encoded = base64.b64encode(data).decode("ascii")
    result = ToolResult([TextContent(f"Image file {shown} ({mime}, {len(data)} bytes)"), ImageContent(encoded, mime)],
                        {"path": shown, "mime_type": mime, "bytes": len(data)})
    return result, stamp_of_bytes(data)


def read_text_slice(env: ExecutionEnvironment, path: str, offset: int | None, limit: int | None, ctx: ToolContext,
                    max_bytes: int) -> TextSlice:
    """Lines ``offset`` .. ``offset + limit - 1`` of ``path`` (at most ``max_bytes`` of them), streamed.

    Without ``offset``/``limit`` a file over ``max_bytes`` is refused (use a range instead).
    """
    _, shown = resolve(env, path)
    _check_not_dir(env, path, shown)
    check_cancel(ctx)
    try:
        with env.open_read(path) as fh:
            opened = fstat_of(fh)
            size = env.file_size(path)
            if offset is None and limit is None and size > max_bytes:
                raise ToolError(f"File too large: {shown} is {size} bytes (limit {max_bytes}). "
                                "Use offset/limit to read it in parts, or search it with grep.")
            if b"\x00" in fh.read(_BINARY_SNIFF):
                raise ToolError(f"{shown} appears to be a binary file ({size} bytes); it cannot be shown as text.")
            fh.seek(0)
            part = scan_lines(fh, offset or 1, limit, max_bytes, lambda: check_cancel(ctx))
            stamp = stamp_of_handle(fh, since=opened)
    except OSError as exc:
        raise os_error(exc, shown) from None
    if part.lines == [] and part.total and part.first > part.total:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {part.total} lines")
    return TextSlice(shown, part.lines, part.first, part.total, part.next_line, part.cut_bytes, stamp)



def _phi_core_text(part: TextSlice, max_bytes: int) -> tuple[str, dict[str, object]]:
    """A header naming the file and the line range, then the numbered lines."""
    if not part.lines:
        header = f"File: {part.path} (empty)"
    else:
        last = part.first + len(part.lines) - 1
        header = f"File: {part.path} (lines {part.first}-{last} of {part.total})"
    text = header + ("\n" + number_lines(part.lines, part.first) if part.lines else "")
    text += part.notes(max_bytes)
    return text, {"path": part.path, "total_lines": part.total}


def _coding_text(part: TextSlice, max_bytes: int) -> tuple[str, dict[str, object]]:
    """The numbered lines, then how to read on when lines remain."""
    text = number_lines(part.lines, part.first) if part.lines else "(empty file)"
    text += part.notes(max_bytes, continuation=False)
    next_line = part.first + len(part.lines)
    if next_line <= part.total:
        text += f"\n[... {part.total - next_line + 1} more lines; read on with offset={next_line}]"
    return text, {"path": part.path, "total_lines": part.total, "first_line": part.first,
                  "lines_read": len(part.lines)}


@dataclass(frozen=True)
class ReadFileWording:
    """The names and words of one ``read_file`` variant. Its repr shows only the parameter names, so
    a tool's repr stays short."""

    path_key: str
    path_help: str = field(repr=False)
    description: str = field(repr=False)
    #: the result text and details for the lines read, given the tool's ``max_bytes``
    present: Callable[[TextSlice, int], tuple[str, dict[str, object]]] = field(repr=False)

    def schema(self) -> dict[str, Any]:
        return object_schema({
            self.path_key: {"type": "string", "minLength": 1, "description": self.path_help},
            "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start reading from."},
            "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to read."},
        }, [self.path_key])


PHI_CORE_READ = ReadFileWording(
    "path", "Path of the file to read.",
    "Read a file. Text comes back with line numbers; use offset and limit (1-based lines) for "
    "large files. Images (png, jpg, gif, webp, bmp) come back as images.",
    _phi_core_text,
)
CODING_READ = ReadFileWording(
    "file_path", "Absolute path to the file.",
    "Read a file from the filesystem. Returns line-numbered content.",
    _coding_text,
)


@dataclass
class ReadFileTool:
    """The ``read_file`` tool; phi-core's wording unless ``wording`` says otherwise. A call without
    ``limit`` reads ``default_limit`` lines (None: the whole file, refused over ``max_bytes``).
    ``description`` and ``parameters`` default to the wording's."""

    env: ExecutionEnvironment | None = None
    max_bytes: int = 1024 * 1024
    max_image_bytes: int = MAX_IMAGE_BYTES
    max_chars: int | None = None
    default_limit: int | None = None
    session: ToolSession | None = None
    wording: ReadFileWording = PHI_CORE_READ
    name: str = "read_file"
    label: str = "Read file"
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        self.description = self.description or self.wording.description
        self.parameters = self.parameters or self.wording.schema()

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        check_cancel(ctx)
        env = get_env(self.env)
        path = args[self.wording.path_key]
        resolved, shown = resolve(env, path)
        files = tool_session(self.session).files
        image = read_image(env, path, shown, ctx, self.max_image_bytes)
        if image is not None:
            files.note(resolved, image[1])
            return image[0]
        limit = args.get("limit")
        if not limit and self.default_limit is not None:
            limit = self.default_limit
        part = read_text_slice(env, path, args.get("offset"), limit, ctx, self.max_bytes)
        if part.stamp is not None:
            files.note(resolved, part.stamp)
        text, details = self.wording.present(part, self.max_bytes)
        return finish(text, self.name, details, self.max_chars, session=self.session)


@dataclass
class CodingReadFileTool(ReadFileTool):
    """The coding layer's ``read_file`` (seed 004 §3.3): :class:`ReadFileTool` in its wording, reading
    up to 2000 lines and 10 MB per call."""

    max_bytes: int = 10 * 1024 * 1024
    default_limit: int | None = 2000
    wording: ReadFileWording = CODING_READ
