"""Provider-aligned toolsets (SPEC §14 CODE-4; seed 004 §3.3–3.6): the tools of each profile, on phi's coding tools.

Tool names are the seed's (``read_file``, ``write_file``, ``edit_file``, ``apply_patch``, ``shell``,
``grep``, ``glob``, ``list_dir``, ``read_many_files``). Parameter names follow the reference agent
each model family was trained with, where the seed leaves room (§3.3: "parameter schemas ... may
vary between profiles"):

* **openai** (codex): ``shell {command: argv list (a string is accepted too), workdir, timeout_ms}``;
  ``apply_patch {input}``; ``grep {pattern, include, path, limit}`` listing the matching files,
  like codex's ``grep_files``; ``read_file {file_path, offset (1-based), limit}``.
* **anthropic** (Claude Code): ``shell {command, timeout (ms), description}`` with a 120 s default;
  ``edit_file {file_path, old_string, new_string, replace_all}``; ``grep {pattern, path, glob,
  output_mode (content | files_with_matches | count; default files_with_matches), -i, head_limit}``;
  ``glob {pattern, path}`` newest first.
* **gemini** (gemini-cli): ``read_file {file_path, offset (0-based), limit}``; ``edit_file
  {file_path, old_string, new_string, expected_replacements}``; ``shell {command, description,
  dir_path, timeout_ms}``; ``grep {pattern, dir_path, include}``; ``glob {pattern, dir_path}``;
  ``list_dir {dir_path, depth}``; ``read_many_files {include}``.

Descriptions are phi's own words. Every executor builds the phi tool on the environment it is given
(:mod:`phi.tools`), so the behaviour — confinement, truncation markers, process-tree cleanup — is
the same everywhere. Shell output streams as ``TOOL_CALL_OUTPUT_DELTA`` events while it runs.
"""

from __future__ import annotations

import codecs
from typing import Any, Callable, Mapping, Sequence, cast

from ..concurrency.cancel import CancellationToken
from ..errors import ToolError
from ..tools.edit_file import CodingEditFileTool
from ..tools.environment import ExecResult, ExecutionEnvironment
from ..tools.find_files import GlobTool
from ..tools.read_file import CodingReadFileTool
from ..tools.search import GrepTool
from ..tools.shell import BACKGROUND_PARAMETER, COMMAND_RULES, ShellTool
from ..tools.tool_session import ToolSession
from ..tools.write_file import CodingWriteFileTool
from ..types import ToolDefinition, ToolResult
from .registry import RegisteredTool, ToolCallContext
from .shell_words import argv_command_line

#: The executors built here all take the call context (see phi.coding.registry).
Executor = Callable[[dict[str, Any], ExecutionEnvironment, ToolCallContext], object]

STRING = {"type": "string"}
PATH = {"type": "string", "minLength": 1}


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def described(base: dict[str, Any], text: str) -> dict[str, Any]:
    return {**base, "description": text}


def tool(name: str, description: str, properties: dict[str, Any], required: list[str], executor: Executor,
         kind: str) -> RegisteredTool:
    return RegisteredTool(ToolDefinition(name, description, schema(properties, required)), executor, kind)


# --------------------------------------------------------------------------- shell


class _StreamingEnv:
    """The environment, with each command's output forwarded as it arrives (``call.output``)."""

    def __init__(self, inner: ExecutionEnvironment, call: ToolCallContext) -> None:
        self._inner, self._call = inner, call
        self._decoders = {name: codecs.getincrementaldecoder("utf-8")("replace") for name in ("stdout", "stderr")}

    def __getattr__(self, name: str) -> Any:  # everything but exec_command is the inner environment's
        return getattr(self._inner, name)

    def exec_command(self, command: str, timeout_ms: int, working_dir: str | None = None,
                     env_vars: Mapping[str, str] | None = None, *, cancel: CancellationToken | None = None,
                     on_output: Callable[[str, bytes], None] | None = None) -> ExecResult:
        def forward(stream: str, data: bytes) -> None:
            if on_output is not None:
                on_output(stream, data)
            text = self._decoders[stream].decode(data)
            if text:
                self._call.output(text)

        return self._inner.exec_command(command, timeout_ms, working_dir, env_vars, cancel=cancel, on_output=forward)


def command_timeouts(call: ToolCallContext, profile_default_ms: int) -> tuple[int, int]:
    """(default, maximum) command timeout in ms: the session's settings, else the profile's default."""
    config = call.config
    if config is None:
        return profile_default_ms, 600_000
    default = config.default_command_timeout_ms or profile_default_ms
    return min(default, config.max_command_timeout_ms), config.max_command_timeout_ms


