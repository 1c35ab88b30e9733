"""Command tools: phi-core ``bash`` and the coding layer's ``shell`` (SPEC §9.3, §9.4).

Both run the command through the environment's ``exec_command`` (``/bin/bash -c``, own process
group, filtered environment) after two checks, :func:`run_guarded`: the deny-pattern guardrail and
the optional ``confirm_fn``. They stay two tools because more than their words differ: their options
(seconds against milliseconds, a per-stream cap), what they report and how:

* ``bash`` (phi-core, REQ-047/094-097/137/139): ``command`` and optional ``timeout`` in seconds
  (default 120 s); output ``Exit code: N`` + stdout (+ ``STDOUT:``/``STDERR:`` sections when stderr
  is not empty), each stream cut to ``max_output_bytes`` (256 K characters, head and tail).
* ``shell`` (seed 004 §3.3): ``command``, optional ``timeout_ms`` (default 10 s, capped at
  ``max_timeout_ms``) and ``description``; output stdout+stderr then exit code and duration.

Commands read stdin from ``/dev/null`` and end with everything they started: what a command leaves
running when it returns is stopped (:mod:`phi.tools.process`). With ``run_in_background`` the command
is instead started and left running, tracked by the tool session, which ends it when it closes
(:mod:`phi.tools.background`); its output goes to a file whose path the result gives.

A non-zero exit status is a normal result (``details.success`` is False). A timeout is an error
whose text carries the partial output and the seed's timeout message; cancellation raises
``ToolCancelled`` as soon as the command was sent SIGTERM (its termination completes in the
background, see :mod:`phi.tools.process`).

Output keeps the head and the tail of each stream (build summaries and test totals are at the end),
and every place where something was left out carries one marker with the exact number of lines and
bytes it stands for, including what the environment's capture buffer dropped.

The deny list (:mod:`phi.tools.deny`) matches rules against the parsed words of every simple command
in the command line. It is a guardrail against accidents, not a sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from ..errors import ToolCancelled, ToolError
from ..log import get_logger
from ..loop.tool import ToolContext
from ..types import ToolResult
from ._common import check_cancel, finish, get_env, object_schema
from .background import BackgroundJob
from .deny import DEFAULT_DENY_PATTERNS, find_denied
from .full_output import Piece, StreamRecorder
from .tool_session import ToolSession, tool_session
from .truncation import HEAD_TAIL, Part, clip, truncate_tool_output

if TYPE_CHECKING:
    from .environment import ExecResult, ExecutionEnvironment

log = get_logger(__name__)

# The deny list is defined in .deny and offered here too, next to the tools that apply it.
__all__ = ["BashTool", "ShellTool", "CommandSettings", "run_guarded", "start_guarded", "cap_stream",
           "TIMEOUT_MESSAGE", "COMMAND_RULES", "BACKGROUND_PARAMETER", "DEFAULT_DENY_PATTERNS", "find_denied"]

#: What every command tool's description says about how commands run.
COMMAND_RULES = (
    "Commands get no input: stdin is /dev/null, so interactive prompts fail; pass flags such as -y "
    "instead. When the command returns, every process it started ends with it (also ones sent to the "
    "background with &, nohup or setsid); set run_in_background to start a server or watcher that "
    "keeps running, with its output written to a file."
)
BACKGROUND_PARAMETER: dict[str, Any] = {
    "type": "boolean",
    "description": "Start the command and return at once, leaving it running (output goes to a file "
                   "named in the result); it is stopped when the session ends.",
}

TIMEOUT_MESSAGE = (
    "[ERROR: Command timed out after {ms}ms. Partial output is shown above.\n"
    "You can retry with a longer timeout by setting the timeout_ms parameter.]"
)


def cap_stream(parts: Sequence[Part], max_chars: int) -> list[Part]:
    """One stream cut to ``max_chars`` characters, head and tail kept (REQ-096, with the tail)."""
    return clip(parts, max_chars, None, HEAD_TAIL)


def _rstrip_newlines(parts: list[Part]) -> list[Part]:
    if parts and isinstance(parts[-1], str):
        return parts[:-1] + [parts[-1].rstrip("\n")]
    return parts


class CommandSettings(Protocol):
    """What :func:`run_guarded` reads of a command tool (both tools' dataclass fields)."""

    env: ExecutionEnvironment | None
    deny_patterns: Sequence[str]
    confirm_fn: Callable[[str], bool] | None
    working_dir: str | None
    env_vars: dict[str, str] | None
    session: ToolSession | None


def _allowed(tool: CommandSettings, command: str, ctx: ToolContext) -> None:
    """The deny list and the confirmation, before anything is started."""
    check_cancel(ctx)
    if not command.strip():
        raise ToolError("command must not be empty")
    denied = find_denied(command, tool.deny_patterns)
    if denied is not None:
        raise ToolError(f"Command blocked: it matches the deny pattern {denied.strip()!r}. "
                        "This command is not allowed; use a safer alternative.")
    if tool.confirm_fn is not None and not tool.confirm_fn(command):
        raise ToolError("Command was not confirmed by the user.")
    check_cancel(ctx)


def start_guarded(tool: CommandSettings, command: str, ctx: ToolContext) -> ToolResult:
    """Start ``command`` in the background after the same checks (``run_in_background``)."""
    _allowed(tool, command, ctx)
    env = get_env(tool.env)
    start = getattr(env, "start_background", None)
    if start is None:
        raise ToolError("This environment cannot run background commands; run the command in the foreground.")
    session = tool_session(tool.session)
    path, output = session.new_output_file("background", ".log")
    try:
        with output:
            process = start(command, tool.working_dir, tool.env_vars, output.fileno())
    except OSError as exc:
        raise ToolError(f"Could not start the command: {exc.strerror or exc}") from None
    try:
        session.background.add(BackgroundJob(command, process, path))
    except RuntimeError:
        raise ToolError("The session is closing; the command was not started.") from None
    text = (f"Started in the background with pid {process.pid}. Its output (stdout and stderr) is written to "
            f"{path}; read that file to see it. It keeps running until it exits, `kill {process.pid}` stops it "
            "(with everything it started), and it is stopped when the session ends.")
    return ToolResult.from_text(text, {"background": True, "pid": process.pid, "output_path": path})


class Recorders:
    """The complete stdout and stderr of one command (:class:`~phi.tools.full_output.StreamRecorder`),
    kept beside the environment's bounded capture; :meth:`discard` when the result is built."""

    def __init__(self, session: ToolSession | None, tool_name: str) -> None:
        chosen = tool_session(session)
        self.stdout = StreamRecorder(chosen, f"{tool_name}-stdout")
        self.stderr = StreamRecorder(chosen, f"{tool_name}-stderr")

    def feed(self, stream: str, data: bytes) -> None:
        (self.stdout if stream == "stdout" else self.stderr).feed(data)

    def discard(self) -> None:
        self.stdout.discard()
        self.stderr.discard()


def run_guarded(tool: CommandSettings, command: str, timeout_ms: int, ctx: ToolContext,
                recorders: Recorders | None = None) -> ExecResult:
    """Deny check, confirmation, execution, cancellation: shared by ``bash`` and ``shell``.
    ``recorders`` get the complete output as it arrives."""
    _allowed(tool, command, ctx)
    env = get_env(tool.env)
    on_output = recorders.feed if recorders is not None else None
    try:
        result = env.exec_command(command, timeout_ms, tool.working_dir, tool.env_vars, cancel=ctx.cancel,
                                  on_output=on_output)
    except OSError as exc:
        raise ToolError(f"Could not run the command: {exc.strerror or exc}") from None
    if result.cancelled:
        raise ToolCancelled("Command cancelled; its processes are being terminated.")
    return result


@dataclass
class BashTool:
    """phi-core's ``bash`` tool."""

    env: ExecutionEnvironment | None = None
    deny_patterns: Sequence[str] = DEFAULT_DENY_PATTERNS
    confirm_fn: Callable[[str], bool] | None = None
    timeout_s: int = 120
    max_timeout_s: int = 600
    max_output_bytes: int = 256 * 1024  # per stream, counted in characters of the decoded text
    max_chars: int | None = None
    max_lines: int | None = None
    working_dir: str | None = None
    env_vars: dict[str, str] | None = None
    session: ToolSession | None = None
    name: str = "bash"
    label: str = "Bash"
    description: str = (
        "Run a shell command with bash -c in the working directory and return its exit code, stdout "
        "and stderr. Use for builds, tests, git and other command-line work. Commands that run longer "
        "than the timeout are killed. " + COMMAND_RULES
    )
    parameters: dict[str, Any] = field(default_factory=lambda: object_schema({
        "command": {"type": "string", "minLength": 1, "description": "The bash command to run."},
        "timeout": {"type": "integer", "minimum": 1, "description": "Timeout in seconds (default 120)."},
        "run_in_background": BACKGROUND_PARAMETER,
    }, ["command"]))

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if args.get("run_in_background"):
            return start_guarded(self, args["command"], ctx)
        seconds = min(int(args.get("timeout") or self.timeout_s), self.max_timeout_s)
        recorders = Recorders(self.session, self.name)
        try:
            return self._run(args["command"], seconds, ctx, recorders)
        finally:
            recorders.discard()

    def _run(self, command: str, seconds: int, ctx: ToolContext, recorders: Recorders) -> ToolResult:
        result = run_guarded(self, command, seconds * 1000, ctx, recorders)
        stdout = cap_stream(result.parts("stdout"), self.max_output_bytes)
        stderr = cap_stream(result.parts("stderr"), self.max_output_bytes)
        text: list[Part]
        full: list[Piece]
        if result.stderr:
            head = f"Exit code: {result.exit_code}\nSTDOUT:\n"
            text = [head, *_rstrip_newlines(stdout), "\nSTDERR:\n", *stderr]
            full = [head, recorders.stdout, "\nSTDERR:\n", recorders.stderr]
        else:
            head = f"Exit code: {result.exit_code}\n"
            text = [head, *stdout]
            full = [head, recorders.stdout]
        if result.timed_out:
            partial = truncate_tool_output(text, self.name)
            raise ToolError(f"Command timed out after {seconds}s. Partial output:\n{partial}\n"
                            + TIMEOUT_MESSAGE.format(ms=seconds * 1000).replace("timeout_ms", "timeout"))
        details = {"exit_code": result.exit_code, "success": result.exit_code == 0,
                   "duration_ms": result.duration_ms}
        return finish(text, self.name, details, self.max_chars, self.max_lines, session=self.session, full=full)


@dataclass
class ShellTool:
    """The coding layer's ``shell`` tool (seed 004 §3.3)."""

    env: ExecutionEnvironment | None = None
    deny_patterns: Sequence[str] = DEFAULT_DENY_PATTERNS
    confirm_fn: Callable[[str], bool] | None = None
    default_timeout_ms: int = 10_000
    max_timeout_ms: int = 600_000
    max_chars: int | None = None
    max_lines: int | None = None
    working_dir: str | None = None
    env_vars: dict[str, str] | None = None
    session: ToolSession | None = None
    name: str = "shell"
    label: str = "Shell"
    description: str = "Execute a shell command. Returns stdout, stderr, and exit code. " + COMMAND_RULES
    parameters: dict[str, Any] = field(default_factory=lambda: object_schema({
        "command": {"type": "string", "minLength": 1, "description": "The command to run."},
        "timeout_ms": {"type": "integer", "minimum": 1, "description": "Override the default timeout (milliseconds)."},
        "description": {"type": "string", "description": "Human-readable description of what this does."},
        "run_in_background": BACKGROUND_PARAMETER,
    }, ["command"]))

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        timeout_ms = min(int(args.get("timeout_ms") or self.default_timeout_ms), self.max_timeout_ms)
        if args.get("description"):
            ctx.progress(str(args["description"]))
        if args.get("run_in_background"):
            return start_guarded(self, args["command"], ctx)
        recorders = Recorders(self.session, self.name)
        try:
            return self._run(args["command"], timeout_ms, ctx, recorders)
        finally:
            recorders.discard()

    def _run(self, command: str, timeout_ms: int, ctx: ToolContext, recorders: Recorders) -> ToolResult:
        result = run_guarded(self, command, timeout_ms, ctx, recorders)
        output: list[Part] = result.parts("stdout")
        full: list[Piece] = [recorders.stdout]
        if result.stdout and result.stderr and not result.stdout.endswith("\n"):
            output.append("\n")
            full.append("\n")
        output += result.parts("stderr")
        full.append(recorders.stderr)
        if result.timed_out:
            partial = truncate_tool_output(output, self.name) if result.output else "(no output)"
            raise ToolError(f"{partial}\n{TIMEOUT_MESSAGE.format(ms=timeout_ms)}")
        sep = "" if not result.output or result.output.endswith("\n") else "\n"
        footer = f"{sep}[exit code: {result.exit_code}, duration: {result.duration_ms}ms]"
        details = {"exit_code": result.exit_code, "success": result.exit_code == 0,
                   "duration_ms": result.duration_ms, "timed_out": False}
        return finish([*output, footer], self.name, details, self.max_chars, self.max_lines, session=self.session,
                      full=[*full, footer])
