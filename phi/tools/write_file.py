"""File writing tools: phi-core ``write_file`` (``path``) and the coding layer's ``write_file``
(``file_path``) (SPEC §9.3, §9.4; REQ-049/104/137).

Both create missing parent directories, refuse paths outside ``allowed_roots`` (default: the
environment's ``allowed_write_roots``, i.e. the working directory) — checked first for a clear
message, then enforced by the environment while it writes, so a symlink swapped in meanwhile cannot
redirect the write — check cancellation right before writing and report the number of bytes
written. The file is replaced atomically (new file renamed over the old one): a hard link to the
old file is not written through, and FIFOs, devices and directories are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..loop.tool import ToolContext
from ..types import ToolResult
from ._common import (
    check_cancel,
    check_writable,
    display_path,
    finish,
    get_env,
    os_error,
    write_roots,
)


def write_text(env: Any, path: str, content: str, allowed_roots: Sequence[str] | None, ctx: ToolContext) -> dict:
    """Write ``content`` to ``path``; returns the details (path, bytes, created)."""
    check_cancel(ctx)
    resolved = check_writable(env, path, allowed_roots)
    shown = display_path(env, resolved)
    try:
        created = not env.file_exists(path)
        check_cancel(ctx)
        env.write_file(path, content, roots=write_roots(env, allowed_roots))
    except OSError as exc:
        raise os_error(exc, shown) from None
    return {"path": shown, "bytes": len(content.encode("utf-8")), "created": created}


def _schema(path_key: str, path_help: str) -> dict:
    return {
        "type": "object",
        "properties": {
            path_key: {"type": "string", "minLength": 1, "description": path_help},
            "content": {"type": "string", "description": "The full file content."},
        },
        "required": [path_key, "content"],
        "additionalProperties": False,
    }


@dataclass
class WriteFileTool:
    """phi-core's ``write_file`` tool."""

    env: Any = None
    allowed_roots: Sequence[str] | None = None
    name: str = "write_file"
    label: str = "Write file"
    description: str = "Write content to a file, replacing it if it exists. Creates parent directories as needed."
    parameters: dict = field(default_factory=lambda: _schema("path", "Path of the file to write."))

    def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        env = get_env(self.env)
        details = write_text(env, args["path"], args["content"], self.allowed_roots, ctx)
        verb = "Created" if details["created"] else "Wrote"
        return finish(f"{verb} {details['path']} ({details['bytes']} bytes)", self.name, details)


@dataclass
class CodingWriteFileTool:
    """The coding layer's ``write_file`` tool (seed 004 §3.3)."""

    env: Any = None
    allowed_roots: Sequence[str] | None = None
    name: str = "write_file"
    label: str = "Write file"
    description: str = "Write content to a file. Creates the file and parent directories if needed."
    parameters: dict = field(default_factory=lambda: _schema("file_path", "Absolute path of the file."))

    def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        env = get_env(self.env)
        details = write_text(env, args["file_path"], args["content"], self.allowed_roots, ctx)
        return finish(f"Wrote {details['bytes']} bytes to {details['path']}", self.name, details)
