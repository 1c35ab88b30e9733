"""Which saved session to continue: ``phi -c`` and ``phi --resume`` without an id (SPEC §15 CLI-4).

Stored sessions do not say where they were started, so the ``phi`` command keeps a small index of
its own beside them — ``.phi-cli-directories.json`` in the sessions directory (a hidden file, which
the store does not list): working directory → session ids, most recent last. ``-c`` takes the most
recent session of this directory that is still in the store; ``--resume`` without an id lists the
most recent sessions (this directory's first) and asks for a number. Both go through
:class:`~phi.cli.sessions.CliSessions`' public methods only.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..errors import ConfigError
from ..json_values import is_array, is_object

if TYPE_CHECKING:
    from .sessions import CliSessions

INDEX_NAME = ".phi-cli-directories.json"
KEEP_PER_DIRECTORY = 50
PICK_ROWS = 20
FIRST_LINE_LIMIT = 1 << 20  # bytes of a stored file's first line checked before the prompt


def _index_path(sessions: CliSessions) -> Path:
    return Path(sessions.directory) / INDEX_NAME


def _load(sessions: CliSessions) -> dict[str, list[str]]:
    return _read_index(_index_path(sessions))


def _read_index(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not is_object(data):
        return {}
    return {k: [i for i in v if isinstance(i, str)] for k, v in data.items() if is_array(v)}


def remember(sessions: CliSessions, cwd: str, session_id: str) -> None:
    """Note that ``session_id`` was used in ``cwd`` (atomically; a failure is only logged)."""
    from ..log import get_logger

    index = _load(sessions)
    where = os.path.realpath(cwd)
    ids = [i for i in index.get(where, []) if i != session_id] + [session_id]
    index[where] = ids[-KEEP_PER_DIRECTORY:]
    path = _index_path(sessions)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{INDEX_NAME}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(index), encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        get_logger(__name__).warning("could not note the session's directory in %s: %s", path, error)


def latest_here(sessions: CliSessions, cwd: str) -> str:
    """The most recent stored session started in ``cwd``; ConfigError when there is none."""
    known = set(sessions.store.list_ids())
    for session_id in reversed(_load(sessions).get(os.path.realpath(cwd), [])):
        if session_id in known:
            return session_id
    raise ConfigError(f"no saved session was started in {os.path.abspath(cwd)}; start one with phi, "
                      "or pick any with phi --resume")


def stored_here(directory: str | Path, session_id: str) -> bool:
    """Whether ``session_id`` is stored in ``directory``, without loading the store (phi's start-up
    must not wait for it): the file names :class:`~phi.session.JsonDirStore` writes, ``ID.jsonl``
    (or a legacy ``ID.json``). An id that is no file name is not stored."""
    if not session_id or session_id.startswith(".") or "/" in session_id or "\0" in session_id:
        return False
    base = os.path.join(directory, session_id)
    return _looks_stored(base + ".jsonl") or (os.path.isfile(base + ".json") and os.path.getsize(base + ".json") > 0)


def _looks_stored(path: str) -> bool:
    """A regular file whose first line is a JSON object: an empty or garbled file (a crash, a disk
    full) stops ``phi`` before the prompt, not after the first input; the store reads the rest."""
    import stat

    try:  # without blocking: a FIFO put in its place must not hold phi before its prompt
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        with os.fdopen(fd, "rb", closefd=False) as file:
            first = file.readline(FIRST_LINE_LIMIT)
    except OSError:
        return False
    finally:
        os.close(fd)
    try:
        return is_object(json.loads(first))
    except ValueError:
        return len(first) >= FIRST_LINE_LIMIT  # a first line too long to check here: the store decides


def latest_stored_here(directory: str | Path, cwd: str) -> str:
    """:func:`latest_here` without loading the store (see :func:`stored_here`)."""
    for session_id in reversed(_read_index(Path(directory) / INDEX_NAME).get(os.path.realpath(cwd), [])):
        if stored_here(directory, session_id):
            return session_id
    raise ConfigError(f"no saved session was started in {os.path.abspath(cwd)}; start one with phi, "
                      "or pick any with phi --resume")


def pick(sessions: CliSessions, cwd: str, out: TextIO, read: TextIO) -> str | None:
    """Ask which session to resume; None when the person cancels. ConfigError without a terminal."""
    if not (read.isatty() and out.isatty()):
        raise ConfigError("--resume without an id asks which session to continue, which needs a terminal; "
                          "name one: phi --resume ID (the ids: /sessions)")
    here = set(_load(sessions).get(os.path.realpath(cwd), []))
    rows = sessions.summaries(limit=PICK_ROWS)
    if not rows:
        raise ConfigError(f"no saved sessions in {sessions.directory}")
    rows.sort(key=lambda row: (row.session_id not in here, -row.last_active_at))
    out.write("saved sessions (* started here):\n")
    for number, row in enumerate(rows, 1):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.last_active_at))
        mark = "*" if row.session_id in here else " "
        out.write(f" {number:>2}{mark} {when}  {row.loops:>3} runs  {row.first_input or '(empty)'}\n")
        out.writelines(f"      ! {text}\n" for text in row.dangling)
    while True:
        out.write(f"resume which? [1-{len(rows)}, Enter cancels]: ")
        out.flush()
        answer = read.readline()
        if not answer.strip():
            return None
        if answer.strip().isdigit() and 1 <= int(answer) <= len(rows):
            return rows[int(answer) - 1].session_id
        out.write(f"type a number from 1 to {len(rows)}\n")


__all__ = ["remember", "latest_here", "latest_stored_here", "stored_here", "pick", "INDEX_NAME"]
