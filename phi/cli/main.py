"""The ``phi`` command (SPEC §15).

* ``phi`` — an interactive coding session in the current directory (:mod:`phi.cli.repl`);
* ``phi -p TASK [--json]`` — one run for scripts and CI (:mod:`phi.cli.batch`);
* ``phi --json`` — a session driven by JSON commands on stdin (:mod:`phi.cli.json_mode`);
* ``phi demo``, ``phi conformance ...``, ``phi export ...``, ``phi version``: :data:`SUBCOMMANDS`.

Options and the choice of model: :mod:`phi.cli.options`.
"""

from __future__ import annotations

import sys
from typing import Callable


def _demo(args: list[str]) -> int:
    from .demo import main as demo

    return demo(args)


def _conformance(args: list[str]) -> int:
    from ..conformance.__main__ import main as conformance

    return conformance(args)


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
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        return SUBCOMMANDS[args[0]](args[1:])
    return run_assistant(args)


def run_assistant(args: list[str]) -> int:
    """``phi [options]``: interactive, or ``-p`` (see the module docstring)."""
    from ..errors import PhiError
    from .options import make_profile, parse, sessions_dir
    from .sessions import CliSessions

    options = parse(args)
    sessions: CliSessions | None = None
    try:
        profile = make_profile(options)
        if options.otel:
            from .tracing import TracedSessions

            sessions = TracedSessions(sessions_dir(options))
        else:
            sessions = CliSessions(sessions_dir(options))
        if options.prompt is not None:
            from .batch import run_print

            return run_print(options, profile, sessions)
        if options.json:
            from .json_mode import run_json_session

            return run_json_session(options, profile, sessions)
        from .repl import Repl

        repl = Repl(options, profile, sessions)
        if options.resume:
            repl.renderer.line(f"resumed session {options.resume}: {repl.resume(options.resume)} messages")
        return repl.run()
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

