"""Content search through ripgrep or grep (SPEC §9.1 "Search operations").

Builds the command line for ``rg`` (preferred) or GNU/BSD ``grep`` (fallback when rg is missing, or
when forced), runs it through an environment's ``exec_command`` and normalises the output to
``path:line:text`` lines (``path`` for files-with-matches, ``path:count`` for counts). Exit status 1
means "no matches"; 2 or more is an error (most often an invalid regular expression).

Output is read line by line as it arrives (``on_output``), never from the bounded capture, so a
search with millions of matches cannot return half lines or a capture marker as matches: once
``max_results`` complete lines are in, the search process is stopped. Both backends produce lines
sorted by path (``rg --sort path``; ``grep`` piped through a stable ``sort`` on the path field),
and a matched line longer than :data:`MAX_LINE_CHARS` is cut with a note.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Callable

from ..concurrency.cancel import CancellationToken
from ..log import get_logger

log = get_logger(__name__)

OUTPUT_MODES = ("content", "files_with_matches", "count")
BACKENDS = ("auto", "rg", "grep")
_EXCLUDED_DIRS = (".git", "node_modules", "__pycache__", ".hg", ".svn")
MAX_LINE_CHARS = 2000


@dataclass
class GrepOptions:
    """Options of :meth:`ExecutionEnvironment.grep`."""

    glob_filter: str | None = None
    case_insensitive: bool = False
    max_results: int = 100
    output_mode: str = "content"
    backend: str = "auto"
    timeout_ms: int = 30_000


class SearchError(ValueError):
    """The search tool failed (bad regex, unreadable path); the message comes from rg/grep."""


def rg_command(pattern: str, target: str, options: GrepOptions) -> list[str]:
    argv = ["rg", "--no-heading", "--color", "never", "--no-messages", "--sort", "path"]
    if options.output_mode == "files_with_matches":
        argv.append("--files-with-matches")
    elif options.output_mode == "count":
        argv.append("--count-matches")
    else:
        argv += ["--line-number", "--with-filename"]
    if options.case_insensitive:
        argv.append("--ignore-case")
    if options.glob_filter:
        argv += ["--glob", options.glob_filter]
    for name in _EXCLUDED_DIRS:
        argv += ["--glob", f"!{name}"]
    return argv + ["-e", pattern, "--", target]


def grep_command(pattern: str, target: str, options: GrepOptions, perl_regex: bool) -> list[str]:
    argv = ["grep", "-r", "-I", "-H", "-D", "skip", "-P" if perl_regex else "-E"]
    if options.output_mode == "files_with_matches":
        argv.append("-l")
    elif options.output_mode == "count":
        argv.append("-c")
    else:
        argv.append("-n")
    if options.case_insensitive:
        argv.append("-i")
    if options.glob_filter:
        argv.append(f"--include={options.glob_filter}")
    argv += [f"--exclude-dir={d}" for d in _EXCLUDED_DIRS]
    return argv + ["-e", pattern, "--", target]


class LineCollector:
    """Complete output lines of one stream, at most ``limit`` of them; ``on_full`` fires once."""

    def __init__(self, limit: int, keep: Callable[[str], bool], on_full: Callable[[], None]) -> None:
        self.limit = max(limit, 0)
        self.keep = keep
        self.on_full = on_full
        self.lines: list[str] = []
        self.partial = bytearray()
        self.partial_len = 0

    @property
    def full(self) -> bool:
        return len(self.lines) >= self.limit

    def feed(self, stream: str, data: bytes) -> None:
        if stream != "stdout" or self.full:
            return
        pieces = data.split(b"\n")
        for piece in pieces[:-1]:
            self._add(piece)
            self._end_line()
            if self.full:
                self.on_full()
                return
        self._add(pieces[-1])

    def _add(self, piece: bytes) -> None:
        room = MAX_LINE_CHARS * 4 - len(self.partial)
        if room > 0:
            self.partial += piece[:room]
        self.partial_len += len(piece)

    def _end_line(self) -> None:
        raw, size = bytes(self.partial), self.partial_len
        self.partial = bytearray()
        self.partial_len = 0
        if raw.startswith(b"./"):
            raw, size = raw[2:], size - 2
        text = raw.decode("utf-8", errors="replace")
        if len(text) > MAX_LINE_CHARS or size > len(raw):
            rest = size - len(text[:MAX_LINE_CHARS].encode("utf-8", "replace"))
            text = text[:MAX_LINE_CHARS] + f" [... line cut: {rest} more bytes]"
        if text and self.keep(text):
            self.lines.append(text)

    def finish(self) -> list[str]:
        if self.partial_len and not self.full:
            self._end_line()
        return self.lines


def run_search(
    exec_command: Callable[..., Any],
    pattern: str,
    directory: str,
    target: str,
    options: GrepOptions,
    backend: str,
    perl_regex: bool = True,
    cancel: Any = None,
) -> list[str]:
    """Run the search with ``backend`` ('rg' or 'grep') in ``directory``; at most
    ``options.max_results`` result lines (all of them when it is 0)."""
    if backend == "rg":
        command = shlex.join(rg_command(pattern, target, options))
    else:
        # grep -r walks in directory order; sort stably on the path field like rg --sort path
        command = ("set -o pipefail; " + shlex.join(grep_command(pattern, target, options, perl_regex))
                   + " | LC_ALL=C sort -s -t: -k1,1")
    log.debug("search: %s (in %s)", command, directory)
    stop = cancel.child_token() if cancel is not None else CancellationToken()
    drop_zero_counts = backend == "grep" and options.output_mode == "count"  # grep -c lists every file
    collector = LineCollector(options.max_results if options.max_results > 0 else 1 << 62,
                              (lambda line: not line.endswith(":0")) if drop_zero_counts else (lambda line: True),
                              stop.cancel)
    try:
        result = exec_command(command, options.timeout_ms, directory, None, cancel=stop, on_output=collector.feed)
    finally:
        stop.cancel()  # also unregisters it from ``cancel``
    if collector.full:
        return collector.lines
    if result.cancelled:
        return []
    if result.timed_out:
        raise SearchError(f"Search timed out after {options.timeout_ms}ms; narrow the path or pattern.")
    if result.exit_code >= 2 or (result.exit_code == 1 and result.stderr.strip()):
        message = result.stderr.strip() or f"{backend} exited with status {result.exit_code}"
        raise SearchError(f"Search failed ({backend}): {message}")
    return collector.finish()
