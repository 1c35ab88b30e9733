"""SqliteStore: sessions in one SQLite database, for many thousands of sessions (SPEC §13.2
SESS-6; seed 000 REQ-216, REQ-217).

Stdlib ``sqlite3`` only. Two tables: ``phi_sessions`` has a row per session (its header JSON,
indexed by agent id, save order and last activity) and ``phi_session_loops`` a row per loop (its
JSON, the digest of that JSON, its position). A save is one ``BEGIN IMMEDIATE`` transaction that
inserts the new loops, rewrites the changed ones and updates the header row — its cost does not
grow with the session — or raises :class:`SessionConflict` and changes nothing
(``phi.session.store``). ``list_ids`` is newest save first, exactly, across processes: each save
takes the next number of a counter inside its transaction. Rows of the earlier format (the whole
session in ``phi_sessions.data``) still load; the first save of such a session moves its loops
into rows.

The database runs in WAL mode with a busy timeout, so several processes can read and write it at
once. Each store object holds one connection (per process: a child after ``fork`` opens its own),
used by one thread at a time under a lock; :meth:`close` (or ``with``) closes it, and a store used
after ``close`` opens it again. A database that cannot be written (read-only media or file, or
``read_only=True``) is opened read-only (``mode=ro``, ``immutable`` on media where SQLite cannot
even create its shared-memory file): loading works, saving and deleting raise
:class:`SessionError`.

A file that is not an SQLite database, a database marked as another application's, tables of the
same names with other columns, or a row whose JSON is not a session raise :class:`SessionError` /
:class:`CorruptSession` naming the file.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable, Collection, Sequence, TypeVar

from ..ids import loop_key
from ..json_values import is_object
from .errors import CorruptSession, NotFound, SessionError
from .model import LoopRecord, Session, replace_loops
from .store import (
    Claim,
    EncodedLoop,
    Ledger,
    check_session_id,
    claimed_others,
    complete_children,
    encode_header,
    follows_of_record,
    merge_header,
    plan_claim,
    renamed_loops,
    decode_json,
    decode_loop,
    decode_session,
    dumps,
    encode_loops,
    plan_save,
    sort_loops,
)

if TYPE_CHECKING:
    from sqlite3 import Connection  # sqlite3 itself is imported by the first store made

T = TypeVar("T")

APPLICATION_ID = 0x70686973  # "phis", PRAGMA application_id of databases this store created
_TABLE = "phi_sessions"
_LOOPS = "phi_session_loops"
_COLUMNS = ["session_id", "agent_id", "created_at", "last_active_at", "saved_seq", "saved_at", "data"]
_LOOP_COLUMNS = ["session_id", "loop_id", "position", "digest", "data"]
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {_TABLE} (
    session_id TEXT PRIMARY KEY NOT NULL,
    agent_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_active_at REAL NOT NULL,
    saved_seq INTEGER NOT NULL,
    saved_at REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS {_TABLE}_by_seq ON {_TABLE}(saved_seq);
CREATE INDEX IF NOT EXISTS {_TABLE}_by_agent ON {_TABLE}(agent_id, saved_seq);
CREATE INDEX IF NOT EXISTS {_TABLE}_by_activity ON {_TABLE}(last_active_at);
CREATE TABLE IF NOT EXISTS {_LOOPS} (
    session_id TEXT NOT NULL,
    loop_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    digest BLOB NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, loop_id)
);
CREATE INDEX IF NOT EXISTS {_LOOPS}_by_position ON {_LOOPS}(session_id, position);
"""
_BATCH = 500  # host parameters per IN (...) query


