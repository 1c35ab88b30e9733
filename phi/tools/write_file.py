"""File writing: the ``write_file`` tool in phi-core's wording (``path``) and in the coding layer's
(``file_path``) (SPEC §9.3, §9.4; REQ-049/104/137).

One implementation serves both: :class:`WriteFileWording` holds what differs (parameter name,
descriptions, the result sentence). It creates missing parent directories, refuses paths outside
``allowed_roots`` (default: the environment's ``allowed_write_roots``, i.e. the working directory) —
checked first for a clear message, then enforced by the environment while it writes, so a symlink
swapped in meanwhile cannot redirect the write — checks cancellation right before writing and reports
the number of bytes written. The file is replaced atomically (new file renamed over the old one): a
hard link to the old file is not written through, and FIFOs, devices and directories are refused.

Read before write (SPEC §9.1): with a :class:`~phi.tools.tool_session.ToolSession` whose
``require_read_before_write`` is on (the default of :func:`phi.tools.default_tools`,
:func:`phi.tools.coding_tools` and coding sessions), an existing file is only replaced when the model
has read it in this session and it has not changed since (:mod:`phi.tools.file_state`); a new file
may always be created. The check runs again on the file about to be replaced, right before the new
content is renamed over it, so a change (or a creation) by someone else while the tool writes is
refused too and kept. A symlink is written through: the file it leads to is replaced, keeping its
permission bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence, TypedDict

from ..loop.tool import ToolContext
from ..types import ToolResult
from ._common import (
    check_cancel,
    check_writable,
    display_path,
    finish,
    get_env,
    object_schema,
    os_error,
    write_roots,
)
from .environment import write_verified
from .file_state import stamp_of_bytes
from .tool_session import ToolSession, tool_session

if TYPE_CHECKING:
    from .environment import ExecutionEnvironment


class WriteDetails(TypedDict):
    """``details`` of a write_file result."""

    path: str      # as shown to the model
    bytes: int     # UTF-8 bytes written
    created: bool  # the file did not exist before


def write_text(env: ExecutionEnvironment, path: str, content: str, allowed_roots: Sequence[str] | None,
               ctx: ToolContext, session: ToolSession | None = None) -> WriteDetails:
    """Write ``content`` to ``path``; returns the details (path, bytes, created). An existing file
    the session's record says the model has not seen as it is now is refused (ToolError), also when
    it changes (or appears) while the write is under way."""
    check_cancel(ctx)
    resolved = check_writable(env, path, allowed_roots)
    shown = display_path(env, resolved)
    files = tool_session(session).files
    data = content.encode("utf-8")
    try:
        created = not env.file_exists(path)
        expected = files.check(env, resolved, shown)
        check_cancel(ctx)
        write_verified(env, path, data, write_roots(env, allowed_roots), expected)
    except OSError as exc:
        raise os_error(exc, shown) from None
    files.note(resolved, stamp_of_bytes(data))
    return {"path": shown, "bytes": len(data), "created": created}


@dataclass(frozen=True)
class WriteFileWording:
    """The names and words of one ``write_file`` variant. Its repr shows only the parameter names, so
    a tool's repr stays short."""

    path_key: str
    path_help: str = field(repr=False)
    description: str = field(repr=False)
    #: the result text; fields ``{verb}`` ("Created" or "Wrote"), ``{path}`` and ``{bytes}``
    done: str = field(repr=False)

    def schema(self) -> dict[str, Any]:
        return object_schema({
            self.path_key: {"type": "string", "minLength": 1, "description": self.path_help},
            "content": {"type": "string", "description": "The full file content."},
        }, [self.path_key, "content"])


PHI_CORE_WRITE = WriteFileWording(
    "path", "Path of the file to write.",
    "Write content to a file, replacing it if it exists. Creates parent directories as needed.",
    "{verb} {path} ({bytes} bytes)",
)
CODING_WRITE = WriteFileWording(
    "file_path", "Absolute path of the file.",
    "Write content to a file. Creates the file and parent directories if needed.",
    "Wrote {bytes} bytes to {path}",
)


@dataclass
class WriteFileTool:
    """The ``write_file`` tool; phi-core's wording unless ``wording`` says otherwise. ``description``
    and ``parameters`` default to the wording's."""

    env: ExecutionEnvironment | None = None
    allowed_roots: Sequence[str] | None = None
    session: ToolSession | None = None
    wording: WriteFileWording = PHI_CORE_WRITE
    name: str = "write_file"
    label: str = "Write file"
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        self.description = self.description or self.wording.description
        self.parameters = self.parameters or self.wording.schema()

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        env = get_env(self.env)
        details = write_text(env, args[self.wording.path_key], args["content"], self.allowed_roots, ctx,
                             self.session)
        verb = "Created" if details["created"] else "Wrote"
        text = self.wording.done.format(verb=verb, path=details["path"], bytes=details["bytes"])
        return finish(text, self.name, details, session=self.session)


@dataclass
class CodingWriteFileTool(WriteFileTool):
    """The coding layer's ``write_file`` (seed 004 §3.3): :class:`WriteFileTool` in its wording."""

    wording: WriteFileWording = CODING_WRITE
