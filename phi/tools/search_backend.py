"""Content search through ripgrep or grep (SPEC §9.1 "Search operations").

Builds the command line for ``rg`` (preferred) or GNU/BSD ``grep`` (fallback when rg is missing, or
when forced), runs it through an environment's ``exec_command`` and normalises the output to
``path:line:text`` lines (``path`` for files-with-matches, ``path:count`` for counts). Exit status 1
means "no matches"; 2 or more is an error (most often an invalid regular expression).

Output is read line by line as it arrives (``on_output``), never from the bounded capture, so a
search with millions of matches cannot return half lines or a capture marker as matches: once
``max_results`` complete lines are in, the search process is stopped. Both backends produce lines
sorted by path (``rg --sort path``; for ``grep`` the collector keeps the ``max_results`` records
that sort first), and a matched line longer than :data:`MAX_LINE_CHARS` is cut with a note. Both
print each path followed by a NUL byte (``--null``, ``-Z``), so a file name holding a newline or a
colon is read correctly; it is shown quoted (:func:`~phi.tools.listing.quote_path`).
"""

from __future__ import annotations

import heapq
import os
import shlex
from dataclasses import dataclass
from typing import Any, Callable

from ..concurrency.cancel import CancellationToken
from ..log import get_logger
from .listing import quote_path

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
    argv = ["rg", "--no-heading", "--null", "--with-filename", "--color", "never", "--no-messages", "--sort", "path"]
    if options.output_mode == "files_with_matches":
        argv.append("--files-with-matches")
    elif options.output_mode == "count":
        argv.append("--count-matches")
    else:
        argv.append("--line-number")
    if options.case_insensitive:
        argv.append("--ignore-case")
    if options.glob_filter:
        argv += ["--glob", options.glob_filter]
    for name in _EXCLUDED_DIRS:
        argv += ["--glob", f"!{name}"]
    return argv + ["-e", pattern, "--", target]


def grep_command(pattern: str, target: str, options: GrepOptions, perl_regex: bool) -> list[str]:
    argv = ["grep", "-r", "-I", "-H", "-Z", "-D", "skip", "-P" if perl_regex else "-E"]
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


class RecordCollector:
    """Result records of one search, parsed from NUL-separated output (``rg --null``, ``grep -Z``):
    ``path NUL rest NEWLINE``, or ``path NUL`` alone for files-with-matches. Paths are shown through
    :func:`~phi.tools.listing.quote_path`, so a name with a newline stays on one line.

    With ``sort`` (grep, whose walk is in directory order) the ``limit`` records that sort first by
    path are kept, in a bounded heap; otherwise (rg, already sorted) the first ``limit`` are kept and
    ``on_full`` fires once they are in, so the search can be stopped.
    """

    def __init__(self, limit: int, files_only: bool, keep: Callable[[bytes], bool], on_full: Callable[[], None],
                 sort: bool = False) -> None:
        self.limit = max(limit, 0)
        self.files_only = files_only
        self.keep = keep
        self.on_full = on_full
        self.sort = sort
        self.lines: list[str] = []
        self._heap: list[tuple[_Reversed, str]] = []
        self._seq = 0
        self._path: bytes | None = None  # the record's path, once its NUL was seen
        self._partial = bytearray()
        self._partial_len = 0

    @property
    def full(self) -> bool:
        return not self.sort and len(self.lines) >= self.limit

    def feed(self, stream: str, data: bytes) -> None:
        if stream != "stdout" or self.full:
            return
        pos = 0
        while pos < len(data):
            stop = b"\0" if self._path is None else b"\n"
            found = data.find(stop, pos)
            if found < 0:
                self._add(data[pos:])
                return
            self._add(data[pos:found])
            pos = found + 1
            if self._path is None:
                self._path, self._partial, self._partial_len = bytes(self._partial), bytearray(), 0
                if not self.files_only:
                    continue
            self._end_record()
            if self.full:
                self.on_full()
                return

    def _add(self, piece: bytes) -> None:
        room = MAX_LINE_CHARS * 4 - len(self._partial)
        if room > 0:
            self._partial += piece[:room]
        self._partial_len += len(piece)

    def _end_record(self) -> None:
        path, rest, size = self._path or b"", bytes(self._partial), self._partial_len
        self._path, self._partial, self._partial_len = None, bytearray(), 0
        if path.startswith(b"./"):
            path = path[2:]
        if not path or not self.keep(rest):
            return
        line = quote_path(os.fsdecode(path))
        if not self.files_only:
            text = rest.decode("utf-8", errors="replace")
            if len(text) > MAX_LINE_CHARS or size > len(rest):
                cut = size - len(text[:MAX_LINE_CHARS].encode("utf-8", "replace"))
                text = text[:MAX_LINE_CHARS] + f" [... line cut: {cut} more bytes]"
            line += ":" + text
        if not self.sort:
            self.lines.append(line)
            return
        self._seq += 1
        entry = (_Reversed(path, self._seq), line)
        if len(self._heap) < self.limit:
            heapq.heappush(self._heap, entry)
        elif self.limit and entry[0] > self._heap[0][0]:  # sorts before the last one kept
            heapq.heapreplace(self._heap, entry)

    def finish(self) -> list[str]:
        if (self._partial_len or self._path is not None) and not self.full:
            if self._path is None:  # output ended inside a path: a files-with-matches record
                self._path, self._partial, self._partial_len = bytes(self._partial), bytearray(), 0
            self._end_record()
        if self.sort:
            return [line for _, line in sorted(self._heap, reverse=True)]
        return self.lines


class _Reversed:
    """A heap key ordered backwards, so the min-heap keeps the records that sort *last* on top."""

    __slots__ = ("path", "seq")

    def __init__(self, path: bytes, seq: int) -> None:
        self.path, self.seq = path, seq

    def __lt__(self, other: _Reversed) -> bool:
        return (self.path, self.seq) > (other.path, other.seq)

    def __gt__(self, other: _Reversed) -> bool:
        return (self.path, self.seq) < (other.path, other.seq)


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
    else:  # grep -r walks in directory order: the collector sorts by path like rg --sort path
        command = shlex.join(grep_command(pattern, target, options, perl_regex))
    log.debug("search: %s (in %s)", command, directory)
    stop = cancel.child_token() if cancel is not None else CancellationToken()
    drop_zero_counts = backend == "grep" and options.output_mode == "count"  # grep -c lists every file
    collector = RecordCollector(options.max_results if options.max_results > 0 else 1 << 62,
                                options.output_mode == "files_with_matches",
                                (lambda rest: rest != b"0") if drop_zero_counts else (lambda rest: True),
                                stop.cancel, sort=backend == "grep")
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