class SqliteStore:
    """Sessions in the SQLite database at ``path`` (created if missing).

    ``busy_timeout``: seconds a writer waits for another writer's transaction. ``synchronous``:
    ``"FULL"`` (default: a save is on disk when ``save`` returns) or ``"NORMAL"`` (faster; after a
    power loss the last saves may be missing, the database stays consistent). ``read_only``: open
    without ever writing (None: when the file or its directory cannot be written). Close with
    :meth:`close` or use as a context manager.
    """

    def __init__(self, path: str | os.PathLike[str], busy_timeout: float = 30.0, synchronous: str = "FULL",
                 read_only: bool | None = None) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.path = os.fspath(path)
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous
        self.read_only = _cannot_write(self.path) if read_only is None else read_only
        self._lock = threading.Lock()
        self._connection: Connection | None = None
        self._pid = 0
        self._inherited: list[Connection] = []  # a parent's connections, never used or closed after fork
        self._ledger = Ledger()
        self._use(lambda connection: None, "open the database")  # fail now, not at first use

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the store opens a new one if used again)."""
        with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None and self._pid == os.getpid():
                connection.close()

    # ------------------------------------------------------------------ the store interface

    def save(self, session: Session) -> None:
        check_session_id(session.session_id)
        self._refuse_if_read_only(f"save session {session.session_id}")
        encoded = encode_loops(session)
        seen = self._ledger.seen(session.session_id, (loop.loop_id for loop in encoded))

        def write(connection: Connection) -> dict[str, bytes]:
            return self._write(connection, session, encoded, seen)

        self._ledger.learn(session.session_id, self._transaction(write, f"save session {session.session_id}"))

    def _write(self, connection: Connection, session: Session, encoded: list[EncodedLoop],
               seen: dict[str, bytes]) -> dict[str, bytes]:
        """The save's transaction body; returns the digests now stored of the loops it touched."""
        sid = session.session_id
        row = connection.execute(f"SELECT data FROM {_TABLE} WHERE session_id = ?", (sid,)).fetchone()
        header = decode_json(row[0], self._where(sid), sid) if row else None
        if is_object(header) and "loops" in header:
            header = self._migrate(connection, sid, header)
        wanted = [loop.loop_id for loop in encoded if seen.get(loop.loop_id) != loop.digest]
        stored = self._digests(connection, sid, wanted)
        plan = plan_save(session, encoded, header, stored, seen, self._where(sid))
        if plan.empty:
            return plan.unchanged
        (position,) = connection.execute(f"SELECT COALESCE(MAX(position), -1) + 1 FROM {_LOOPS} WHERE session_id = ?",
                                         (sid,)).fetchone()
        for loop in plan.loops:
            if loop.loop_id in stored:
                connection.execute(f"UPDATE {_LOOPS} SET digest = ?, data = ? WHERE session_id = ? AND loop_id = ?",
                                   (loop.digest, loop.text, sid, loop.loop_id))
            else:
                connection.execute(f"INSERT INTO {_LOOPS} (session_id, loop_id, position, digest, data) "
                                   "VALUES (?, ?, ?, ?, ?)", (sid, loop.loop_id, position, loop.digest, loop.text))
                position += 1
        self._write_header(connection, session, plan.header)
        return {**plan.unchanged, **{loop.loop_id: loop.digest for loop in plan.loops}}

    def claim(self, session: Session, avoid: Collection[str] = ()) -> Claim:
        """Store ``session``'s loops — the ``Pending`` records of runs about to start — under loop ids
        no other writer has stored or claimed (nor any of ``avoid``), renumbering those that are
        taken; see :class:`~phi.session.store.Claim` (SPEC SESS-6). One transaction."""
        check_session_id(session.session_id)
        self._refuse_if_read_only(f"save session {session.session_id}")

        def write(connection: Connection) -> tuple[Claim, dict[str, bytes]]:
            return self._claim(connection, session, avoid)

        claim, digests = self._transaction(write, f"save session {session.session_id}", durable=False)
        self._ledger.learn(session.session_id, digests)
        return claim

    def _claim(self, connection: Connection, session: Session, avoid: Collection[str]) -> tuple[Claim, dict[str, bytes]]:
        sid = session.session_id
        row = connection.execute(f"SELECT data FROM {_TABLE} WHERE session_id = ?", (sid,)).fetchone()
        header = decode_json(row[0], self._where(sid), sid) if row else None
        if is_object(header) and "loops" in header:
            header = self._migrate(connection, sid, header)
        proposed = [record.loop_id for record in session.loops]
        taken = set(avoid) | set(self._digests(connection, sid, proposed))
        if taken & set(proposed):  # renumbering needs every id of those keys
            for key in {loop_key(loop_id) for loop_id in proposed}:
                taken.update(loop_id for (loop_id,) in connection.execute(
                    f"SELECT loop_id FROM {_LOOPS} WHERE session_id = ? AND substr(loop_id, 1, ?) = ?",
                    (sid, len(key) + 1, key + ".")))
        names = plan_claim(proposed, taken)
        follows, claims = self._later_follows(connection, sid,
                                              {f for f in (follows_of_record(r) for r in session.loops) if f})
        encoded = encode_loops(replace_loops(session, renamed_loops(session.loops, names)))
        old = decode_session(header, self._where(sid), sid, loops_required=False) if header else None
        (position,) = connection.execute(f"SELECT COALESCE(MAX(position), -1) + 1 FROM {_LOOPS} WHERE session_id = ?",
                                         (sid,)).fetchone()
        for loop in encoded:
            connection.execute(f"INSERT INTO {_LOOPS} (session_id, loop_id, position, digest, data) "
                               "VALUES (?, ?, ?, ?, ?)", (sid, loop.loop_id, position, loop.digest, loop.text))
            position += 1
        self._write_header(connection, session, encode_header(merge_header(old, session)))
        return Claim(names, claimed_others(encoded, follows, claims)), {loop.loop_id: loop.digest for loop in encoded}

    @staticmethod
    def _later_follows(connection: Connection, sid: str, points: set[str]) -> tuple[dict[str, str | None],
                                                                                   dict[str, Any]]:
        """The loop each loop stored after any of ``points`` continues, and the ``claimed_by`` of
        those still a claim's placeholder: the only loops that can continue them (a loop is stored
        after what it continues), so a claim that continues the latest loop reads next to nothing."""
        found: dict[str, str | None] = {}
        claims: dict[str, Any] = {}
        for point in points:
            row = connection.execute(f"SELECT position FROM {_LOOPS} WHERE session_id = ? AND loop_id = ?",
                                     (sid, point)).fetchone()
            after = row[0] if row is not None else -1
            for loop_id, follows, claimed_by in connection.execute(
                    f"SELECT loop_id, COALESCE(json_extract(data, '$.parent_loop_id'), json_extract(data, "
                    f"'$.history.after_loop_id')), json_extract(data, '$.claimed_by') FROM {_LOOPS} "
                    "WHERE session_id = ? AND position > ?", (sid, after)):
                found[loop_id] = follows
                if claimed_by is not None:
                    claims[loop_id] = decode_json(claimed_by, f"session {sid} loop {loop_id}", sid)
        return found, claims

    def _write_header(self, connection: Connection, session: Session, header: dict[str, Any]) -> None:
        from .codec import parse_time

        (seq,) = connection.execute(f"SELECT COALESCE(MAX(saved_seq), 0) + 1 FROM {_TABLE}").fetchone()
        connection.execute(
            f"INSERT OR REPLACE INTO {_TABLE} (session_id, agent_id, created_at, last_active_at, saved_seq, "
            "saved_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session.session_id, header["agent_id"], parse_time(header["created_at"], "created_at"),
             parse_time(header["last_active_at"], "last_active_at"), seq, time.time(), dumps(header)))

    def _migrate(self, connection: Connection, sid: str, whole: dict[str, Any]) -> dict[str, Any]:
        """Move the loops of an earlier-format row into rows; returns the header."""
        loops = whole.get("loops")
        if not isinstance(loops, list):
            decode_session(whole, self._where(sid), sid)  # raises, naming the field
        legacy = decode_session(whole, self._where(sid), sid)
        for position, loop in enumerate(encode_loops(legacy)):
            connection.execute(f"INSERT OR REPLACE INTO {_LOOPS} (session_id, loop_id, position, digest, data) "
                               "VALUES (?, ?, ?, ?, ?)", (sid, loop.loop_id, position, loop.digest, loop.text))
        header = {key: value for key, value in whole.items() if key != "loops"}
        connection.execute(f"UPDATE {_TABLE} SET data = ? WHERE session_id = ?", (dumps(header), sid))
        return header

    @staticmethod
    def _digests(connection: Connection, sid: str, loop_ids: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for start in range(0, len(loop_ids), _BATCH):
            batch = loop_ids[start:start + _BATCH]
            marks = ",".join("?" * len(batch))
            found.update(connection.execute(f"SELECT loop_id, digest FROM {_LOOPS} WHERE session_id = ? AND loop_id "
                                            f"IN ({marks})", (sid, *batch)).fetchall())
        return {loop_id: bytes(value) for loop_id, value in found.items()}

    def load(self, session_id: str) -> Session:
        check_session_id(session_id)
        session, digests = self._use(lambda connection: self._read(connection, session_id), f"load {session_id}")
        self._ledger.learn(session_id, digests, replace=True)
        return session

    def _read(self, connection: Connection, sid: str) -> tuple[Session, dict[str, bytes]]:
        row = connection.execute(f"SELECT data FROM {_TABLE} WHERE session_id = ?", (sid,)).fetchone()
        if row is None:
            raise NotFound(f"no session {sid} in {self.path}", self.path, sid)
        where = self._where(sid)
        raw = decode_json(row[0], where, sid)
        if isinstance(raw, dict) and "loops" in raw:  # the earlier format: the whole session in one row
            session = decode_session(raw, where, sid)
            return session, {loop.loop_id: loop.digest for loop in encode_loops(session)}
        header = decode_session(raw, where, sid, loops_required=False)
        records: list[LoopRecord] = []
        digests: dict[str, bytes] = {}
        if self._has_loop_table(connection):
            for loop_id, digest, data in connection.execute(
                    f"SELECT loop_id, digest, data FROM {_LOOPS} WHERE session_id = ? ORDER BY position", (sid,)):
                records.append(decode_loop(decode_json(data, f"{where} loop {loop_id}", sid),
                                           f"{where} loop {loop_id}", sid))
                digests[loop_id] = bytes(digest)
        return replace_loops(header, complete_children(sort_loops(records))), digests

    def list_ids(self) -> list[str]:
        rows = self._use(lambda c: c.execute(f"SELECT session_id FROM {_TABLE} ORDER BY saved_seq DESC").fetchall(),
                         "list sessions")
        return [session_id for (session_id,) in rows]

    def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        self._refuse_if_read_only(f"delete session {session_id}")

        def remove(connection: Connection) -> int:
            deleted: int = connection.execute(f"DELETE FROM {_TABLE} WHERE session_id = ?", (session_id,)).rowcount
            connection.execute(f"DELETE FROM {_LOOPS} WHERE session_id = ?", (session_id,))
            return deleted

        if not self._transaction(remove, f"delete session {session_id}"):
            raise NotFound(f"no session {session_id} in {self.path}", self.path, session_id)
        self._ledger.forget(session_id)

    def load_for_agent(self, agent_id: str) -> list[Session]:
        def read(connection: Connection) -> list[Session]:
            rows = connection.execute(f"SELECT session_id FROM {_TABLE} WHERE agent_id = ? ORDER BY saved_seq DESC",
                                      (agent_id,)).fetchall()
            return [self._read(connection, sid)[0] for (sid,) in rows]

        return self._use(read, f"load the sessions of agent {agent_id}")

    # ------------------------------------------------------------------ connections

    def _where(self, session_id: str) -> str:
        return f"{self.path} (session {session_id})"

    def _refuse_if_read_only(self, what: str) -> None:
        if self.read_only:
            raise SessionError(f"cannot {what}: {self.path} is open read-only", self.path)

    def _use(self, body: Callable[[Connection], T], what: str) -> T:
        """Run ``body`` with this process's connection, one thread at a time."""
        import sqlite3

        with self._lock:
            try:
                return body(self._open())
            except sqlite3.Error as error:
                raise SessionError(f"cannot {what} in {self.path}: {error}", self.path) from None

    def _transaction(self, body: Callable[[Connection], T], what: str, durable: bool = True) -> T:
        """``body`` in one write transaction; not ``durable``: committed without a sync (the next
        durable commit syncs the log it is in, as WAL mode keeps commits in order)."""
        def run(connection: Connection) -> T:
            if not durable:
                connection.execute("PRAGMA synchronous = NORMAL")
            try:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    result = body(connection)
                    connection.execute("COMMIT")
                    return result
                except BaseException:
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                    raise
            finally:
                if not durable:
                    connection.execute(f"PRAGMA synchronous = {self.synchronous}")

        return self._use(run, what)

    def _open(self) -> Connection:
        """This process's connection, opened and checked on first use (the lock is held)."""
        pid = os.getpid()
        if self._connection is not None and self._pid == pid:
            return self._connection
        if self._connection is not None:
            self._inherited.append(self._connection)  # the parent's: closing it here could disturb the parent
        self._connection = None
        connection = _connect(self.path, self.busy_timeout, self.read_only)
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            if not self.read_only:
                connection.execute("PRAGMA journal_mode = WAL").fetchone()
                connection.execute(f"PRAGMA synchronous = {self.synchronous}")
            self._prepare(connection)
        except BaseException as error:
            connection.close()
            raise _open_error(error, self.path) from None
        self._connection, self._pid = connection, pid
        return connection

    def _prepare(self, connection: Connection) -> None:
        """Create the tables on first use; refuse a database that belongs to something else."""
        if not self.read_only:
            connection.execute("BEGIN IMMEDIATE")
        try:
            (application,) = connection.execute("PRAGMA application_id").fetchone()
            if application not in (0, APPLICATION_ID):
                raise CorruptSession(f"{self.path} is another application's database (application_id "
                                     f"{application:#x}), not a phi session store", self.path)
            tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table, columns in ((_TABLE, _COLUMNS), (_LOOPS, _LOOP_COLUMNS)):
                if table in tables:
                    found = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
                    if found != columns:
                        raise CorruptSession(f"{self.path} has a table {table} with columns {found}, not a phi "
                                             "session store's", self.path)
            if self.read_only:
                return
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    connection.execute(statement)
            if not tables:
                connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    @staticmethod
    def _has_loop_table(connection: Connection) -> bool:
        return connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                  (_LOOPS,)).fetchone() is not None


