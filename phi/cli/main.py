"""The ``phi`` command (SPEC §15).

* ``phi`` — an interactive coding session in the current directory (:mod:`phi.cli.repl`);
* ``phi -p TASK [--json]`` — one run for scripts and CI (:mod:`phi.cli.batch`);
* ``phi --json`` — a session driven by JSON commands on stdin (:mod:`phi.cli.json_mode`);
* ``phi demo``, ``phi conformance ...``, ``phi export ...``, ``phi trust``, ``phi version``: :data:`SUBCOMMANDS`.

Options and the choice of model: :mod:`phi.cli.options`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Callable, TextIO

if TYPE_CHECKING:
    from .options import CliOptions
    from .sessions import CliSessions


def _demo(args: list[str]) -> int:
    from .demo import main as demo

    return demo(args)


def _conformance(args: list[str]) -> int:
    from ..conformance.__main__ import main as conformance

    return conformance(args)


def _trust(args: list[str]) -> int:
    from .trust import trust_command

    return trust_command(args)


def _version(args: list[str]) -> int:
    from .. import __version__

    sys.stdout.write(f"phi {__version__}\n")
    return 0


def _export(args: list[str]) -> int:
    try:
        from ..export.command import main as export
    except ImportError:
        sys.stderr.write("phi: phi export needs phi.export.command, which this installation lacks\n")
        return 2
    return export(args)


def _help(args: list[str]) -> int:
    from .options import parser

    parser().print_help(sys.stdout)
    sys.stdout.write("\nother commands:\n  phi demo [--provider scripted|anthropic|openai] [QUESTION]\n"
                     "  phi conformance run [--driver CMD] [--only ID|SECTION|REQUIREMENT] [--report FILE]\n"
                     "  phi export SESSION_ID --html FILE\n  phi version\n")
    return 0


#: ``phi NAME ...`` runs SUBCOMMANDS[NAME](the remaining arguments). Add new commands here.
SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "demo": _demo,
    "conformance": _conformance,
    "export": _export,  # phi export SESSION_ID --html FILE (phi.export.command)
    "version": _version,
    "help": _help,
    "trust": _trust,  # phi trust [DIR]: trust the project's .mcp.json and .phi/settings.json (phi.cli.trust)
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        return SUBCOMMANDS[args[0]](args[1:])
    return run_assistant(args)


def workspace_last(cwd: str) -> None:
    """Move the entries of ``sys.path`` inside the workspace (``python -m phi.cli`` puts the working
    directory first; a console script in the project's venv its ``bin``) after all others: phi
    still imports modules as it goes, and a sandboxed command must not be able to shadow one (a
    ``glob.py`` the host would import next, outside the sandbox)."""
    from ..tools.paths import is_within

    def inside(entry: str) -> bool:
        return is_within(entry or os.curdir, cwd)

    ordered = [entry for entry in sys.path if not inside(entry)] + [entry for entry in sys.path if inside(entry)]
    sys.path[:] = ordered


def run_assistant(args: list[str]) -> int:
    """``phi [options]``: interactive, or ``-p`` (see the module docstring)."""
    from ..errors import PhiError
    from .options import parse

    options = parse(args)
    try:
        os.getcwd()
    except FileNotFoundError:  # every relative path (and --cwd's default) would fail deep inside
        try:
            if not os.path.isabs(options.cwd):
                raise FileNotFoundError(options.cwd)
            os.chdir(options.cwd)  # a --cwd given whole still works: the session's directory is there
        except OSError:
            sys.stderr.write("phi: the current directory no longer exists (it was deleted or moved): change to "
                             "another one, or give --cwd an absolute path\n")
            return 2
    workspace_last(options.cwd)
    sessions: CliSessions | None = None
    try:
        if options.prompt is not None or options.json:
            from .batch import sigterm_as_interrupt

            with sigterm_as_interrupt():  # from the start: MCP servers starting must not outlive a SIGTERM
                return _unattended(options)
        return _interactive(options)
    except PhiError as error:
        sys.stderr.write(f"phi: {error}\n")
        return 2
    except KeyboardInterrupt as stop:  # before the session was up, while it was closed, or in --json
        from .batch import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated

        terminated = isinstance(stop, Terminated)
        sys.stderr.write(f"phi: {'terminated' if terminated else 'interrupted'}\n")
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        finish = getattr(sessions, "finish", None)  # --otel: send the spans still queued
        if finish is not None:
            finish()


def _unattended(options: CliOptions) -> int:
    """``-p`` and ``--json``: everything loaded at once."""
    from ..errors import ConfigError
    from .options import PICK, make_profile

    profile = make_profile(options)
    sessions = _sessions(options)
    if options.resume == PICK:
        raise ConfigError("--resume needs a session id with -p or --json (phi --resume ID; -c: this directory's "
                          "latest)")
    if options.continue_session:
        from .recent import latest_here

        options.resume = latest_here(sessions, options.cwd)
    if options.prompt is not None:
        from .batch import run_print

        options.prompt = with_piped_input(options.prompt)
        return run_print(options, profile, sessions)
    from .json_mode import run_json_session

    return run_json_session(options, profile, sessions)


def with_piped_input(task: str, stdin: TextIO | None = None) -> str:
    """``cat log | phi -p "explain"``: what was piped in goes with the task (CLI-10). Only a pipe or a
    file is read (not a terminal, not /dev/null); ``-p -`` has read stdin already."""
    import os
    import stat

    # a new name: sys.stdin is typed "TextIO | Any", so `stdin = stdin or sys.stdin` would stay "TextIO | None"
    source: TextIO = stdin or sys.stdin
    try:
        mode = os.fstat(source.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return task
    if source.isatty() or not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return task
    piped = source.read()
    if not piped.strip():
        return task
    return f"{task}\n\n<stdin>\n{piped.rstrip()}\n</stdin>"


def _interactive(options: CliOptions) -> int:
    """The prompt comes up before the coding layer is loaded, the session is resumed and the MCP
    servers are connected (CLI-12): only what can stop phi with a clear message is checked first."""
    import os

    from ..errors import ConfigError
    from .options import PICK, describe_choice, make_profile, sessions_dir
    from .repl import Repl

    describe_choice(options)  # no model, no key: exit 2 now, not at the first input
    connector = None
    if options.mcp or os.path.isfile(os.path.join(options.cwd, ".mcp.json")):
        from .extras import command_environment
        from .mcp_servers import McpConnector, load_specs

        if load_specs(options):  # a malformed MCP config: the same
            connector = McpConnector(options, command_environment())
    resume = _which_session(options) if options.continue_session or options.resume == PICK else options.resume
    if options.resume == PICK and resume is None:
        sys.stdout.write("cancelled\n")
        return 0
    if resume is not None and options.resume != PICK:
        from .recent import stored_here

        if not stored_here(sessions_dir(options), resume):
            raise ConfigError(f"no readable session {resume} in {sessions_dir(options)} (phi --resume lists them)")

    def make_sessions() -> CliSessions:
        return _sessions(options)

    repl = Repl(options, lambda: make_profile(options), make_sessions, mcp=connector, resume=resume)
    return repl.run()


def _which_session(options: CliOptions) -> str | None:
    from .options import sessions_dir
    from .recent import latest_stored_here, pick

    if options.continue_session:
        return latest_stored_here(sessions_dir(options), options.cwd)  # the store is loaded behind the prompt
    from .sessions import CliSessions

    return pick(CliSessions(sessions_dir(options)), options.cwd, sys.stdout, sys.stdin)


def _sessions(options: CliOptions) -> CliSessions:
    """Where the runs are recorded; with ``--otel`` also traced (SPEC §17)."""
    from .options import sessions_dir

    if options.otel:
        from .tracing import TracedSessions

        return TracedSessions(sessions_dir(options))
    from .sessions import CliSessions

    return CliSessions(sessions_dir(options))
