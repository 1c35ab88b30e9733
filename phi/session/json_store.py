"""JsonDirStore: one append-only JSON-lines file per session, ``{dir}/{session_id}.jsonl`` (SPEC §13.2
SESS-6; seed 000 REQ-216, REQ-217).

Each line is one save: a session JSON object (phi-core's shape, see ``phi.session.codec``) whose
``loops`` holds only the loops that save wrote. Loading folds the lines: the header of the last
line, every loop as its latest line has it, loops in start order. A save appends one line under an
exclusive ``flock`` of the file, then fsyncs it, so its cost does not grow with the session. A save
killed mid-write leaves a last line without its newline: loading ignores it, and the next save
(holding the lock) cuts it off before appending. A complete line that is not a session is
:class:`CorruptSession` naming the file and line, never skipped.

phi's earlier format (and phi-core's), one pretty-printed ``{dir}/{session_id}.json`` per session,
still loads; the first save of such a session writes it as the first line of the ``.jsonl`` file
and then removes the ``.json`` (a ``.json`` beside a ``.jsonl`` that has lines is the leftover of
an interrupted migration: ignored, and removed by the next save). Reading never writes.

Concurrent savers of one session — threads or processes — take turns on the lock; each sees what
the others appended, and a save that would change a loop another writer changed since raises
:class:`SessionConflict` (``phi.session.store``). Hidden temp files of killed saves of the earlier
format (``.{session_id}.*.tmp``) older than a minute are removed when the store is made.
``list_ids`` orders by modification time, newest first (ties, within the file system's clock
granularity, by id); every visible entry must be a session file, anything else is
:class:`CorruptSession`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from dataclasses import dataclass, field
from typing import Any, Collection, Generator

from ..json_values import is_array, is_object
from ..log import get_logger
from .errors import CorruptSession, NotFound, SessionError
from .model import Session, replace_loops
from .store import (
    Claim,
    EncodedLoop,
    Ledger,
    check_session_id,
    claimed_others,
    complete_children,
    follows_of,
    follows_of_record,
    merge_header,
    plan_claim,
    renamed_loops,
    decode_json,
    decode_loop,
    decode_session,
    dumps,
    encode_header,
    encode_loops,
    loop_digests,
    plan_save,
    sort_loops,
)

log = get_logger(__name__)

_LOG = ".jsonl"
_LEGACY = ".json"
STALE_TEMP_SECONDS = 60.0


@dataclass
class _LogState:
    """What this store object has read of one session's file: up to ``offset`` of inode ``inode``."""

    inode: tuple[int, int]
    offset: int = 0
    header: dict[str, Any] | None = None
    digests: dict[str, bytes] = field(default_factory=dict[str, bytes])
    follows: dict[str, str | None] = field(default_factory=dict[str, str | None])  # loop -> the loop it continues
    claims: dict[str, Any] = field(default_factory=dict[str, Any])  # loop still a claim's placeholder -> claimed_by


@dataclass
class _Lines:
    """The complete lines of a file read from some offset: parsed, with where they end."""

    records: list[tuple[int, dict[str, Any]]]  # (line number from the read's start, parsed line)
    end: int  # offset just after the last complete line
    torn: bool  # bytes after the last newline (a save killed mid-write)


