"""``phi export SESSION_ID --html FILE``: a recorded session as one HTML page (SPEC §16 EXPORT-5).

Reads the session (and its sub-agent sessions) from a session store — the ``phi`` command's
JSON directory by default, ``$PHI_HOME/sessions`` with ``PHI_HOME`` defaulting to ``~/.phi``, or
the directory or SQLite database given by ``--store`` — and writes the page of
:mod:`phi.export.html`. Exit status 0 when the page was written; 1 with one clear line on stderr
for an unknown session id, an unreadable or corrupt store, or a file that cannot be written; 2 for
wrong arguments (argparse's convention). A link to a sub-agent's (or the parent's) session or run
that the store lacks is no failure: each is one ``phi export: warning:`` line on stderr, and the
page names it and shows the rest.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Union

from ..session.store import default_sessions_dir

if TYPE_CHECKING:
    from ..session import JsonDirStore, SqliteStore

_SQLITE_MAGIC = b"SQLite format 3\x00"


def open_store(location: str | os.PathLike[str]) -> Union[JsonDirStore, SqliteStore]:
    """A :class:`~phi.session.SqliteStore` when ``location`` is an SQLite database file, else a
    :class:`~phi.session.JsonDirStore` on the directory (which must exist)."""
    from ..session import JsonDirStore, SessionError, SqliteStore

    path = Path(location).expanduser()
    if path.is_file():
        try:
            with open(path, "rb") as source:
                magic = source.read(len(_SQLITE_MAGIC))
        except OSError as error:
            raise SessionError(f"cannot read session store {path}: {error.strerror or error}", str(path)) from None
        if magic != _SQLITE_MAGIC:
            raise SessionError(f"{path} is neither a session directory nor an SQLite session database", str(path))
        return SqliteStore(str(path))
    if not path.is_dir():
        raise SessionError(f"session store {path} does not exist", str(path))
    return JsonDirStore(path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="phi export", description="Write a recorded session as one "
                                     "self-contained HTML page: conversation, thinking, tool calls, diffs, "
                                     "usage per turn and the loop tree (sub-agents, parallel branches).")
    parser.add_argument("session_id", metavar="SESSION_ID", help="the session to export (see /sessions)")
    parser.add_argument("--html", metavar="FILE", required=True, help="the HTML file to write")
    parser.add_argument("--store", "--sessions-dir", metavar="DIR", dest="store", default=None,
                        help="session directory or SQLite database (default: $PHI_HOME/sessions, "
                             "PHI_HOME defaulting to ~/.phi)")
    return parser


def main(argv: list[str]) -> int:
    """Run ``phi export`` with ``argv`` (the arguments after ``export``); returns the exit status."""
    from ..session import SessionError, SqliteStore
    from .html import export_session_html

    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # --help (0) or a usage error (2): argparse has already written why
        return int(stop.code or 0)
    location = args.store if args.store is not None else default_sessions_dir()
    store: JsonDirStore | SqliteStore | None = None
    try:
        store = open_store(location)
        tree = export_session_html(store, args.session_id, args.html)
    except SessionError as error:
        sys.stderr.write(f"phi export: {error}\n")
        return 1
    except OSError as error:
        sys.stderr.write(f"phi export: cannot write {args.html}: {error.strerror or error}\n")
        return 1
    finally:
        if isinstance(store, SqliteStore):  # a directory store holds nothing open
            store.close()
    extra = len(tree.sessions) - 1
    note = f" with {extra} sub-agent session(s)" if extra else ""
    if tree.dangling:
        note += f"; {len(tree.dangling)} link(s) lead to sessions or runs the store lacks (named on the page)"
    for link in tree.dangling:  # a crash between two saves leaves these: the page shows everything else
        sys.stderr.write(f"phi export: warning: {link}\n")
    sys.stdout.write(f"exported session {args.session_id}{note} to {args.html}\n")
    return 0
