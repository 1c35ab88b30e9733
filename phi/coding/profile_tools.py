"""The tool list of each provider profile (seed 004 §3.4 OpenAI, §3.5 Anthropic, §3.6 Gemini).

Parameter conventions and the reasons for them: :mod:`phi.coding.toolsets`. The sub-agent tools
(§7) are added by :func:`phi.coding.subagent_tools.subagent_tools` in every profile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from ..tools.apply_patch import ApplyPatchTool
from ..tools.edit_file import CodingEditFileTool
from ..tools.find_files import ListDirTool
from ..tools.read_many_files import ReadManyFilesTool
from .registry import RegisteredTool, ToolCallContext
from .toolsets import (
    PATH,
    STRING,
    argv_to_command,
    described,
    edit_file_tool,
    glob_tool,
    grep_executor,
    BACKGROUND_PARAMETER,
    COMMAND_RULES,
    read_file_tool,
    run_shell,
    tool,
    tools_session,
    write_file_tool,
)

if TYPE_CHECKING:
    from ..tools.environment import ExecutionEnvironment
    from ..types import ToolResult

OPENAI_SHELL_TIMEOUT_MS = 10_000  # codex
ANTHROPIC_SHELL_TIMEOUT_MS = 120_000  # Claude Code
GEMINI_SHELL_TIMEOUT_MS = 10_000  # seed 004 §3.6

TIMEOUT_MS = {"type": "integer", "minimum": 1,
              "description": "Stop the command after this many milliseconds (capped by the session's maximum)."}


# --------------------------------------------------------------------------- OpenAI (codex)


def openai_tools() -> list[RegisteredTool]:
    def shell(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> object:
        return run_shell(env, call, argv_to_command(args["command"]), timeout_ms=args.get("timeout_ms"),
                         workdir=args.get("workdir"), description=None, profile_default_ms=OPENAI_SHELL_TIMEOUT_MS,
                         background=bool(args.get("run_in_background")))

    def patch(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> ToolResult:
        return ApplyPatchTool(env=env, session=tools_session(call)).execute({"patch": args["input"]}, call.tool)

    grep = grep_executor(lambda a: {"pattern": a["pattern"], "glob_filter": a.get("include"),
                                    "path": a.get("path"), "max_results": a.get("limit"),
                                    "output_mode": "files_with_matches"})
    return [
        read_file_tool("Read a text file with line numbers (`N | text`). Use offset and limit to page through "
                       "long files; images come back as images.", zero_based_offset=False),
        tool("apply_patch", (
            "Edit files with a patch. The input starts with '*** Begin Patch' and ends with '*** End Patch'. "
            "Each file section is '*** Add File: PATH' followed by '+' lines, '*** Delete File: PATH', or "
            "'*** Update File: PATH' (optionally '*** Move to: NEW_PATH') followed by hunks: an '@@' line "
            "naming the nearby function or class, then ' ' context lines, '-' removed lines and '+' added "
            "lines. Give about three lines of context around each change. Paths are relative to the "
            "working directory; all sections are applied in one call."),
            {"input": described(STRING, "The whole patch text, from '*** Begin Patch' to '*** End Patch'.")},
            ["input"], patch, "write"),
        write_file_tool("Create a file or replace its whole content (prefer apply_patch for changes to "
                        "existing files)."),
        tool("shell", (
            "Run a command and return its combined output with the exit code and duration. Pass the "
            "argv, e.g. [\"bash\", \"-lc\", \"pytest -q\"]; set workdir instead of using cd. Commands stop "
            "after 10 seconds unless timeout_ms asks for longer. " + COMMAND_RULES),
            {"command": {"type": ["array", "string"], "items": {"type": "string"}, "minItems": 1, "minLength": 1,
                         "description": "The command as an argv list (a single command line is accepted too)."},
             "workdir": described(STRING, "Directory to run in (default: the working directory)."),
             "timeout_ms": TIMEOUT_MS, "run_in_background": BACKGROUND_PARAMETER},
            ["command"], shell, "execute"),
        tool("grep", (
            "List the files whose contents match a regular expression, most relevant first. Narrow the "
            "search with include (a glob such as '*.rs') and path."),
            {"pattern": described(PATH, "Regular expression to look for."),
             "include": described(STRING, "Only search files matching this glob."),
             "path": described(STRING, "File or directory to search (default: the working directory)."),
             "limit": {"type": "integer", "minimum": 1, "description": "At most this many files (default 100)."}},
            ["pattern"], grep, "read"),
        glob_tool("Find files by name pattern; newest first.", "path"),
    ]


# --------------------------------------------------------------------------- Anthropic (Claude Code)


def anthropic_tools() -> list[RegisteredTool]:
    def shell(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> object:
        return run_shell(env, call, args["command"], timeout_ms=args.get("timeout"), workdir=None,
                         description=args.get("description"), profile_default_ms=ANTHROPIC_SHELL_TIMEOUT_MS,
                         background=bool(args.get("run_in_background")))

    grep = grep_executor(lambda a: {"pattern": a["pattern"], "path": a.get("path"), "glob_filter": a.get("glob"),
                                    "output_mode": a.get("output_mode") or "files_with_matches",
                                    "case_insensitive": a.get("-i"), "max_results": a.get("head_limit")})
    return [
        read_file_tool("Read a file; lines come back numbered (`N | text`). Read a file before editing it. "
                       "For long files pass offset (1-based) and limit.", zero_based_offset=False),
        write_file_tool("Write a whole file. Prefer edit_file for changing an existing file; only create "
                        "new files when the task needs them."),
        edit_file_tool("Replace text in a file: old_string must match the file exactly, including "
                       "indentation, and must occur once (add surrounding lines to make it unique) unless "
                       "replace_all is true. Read the file first."),
        tool("shell", (
            "Run a bash command in the working directory and return its output, exit code and duration. "
            "Quote paths with spaces. The command stops after 2 minutes unless timeout (milliseconds, at "
            "most 10 minutes) says otherwise. Use grep, glob and read_file rather than shell for searching "
            "and reading files. " + COMMAND_RULES),
            {"command": described(PATH, "The command to run."),
             "timeout": {**TIMEOUT_MS, "description": "Timeout in milliseconds (default 120000)."},
             "description": described(STRING, "A few words saying what the command does."),
             "run_in_background": BACKGROUND_PARAMETER},
            ["command"], shell, "execute"),
        tool("grep", (
            "Search file contents with a regular expression (ripgrep syntax). output_mode 'content' shows "
            "matching lines, 'files_with_matches' (the default) the file paths, 'count' the number of "
            "matches per file. Filter files with glob (e.g. '*.py')."),
            {"pattern": described(PATH, "Regular expression to search for."),
             "path": described(STRING, "File or directory to search (default: the working directory)."),
             "glob": described(STRING, "Only search files matching this glob."),
             "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"],
                             "description": "What to show (default files_with_matches)."},
             "-i": {"type": "boolean", "description": "Ignore case."},
             "head_limit": {"type": "integer", "minimum": 1, "description": "Show at most this many results."}},
            ["pattern"], grep, "read"),
        glob_tool("Find files by name pattern such as '**/*.ts'; the most recently modified come first.", "path"),
    ]


# --------------------------------------------------------------------------- Gemini (gemini-cli)


def _gemini_shell(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> object:
    return run_shell(env, call, args["command"], timeout_ms=args.get("timeout_ms"), workdir=args.get("dir_path"),
                     description=args.get("description"), profile_default_ms=GEMINI_SHELL_TIMEOUT_MS,
                     background=bool(args.get("run_in_background")))


def _gemini_replace(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> ToolResult:
    """gemini-cli's replace: exactly ``expected_replacements`` occurrences (default 1) are changed."""
    expected = int(args.get("expected_replacements") or 1)
    found = _count_occurrences(env, args["file_path"], args["old_string"])
    if found and found != expected:
        raise ToolError(f"Expected {expected} occurrence(s) of old_string in {args['file_path']} but found "
                        f"{found}. Include more context to pick one, or set expected_replacements to {found}.")
    forwarded = {k: args[k] for k in ("file_path", "old_string", "new_string")}
    forwarded["replace_all"] = expected > 1
    return CodingEditFileTool(env=env, session=tools_session(call)).execute(forwarded, call.tool)