def _cannot_write(path: str) -> bool:
    """True when SQLite could not write the database: the file (if it exists) or its directory
    (where the journal goes) is not writable, e.g. on read-only media."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return True
    return os.path.isdir(directory) and not os.access(directory, os.W_OK)


def _connect(path: str, timeout: float, read_only: bool) -> Connection:
    import sqlite3

    try:
        if not read_only:
            return sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        if not os.path.exists(path):
            raise SessionError(f"cannot open session database {path} read-only: it does not exist", path)
        uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
        connection = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False)
        try:
            connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return connection
        except sqlite3.OperationalError:  # WAL without a -shm file SQLite may create: the media is read-only
            connection.close()
            return sqlite3.connect(uri + "&immutable=1", uri=True, timeout=timeout, isolation_level=None,
                                   check_same_thread=False)
    except sqlite3.Error as error:
        raise SessionError(f"cannot open session database {path}: {error}", path) from None


def _open_error(error: BaseException, path: str) -> BaseException:
    import sqlite3

    if isinstance(error, sqlite3.OperationalError):  # locked, read-only, disk full, ...
        return SessionError(f"cannot open session database {path}: {error}", path)
    if isinstance(error, sqlite3.DatabaseError):  # "file is not a database", malformed image
        return CorruptSession(f"{path} is not a usable SQLite database: {error}", path)
    return error


__all__ = ["APPLICATION_ID", "SqliteStore"]