class JsonDirStore:
    """Sessions as ``{directory}/{session_id}.jsonl``; the directory is created on first save.
    ``lock_timeout``: seconds a save waits for another saver of the same session."""

    def __init__(self, directory: str | os.PathLike[str], lock_timeout: float = 30.0) -> None:
        self.directory = os.fspath(directory)
        self.lock_timeout = lock_timeout
        self._ledger = Ledger()
        self._states: dict[str, _LogState] = {}
        remove_stale_temp_files(self.directory)

    def __repr__(self) -> str:
        return f"JsonDirStore({self.directory!r})"

    def __enter__(self) -> JsonDirStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing stays open between calls; forgets what this store object has read."""
        self._states.clear()

    def path_of(self, session_id: str) -> str:
        """The file a session is stored in (the id is checked first)."""
        return os.path.join(self.directory, check_session_id(session_id) + _LOG)

    def _legacy_path(self, session_id: str) -> str:
        return os.path.join(self.directory, session_id + _LEGACY)

    # ------------------------------------------------------------------ save

    def save(self, session: Session) -> None:
        path = self.path_of(session.session_id)
        encoded = encode_loops(session)
        migrated = False
        with self._locked(path, session.session_id) as (fd, created):
            try:
                migrated = self._save_locked(fd, path, session, encoded)
            except BaseException:
                self._states.pop(session.session_id, None)  # read the file again next time
                raise
        if created:
            self._sync_directory()
        if migrated or os.path.exists(self._legacy_path(session.session_id)):
            self._remove_legacy(session.session_id)

    def _save_locked(self, fd: int, path: str, session: Session, encoded: list[EncodedLoop]) -> bool:
        """Append what is new (holding the lock); True if the session was migrated."""
        state = self._sync(fd, path, session.session_id)
        prefix = self._migration(session.session_id, state) if state.header is None else ""
        seen = self._ledger.seen(session.session_id, (loop.loop_id for loop in encoded))
        plan = plan_save(session, encoded, state.header, state.digests, seen, path)
        self._ledger.learn(session.session_id, plan.unchanged)
        if plan.empty and not prefix:
            return False
        line = "" if plan.empty else _line(plan.header, [loop.text for loop in plan.loops])
        self._append(fd, path, session.session_id, prefix + line, state)
        if not plan.empty:
            self._wrote(state, session.session_id, plan.header, plan.loops)
        return bool(prefix)

    def _wrote(self, state: _LogState, session_id: str, header: dict[str, Any], loops: list[EncodedLoop]) -> None:
        state.header = header
        state.digests.update({loop.loop_id: loop.digest for loop in loops})
        state.follows.update({loop.loop_id: loop.follows for loop in loops})
        for loop in loops:
            _note_claim(state.claims, loop.loop_id, loop.claimant)
        self._ledger.learn(session_id, {loop.loop_id: loop.digest for loop in loops})

    # ------------------------------------------------------------------ claim

    def claim(self, session: Session, avoid: Collection[str] = ()) -> Claim:
        """Store ``session``'s loops — the ``Pending`` records of runs about to start — under loop ids
        no other writer has stored or claimed (nor any of ``avoid``), renumbering those that are
        taken; see :class:`~phi.session.store.Claim` (SPEC SESS-6). Written under the file's lock,
        not synced: the run's own save syncs it."""
        path = self.path_of(session.session_id)
        with self._locked(path, session.session_id) as (fd, created):
            try:
                claim = self._claim_locked(fd, path, session, avoid)
            except BaseException:
                self._states.pop(session.session_id, None)
                raise
        if created:
            self._sync_directory()
        return claim

    def _claim_locked(self, fd: int, path: str, session: Session, avoid: Collection[str]) -> Claim:
        state = self._sync(fd, path, session.session_id)
        prefix = self._migration(session.session_id, state) if state.header is None else ""
        names = plan_claim([record.loop_id for record in session.loops], state.digests.keys() | set(avoid))
        encoded = encode_loops(replace_loops(session, renamed_loops(session.loops, names)))
        old = decode_session(state.header, path, session.session_id, loops_required=False) if state.header else None
        header = encode_header(merge_header(old, session))
        self._append(fd, path, session.session_id, prefix + _line(header, [loop.text for loop in encoded]), state,
                     durable=False)
        others = claimed_others(encoded, state.follows, state.claims)
        self._wrote(state, session.session_id, header, encoded)
        return Claim(names, others)

    def _migration(self, session_id: str, state: _LogState) -> str:
        """The first line of a session stored in the earlier whole-file format ("" if there is none);
        ``state`` then holds it, as if read."""
        legacy = self._read_legacy(session_id)
        if legacy is None:
            return ""
        encoded = encode_loops(legacy)
        state.header = encode_header(legacy)
        state.digests.update({loop.loop_id: loop.digest for loop in encoded})
        state.follows.update({loop.loop_id: loop.follows for loop in encoded})
        return _line(state.header, [loop.text for loop in encoded])

    def _append(self, fd: int, path: str, session_id: str, text: str, state: _LogState, durable: bool = True) -> None:
        data = text.encode("utf-8")
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, state.offset)  # take back a partial line; the lock is still ours
            raise SessionError(f"cannot save session {session_id} to {path}: {error}", path, session_id) from None
        state.offset += len(data)

    @contextlib.contextmanager
    def _locked(self, path: str, session_id: str) -> Generator[tuple[int, bool], None, None]:
        """The session's file, created if missing, open and exclusively locked; (fd, created)."""
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as error:
            raise SessionError(f"cannot save session {session_id} in {self.directory}: {error}", path,
                               session_id) from None
        for _attempt in range(100):
            fd, created = self._open_log(path, session_id)
            try:
                self._lock(fd, path, session_id)
                if _same_file(fd, path):
                    break
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # deleted or replaced while we waited: lock the file that is there now
        else:
            raise SessionError(f"cannot lock {path}: it keeps being replaced", path, session_id)
        try:
            yield fd, created
        finally:
            os.close(fd)  # closing releases the lock

    def _open_log(self, path: str, session_id: str) -> tuple[int, bool]:
        flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
        while True:
            try:
                return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600), True
            except FileExistsError:
                pass
            except OSError as error:
                raise SessionError(f"cannot save session {session_id} to {path}: {error}", path, session_id) from None
            try:
                return os.open(path, flags), False
            except FileNotFoundError:
                continue  # deleted between the two opens
            except OSError as error:
                raise SessionError(f"cannot save session {session_id} to {path}: {error}", path, session_id) from None

    def _lock(self, fd: int, path: str, session_id: str) -> None:
        deadline, pause = time.monotonic() + self.lock_timeout, 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SessionError(f"cannot save session {session_id}: {path} stayed locked by another writer "
                                       f"for {self.lock_timeout} s", path, session_id) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            except OSError as error:
                raise SessionError(f"cannot lock {path}: {error}", path, session_id) from None

    def _sync(self, fd: int, path: str, session_id: str) -> _LogState:
        """Bring this store object's view of the locked file up to date: read what other writers
        appended, cut off a torn last line."""
        info = os.fstat(fd)
        inode = (info.st_dev, info.st_ino)
        state = self._states.get(session_id)
        if state is None or state.inode != inode or info.st_size < state.offset:
            state = self._states[session_id] = _LogState(inode)
        if info.st_size > state.offset:
            os.lseek(fd, state.offset, os.SEEK_SET)
            lines = _parse_lines(_read_all(fd, info.st_size - state.offset), path, session_id)
            for number, record in lines.records:
                loops = _checked_loops(record, f"{path} line {number}", session_id)
                state.header = {key: value for key, value in record.items() if key != "loops"}
                state.digests.update(loop_digests(loops))
                state.follows.update({loop["loop_id"]: follows_of(loop) for loop in loops})
                for loop in loops:
                    _note_claim(state.claims, loop["loop_id"], loop.get("claimed_by"))
            if lines.torn:
                os.ftruncate(fd, state.offset + lines.end)
                log.warning("%s: cut off the torn last line of a save that was interrupted", path)
            state.offset += lines.end
        os.lseek(fd, 0, os.SEEK_END)
        return state

    # ------------------------------------------------------------------ load

    def load(self, session_id: str) -> Session:
        path = self.path_of(session_id)
        try:
            with open(path, "rb") as source:
                info = os.fstat(source.fileno())
                data = source.read()
        except FileNotFoundError:
            data = b""
            info = None
        except OSError as error:
            raise SessionError(f"cannot read session file {path}: {error}", path, session_id) from None
        lines = _parse_lines(data, path, session_id)
        if not lines.records:
            legacy = self._read_legacy(session_id)
            if legacy is None:
                raise NotFound(f"no session {session_id} in {self.directory} ({path} does not exist)", path,
                               session_id)
            self._ledger.learn(session_id, {loop.loop_id: loop.digest for loop in encode_loops(legacy)})
            return legacy
        session, digests = _fold(lines, path, session_id)
        self._ledger.learn(session_id, digests)
        if info is not None:
            follows = {record.loop_id: follows_of_record(record) for record in session.loops}
            claims = {record.loop_id: record.extra["claimed_by"] for record in session.loops
                      if "claimed_by" in record.extra}
            self._states[session_id] = _LogState((info.st_dev, info.st_ino), lines.end, session_json_header(lines),
                                                 digests, follows, claims)
        return session

    def _read_legacy(self, session_id: str) -> Session | None:
        path = self._legacy_path(session_id)
        try:
            with open(path, "rb") as source:
                data = source.read()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise SessionError(f"cannot read session file {path}: {error}", path, session_id) from None
        return decode_session(decode_json(data, path, session_id), path, session_id)

    def list_ids(self) -> list[str]:
        newest: dict[str, int] = {}
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            return []
        except OSError as error:
            raise SessionError(f"cannot list session directory {self.directory}: {error}", self.directory) from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            found = _session_file(entry)
            if found is not None:
                session_id, mtime, is_log = found
                if is_log or session_id not in newest:  # the .jsonl's time when both are there
                    newest[session_id] = mtime
        return [sid for _, sid in sorted((-mtime, sid) for sid, mtime in newest.items())]

    def delete(self, session_id: str) -> None:
        path, legacy = self.path_of(session_id), self._legacy_path(session_id)
        if not os.path.exists(path) and not os.path.exists(legacy):
            raise NotFound(f"no session {session_id} in {self.directory} ({path} does not exist)", path, session_id)
        if os.path.exists(path):
            with self._locked(path, session_id):
                _unlink(path, session_id)
        with contextlib.suppress(FileNotFoundError):
            _unlink(legacy, session_id)
        self._states.pop(session_id, None)
        self._ledger.forget(session_id)
        self._sync_directory()

    def load_for_agent(self, agent_id: str) -> list[Session]:
        out: list[Session] = []
        for session_id in self.list_ids():
            try:
                session = self.load(session_id)
            except NotFound:
                continue  # deleted since it was listed
            if session.agent_id == agent_id:
                out.append(session)
        return out

    # ------------------------------------------------------------------ helpers

    def _remove_legacy(self, session_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            _unlink(self._legacy_path(session_id), session_id)
            self._sync_directory()

    def _sync_directory(self) -> None:
        """Make a created or removed file's directory entry durable."""
        try:
            fd = os.open(self.directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as error:
            raise SessionError(f"cannot open {self.directory} to sync it: {error}", self.directory) from None
        try:
            os.fsync(fd)
        except OSError as error:
            if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):  # file systems that cannot sync dirs
                raise SessionError(f"cannot sync {self.directory}: {error}", self.directory) from None
        finally:
            os.close(fd)


# --------------------------------------------------------------------------- file helpers


def _note_claim(claims: dict[str, Any], loop_id: str, claimed_by: Any) -> None:
    if claimed_by is None:
        claims.pop(loop_id, None)
    else:
        claims[loop_id] = claimed_by


def _read_all(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _line(header: dict[str, Any], loops: list[str]) -> str:
    """One save's line: the header and the loops' JSON texts as they were digested."""
    return dumps({**header, "loops": []})[:-2] + ",".join(loops) + "]}\n"


def _parse_lines(data: bytes, path: str, session_id: str) -> _Lines:
    end = data.rfind(b"\n") + 1
    records: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(data[:end - 1].split(b"\n") if end else [], start=1):
        raw = decode_json(line, f"{path} line {number}", session_id)
        if not is_object(raw) or raw.get("session_id") != session_id:
            found = raw.get("session_id") if is_object(raw) else None
            problem = f"holds session {found!r}, not {session_id!r}" if isinstance(found, str) else "is not a phi session"
            raise CorruptSession(f"{path} line {number} {problem}", path, session_id)
        records.append((number, raw))
    return _Lines(records, end, end < len(data))


def session_json_header(lines: _Lines) -> dict[str, Any]:
    return {key: value for key, value in lines.records[-1][1].items() if key != "loops"}


def _checked_loops(record: dict[str, Any], where: str, session_id: str) -> list[Any]:
    """The loops of a line another writer appended, every part of the line checked, so nothing is
    ever appended after a record that cannot be read."""
    decode_session({**record, "loops": []}, where, session_id)
    loops = record.get("loops")
    if not is_array(loops):
        raise CorruptSession(f"{where} has no list of loops", where, session_id, "loops")
    for index, loop in enumerate(loops):
        decode_loop(loop, where, session_id, f"loops[{index}]")
    return loops


def _fold(lines: _Lines, path: str, session_id: str) -> tuple[Session, dict[str, bytes]]:
    """The session the lines describe, and the digest of each loop as stored."""
    latest: dict[str, tuple[int, int, dict[str, Any]]] = {}
    for number, record in lines.records:
        loops = record.get("loops")
        if not is_array(loops):
            decode_session(record, f"{path} line {number}", session_id)  # raises, naming the field
            raise CorruptSession(f"{path} line {number} has no list of loops", path, session_id)
        for index, loop in enumerate(loops):
            loop_id = loop.get("loop_id") if is_object(loop) else None
            if not isinstance(loop_id, str):
                decode_loop(loop, f"{path} line {number}", session_id, f"loops[{index}]")
                raise CorruptSession(f"{path} line {number} loops[{index}] has no loop id", path, session_id)
            first = latest.get(loop_id, (number, index, loop))
            latest[loop_id] = (first[0], first[1], loop)
    number, last = lines.records[-1]
    header = decode_session({**last, "loops": []}, f"{path} line {number}", session_id)
    records = [decode_loop(loop, f"{path} line {n}", session_id, f"loops[{i}]") for n, i, loop in latest.values()]
    digests = loop_digests([loop for _, _, loop in latest.values()])
    return replace_loops(header, complete_children(sort_loops(records))), digests


def _session_file(entry: os.DirEntry[str]) -> tuple[str, int, bool] | None:
    """(session id, modification time, is the new format) of a session file; None if it vanished
    or is an empty log (a first save that never wrote); CorruptSession if foreign."""
    name, path = entry.name, entry.path
    try:
        is_file = entry.is_file(follow_symlinks=False)
        stat = entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return None  # deleted while listing
    except OSError as error:
        raise SessionError(f"cannot stat {path}: {error}", path) from None
    suffix = _LOG if name.endswith(_LOG) else _LEGACY if name.endswith(_LEGACY) else None
    stem = name[: -len(suffix)] if suffix else None
    if not is_file or stem is None:
        raise CorruptSession(f"{path} is not a session file: the store directory holds only "
                             "{session_id}.jsonl (and earlier {session_id}.json) files", path)
    try:
        check_session_id(stem)
    except SessionError:
        raise CorruptSession(f"{path} is not a session file: {stem!r} is not a valid session id", path) from None
    if suffix == _LOG and stat.st_size == 0:
        return None
    return stem, stat.st_mtime_ns, suffix == _LOG


def _same_file(fd: int, path: str) -> bool:
    try:
        current = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino)


def _unlink(path: str, session_id: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise SessionError(f"cannot delete session file {path}: {error}", path, session_id) from None


def remove_stale_temp_files(directory: str, older_than: float = STALE_TEMP_SECONDS) -> int:
    """Remove ``.{session_id}.*.tmp`` files (left by killed saves of the earlier format) not
    modified for ``older_than`` seconds; returns how many. Errors are logged, never raised."""
    removed, now = 0, time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0  # missing or unreadable: nothing to clean (reads report it)
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(".tmp")):
            continue
        stem = name[1:].rsplit(".", 2)[0] if name.count(".") >= 3 else ""
        try:
            check_session_id(stem)
            if entry.is_file(follow_symlinks=False) and now - entry.stat(follow_symlinks=False).st_mtime > older_than:
                os.unlink(entry.path)
                removed += 1
        except SessionError:
            continue  # not one of ours
        except OSError as error:
            log.warning("cannot remove stale temp file %s: %s", entry.path, error)
    return removed