def tools_session(call: ToolCallContext) -> ToolSession | None:
    """The coding session's :class:`~phi.tools.tool_session.ToolSession` (what its tools share: the
    read-before-write record, saved outputs, background commands), with the session's current
    ``require_read_before_write``; None outside a session (the tools' process-wide default)."""
    session = call.session
    if session is None:
        return None
    shared: ToolSession = session.tool_session
    shared.require_read_before_write = session.config.require_read_before_write
    return shared


def run_shell(env: ExecutionEnvironment, call: ToolCallContext, command: str, *, timeout_ms: int | None,
              workdir: str | None, description: str | None, profile_default_ms: int,
              background: bool = False) -> ToolResult:
    default, maximum = command_timeouts(call, profile_default_ms)
    # a _StreamingEnv is one: __getattr__ hands every other member to ``env`` (a static checker does not follow that)
    streaming = cast(ExecutionEnvironment, _StreamingEnv(env, call))
    shell = ShellTool(env=streaming, default_timeout_ms=default, max_timeout_ms=maximum,
                      working_dir=workdir or None, session=tools_session(call))
    args: dict[str, Any] = {"command": command, "run_in_background": background}
    if timeout_ms:
        args["timeout_ms"] = int(timeout_ms)
    if description:
        args["description"] = description
    return shell.execute(args, call.tool)


def argv_to_command(command: str | Sequence[object]) -> str:
    """codex sends argv (``["bash", "-lc", "npm test"]``); a shell wrapper's script runs as it is,
    any other argv is quoted into one command line."""
    if isinstance(command, str):
        return command
    argv = [str(part) for part in command]
    if not argv:
        raise ToolError("command must not be empty")
    return argv_command_line(argv)  # the permission rules read argv the same way (phi.coding.shell_words)


# --------------------------------------------------------------------------- shared core tools


def read_file_tool(description: str, *, zero_based_offset: bool) -> RegisteredTool:
    first = 0 if zero_based_offset else 1
    offset_help = ("0-based" if zero_based_offset else "1-based") + " line number to start reading from."

    def run(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> ToolResult:
        forwarded: dict[str, Any] = {"file_path": args["file_path"]}
        if args.get("offset") is not None:
            forwarded["offset"] = int(args["offset"]) + 1 - first
        if args.get("limit") is not None:
            forwarded["limit"] = int(args["limit"])
        return CodingReadFileTool(env=env, session=tools_session(call)).execute(forwarded, call.tool)

    return tool("read_file", description, {
        "file_path": described(PATH, "Path of the file (absolute, or relative to the working directory)."),
        "offset": {"type": "integer", "minimum": first, "description": offset_help},
        "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read (default 2000)."},
    }, ["file_path"], run, "read")


def write_file_tool(description: str) -> RegisteredTool:
    def run(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> ToolResult:
        return CodingWriteFileTool(env=env, session=tools_session(call)).execute(args, call.tool)

    return tool("write_file", description, {
        "file_path": described(PATH, "Path of the file to write."),
        "content": described(STRING, "The complete new content of the file."),
    }, ["file_path", "content"], run, "write")


def glob_tool(description: str, path_key: str) -> RegisteredTool:
    def run(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> ToolResult:
        return GlobTool(env=env, session=tools_session(call)).execute(
            {"pattern": args["pattern"], "path": args.get(path_key) or "."}, call.tool)

    return tool("glob", description, {
        "pattern": described(PATH, "Glob pattern such as '**/*.py' or 'src/*.ts'."),
        path_key: described(STRING, "Directory to search in (default: the working directory)."),
    }, ["pattern"], run, "read")


def grep_executor(mapping: Callable[[dict[str, Any]], dict[str, Any]]) -> Executor:
    def run(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> ToolResult:
        forwarded = {k: v for k, v in mapping(args).items() if v is not None}
        return GrepTool(env=env, session=tools_session(call)).execute(forwarded, call.tool)

    return run


def edit_file_tool(description: str) -> RegisteredTool:
    """Claude Code's exact-string replacement."""
    def run(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> ToolResult:
        return CodingEditFileTool(env=env, session=tools_session(call)).execute(args, call.tool)

    return tool("edit_file", description, {
        "file_path": described(PATH, "Path of the file to change."),
        "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
        "new_string": described(STRING, "The text to put in its place."),
        "replace_all": {"type": "boolean", "default": False,
                        "description": "Replace every occurrence instead of exactly one."},
    }, ["file_path", "old_string", "new_string"], run, "write")


__all__ = ["tool", "schema", "described", "run_shell", "tools_session", "COMMAND_RULES", "BACKGROUND_PARAMETER", "argv_to_command", "read_file_tool", "write_file_tool",
           "glob_tool", "grep_executor", "edit_file_tool", "command_timeouts"]