def _gemini_list_dir(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> ToolResult:
    return ListDirTool(env=env, session=tools_session(call)).execute(
        {"path": args.get("dir_path") or ".", "depth": args.get("depth") or 1}, call.tool)


def _gemini_read_many(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> ToolResult:
    return ReadManyFilesTool(env=env, session=tools_session(call)).execute({"paths": list(args["include"])}, call.tool)


def gemini_tools() -> list[RegisteredTool]:
    grep = grep_executor(lambda a: {"pattern": a["pattern"], "path": a.get("dir_path"),
                                    "glob_filter": a.get("include"), "output_mode": "content"})
    return [
        read_file_tool("Read a file's content with line numbers. For large files give offset (0-based line) "
                       "and limit.", zero_based_offset=True),
        tool("read_many_files", (
            "Read several files at once, given as paths or glob patterns ('src/**/*.py'); each file's text "
            "comes under a '--- path ---' header. Useful to get an overview before changing code."),
            {"include": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                         "description": "Paths or glob patterns of the files to read."}},
            ["include"], _gemini_read_many, "read"),
        write_file_tool("Write content to a file, creating it and its directories when needed."),
        tool("edit_file", (
            "Replace text in a file. old_string must match exactly (whitespace and indentation included) "
            "and, by default, exactly once; to change several identical places set expected_replacements. "
            "Include a few lines of context so the match is unambiguous."),
            {"file_path": described(PATH, "Path of the file to change."),
             "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
             "new_string": described(STRING, "The replacement text."),
             "expected_replacements": {"type": "integer", "minimum": 1,
                                       "description": "How many occurrences to replace (default 1)."}},
            ["file_path", "old_string", "new_string"], _gemini_replace, "write"),
        tool("shell", (
            "Run a shell command with bash and return its output and exit code. Explain what it does in "
            "description. Commands stop after 10 seconds unless timeout_ms says otherwise. " + COMMAND_RULES),
            {"command": described(PATH, "The exact command to run."),
             "description": described(STRING, "Why the command is run, in a few words."),
             "dir_path": described(STRING, "Directory to run in, relative to the working directory."),
             "timeout_ms": TIMEOUT_MS, "run_in_background": BACKGROUND_PARAMETER},
            ["command"], _gemini_shell, "execute"),
        tool("grep", (
            "Search file contents for a regular expression; returns 'path:line:text' for each match. "
            "Restrict the files with include (a glob)."),
            {"pattern": described(PATH, "Regular expression to search for."),
             "dir_path": described(STRING, "Directory to search (default: the working directory)."),
             "include": described(STRING, "Only search files matching this glob, e.g. '*.js'.")},
            ["pattern"], grep, "read"),
        glob_tool("Find files matching a glob pattern, newest first.", "dir_path"),
        tool("list_dir", "List a directory's files and subdirectories (with sizes), optionally several levels deep.",
             {"dir_path": described(STRING, "Directory to list (default: the working directory)."),
              "depth": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Levels to show (default 1)."}},
             [], _gemini_list_dir, "read"),
    ]


def _count_occurrences(env: ExecutionEnvironment, path: str, text: str) -> int:
    """Exact occurrences of ``text`` in the file (0 when it cannot be read: the edit reports why)."""
    try:
        data = env.read_bytes(path, CodingEditFileTool.max_bytes)
        return data.decode("utf-8").count(text)
    except (OSError, UnicodeDecodeError):
        return 0


PROFILE_TOOLS = {"openai": openai_tools, "anthropic": anthropic_tools, "gemini": gemini_tools}

__all__ = ["openai_tools", "anthropic_tools", "gemini_tools", "PROFILE_TOOLS", "OPENAI_SHELL_TIMEOUT_MS",
           "ANTHROPIC_SHELL_TIMEOUT_MS", "GEMINI_SHELL_TIMEOUT_MS"]
