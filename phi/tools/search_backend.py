"""Content search through ripgrep or grep (SPEC §9.1 "Search operations").

Builds the command line for ``rg`` (preferred) or GNU/BSD ``grep`` (fallback when rg is missing, or
when forced), runs it through an environment's ``exec_command`` and normalises the output to
``path:line:text`` lines (``path`` for files-with-matches, ``path:count`` for counts). Exit status 1
means "no matches"; 2 or more is an error (most often an invalid regular expression).
"""

from __future__ import annotations

import logging
import shlex
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger("phi.tools.search_backend")

OUTPUT_MODES = ("content", "files_with_matches", "count")
BACKENDS = ("auto", "rg", "grep")
_EXCLUDED_DIRS = (".git", "node_modules", "__pycache__", ".hg", ".svn")


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
    argv = ["grep", "-r", "-I", "-H", "-P" if perl_regex else "-E"]
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


def _strip_dot_slash(line: str) -> str:
    return line[2:] if line.startswith("./") else line


def normalise_lines(stdout: str, options: GrepOptions, backend: str) -> list[str]:
    lines = [_strip_dot_slash(line) for line in stdout.splitlines() if line]
    if backend == "grep":
        if options.output_mode == "count":  # grep -c lists every file, rg only files with matches
            lines = [line for line in lines if not line.endswith(":0")]
        # grep -r walks in directory order; sort by path (stably, keeping line order) like rg --sort path
        key: Callable[[str], Any] = (lambda line: line.split(":", 1)[0])
        lines.sort(key=key)
    return lines


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
    """Run the search with ``backend`` ('rg' or 'grep') in ``directory``; return result lines."""
    if backend == "rg":
        argv = rg_command(pattern, target, options)
    else:
        argv = grep_command(pattern, target, options, perl_regex)
    command = shlex.join(argv)
    log.debug("search: %s (in %s)", command, directory)
    result = exec_command(command, options.timeout_ms, directory, None, cancel=cancel)
    if result.timed_out:
        raise SearchError(f"Search timed out after {options.timeout_ms}ms; narrow the path or pattern.")
    if result.exit_code >= 2 or (result.exit_code == 1 and result.stderr.strip()):
        message = result.stderr.strip() or f"{backend} exited with status {result.exit_code}"
        raise SearchError(f"Search failed ({backend}): {message}")
    return normalise_lines(result.stdout, options, backend)
