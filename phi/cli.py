"""The ``phi`` command: ``phi demo`` (a streamed agent run), ``phi conformance ...``, ``phi version``."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args.pop(0) if args else "help"
    if command == "demo":
        from .demo import main as demo

        return demo(args)
    if command == "conformance":
        from .conformance.__main__ import main as conformance

        return conformance(args)
    if command == "version":
        from . import __version__

        sys.stdout.write(f"phi {__version__}\n")
        return 0
    sys.stdout.write("usage: phi demo [--provider scripted|anthropic|openai] [QUESTION]\n"
                     "       phi conformance run [--driver CMD] [--filter GLOB]\n"
                     "       phi version\n")
    return 0 if command in ("help", "-h", "--help") else 2


if __name__ == "__main__":
    sys.exit(main())
