"""SqliteStore: sessions in one SQLite database, for many thousands of sessions (SPEC §13.2
SESS-6; seed 000 REQ-216, REQ-217).

Stdlib ``sqlite3`` only. The database runs in WAL mode with a busy timeout, so several threads and
processes can read and write it at once: each thread (and each process, after a fork) opens its own
connection, and every save is one ``BEGIN IMMEDIATE`` transaction. One row per session, keyed by
``session_id``, indexed by agent id, save order and last activity; the session itself is its JSON
text (the same shape the JSON store writes, without indentation). ``list_ids`` is newest save first,
exactly, across processes: each save takes the next number of a counter inside its transaction.

A file that is not an SQLite database, a database marked as another application's, a table of the
same name with other columns, or a row whose JSON is not a session raise :class:`SessionError` /
:class:`CorruptSession` naming the file.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from .errors import CorruptSession, NotFound, SessionError
from .model import Session
from .store import check_session_id, decode_session, encode_session

if TYPE_CHECKING:
    from sqlite3 import Connection  # sqlite3 itself is imported by the first store made

APPLICATION_ID = 0x70686973  # "phis", PRAGMA application_id of databases this store created
_TABLE = "phi_sessions"
_COLUMNS = ["session_id", "agent_id", "created_at", "last_active_at", "saved_seq", "saved_at", "data"]
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
"""


class SqliteStore:
    """Sessions in the SQLite database at ``path`` (created if missing).

    ``busy_timeout``: seconds a writer waits for another writer's transaction. ``synchronous``:
    ``"FULL"`` (default: a save is on disk when ``save`` returns) or ``"NORMAL"`` (faster; after a
    power loss the last saves may be missing, the database stays consistent). Close with
    :meth:`close` or use as a context manager.
    """

    def __init__(self, path: str | os.PathLike[str], busy_timeout: float = 30.0, synchronous: str = "FULL") -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.path = os.fspath(path)
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[tuple[int, Connection]] = []  # (pid, connection)
        self._ready_pid: int | None = None  # the process that checked the schema
        self._connection()  # fail now, not at first use, if the file is not usable

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection this process opened (the store reopens one if used again)."""
        with self._lock:
            connections, self._connections = self._connections, []
        pid = os.getpid()
        for owner, connection in connections:
            if owner == pid:
                connection.close()

    # ------------------------------------------------------------------ the store interface

    def save(self, session: Session) -> None:
        check_session_id(session.session_id)
        data = encode_session(session, indent=None).decode("utf-8")
        row = (session.session_id, session.agent_id, session.created_at, session.last_active_at, data)

        def write(connection: Connection) -> None:
            (seq,) = connection.execute(f"SELECT COALESCE(MAX(saved_seq), 0) + 1 FROM {_TABLE}").fetchone()
            connection.execute(
                f"INSERT OR REPLACE INTO {_TABLE} (session_id, agent_id, created_at, last_active_at, saved_seq, "
                "saved_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)", (*row[:4], seq, time.time(), row[4]))

        self._transaction(write, f"save session {session.session_id}")

    def load(self, session_id: str) -> Session:
        check_session_id(session_id)
        rows = self._query(f"SELECT data FROM {_TABLE} WHERE session_id = ?", (session_id,), f"load {session_id}")
        if not rows:
            raise NotFound(f"no session {session_id} in {self.path}", self.path, session_id)
        return decode_session(rows[0][0], f"{self.path} (session {session_id})", session_id)

    def list_ids(self) -> list[str]:
        rows = self._query(f"SELECT session_id FROM {_TABLE} ORDER BY saved_seq DESC", (), "list sessions")
        return [session_id for (session_id,) in rows]

    def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        deleted: list[int] = []

        def remove(connection: Connection) -> None:
            deleted.append(connection.execute(f"DELETE FROM {_TABLE} WHERE session_id = ?", (session_id,)).rowcount)

        self._transaction(remove, f"delete session {session_id}")
        if not deleted[0]:
            raise NotFound(f"no session {session_id} in {self.path}", self.path, session_id)

    def load_for_agent(self, agent_id: str) -> list[Session]:
        rows = self._query(f"SELECT session_id, data FROM {_TABLE} WHERE agent_id = ? ORDER BY saved_seq DESC",
                           (agent_id,), f"load the sessions of agent {agent_id}")
        return [decode_session(data, f"{self.path} (session {sid})", sid) for sid, data in rows]

    # ------------------------------------------------------------------ connections

    def _connection(self) -> Connection:
        pid = os.getpid()
        known: Connection | None = getattr(self._local, "connection", None)
        if known is not None and self._local.pid == pid:
            return known
        import sqlite3  # lazily: only users of this store pay for the import

        try:
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                         check_same_thread=False)
        except sqlite3.Error as error:
            raise SessionError(f"cannot open session database {self.path}: {error}", self.path) from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            connection.execute("PRAGMA journal_mode = WAL").fetchone()
            connection.execute(f"PRAGMA synchronous = {self.synchronous}")
            if self._ready_pid != pid:
                self._prepare(connection)
                self._ready_pid = pid
        except BaseException as error:
            connection.close()
            if isinstance(error, sqlite3.OperationalError):  # locked, read-only, disk full, ...
                raise SessionError(f"cannot open session database {self.path}: {error}", self.path) from None
            if isinstance(error, sqlite3.DatabaseError):  # "file is not a database", malformed image
                raise CorruptSession(f"{self.path} is not a usable SQLite database: {error}", self.path) from None
            raise
        self._local.connection, self._local.pid = connection, pid
        with self._lock:
            self._connections.append((pid, connection))
        return connection

    def _prepare(self, connection: Connection) -> None:
        """Create the table on first use; refuse a database that belongs to something else."""
        connection.execute("BEGIN IMMEDIATE")
        try:
            (application,) = connection.execute("PRAGMA application_id").fetchone()
            if application not in (0, APPLICATION_ID):
                raise CorruptSession(f"{self.path} is another application's database (application_id "
                                     f"{application:#x}), not a phi session store", self.path)
            tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if _TABLE in tables:
                columns = [row[1] for row in connection.execute(f"PRAGMA table_info({_TABLE})")]
                if columns != _COLUMNS:
                    raise CorruptSession(f"{self.path} has a table {_TABLE} with columns {columns}, not a phi "
                                         "session store's", self.path)
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    connection.execute(statement)
            if not tables:
                connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _transaction(self, body: Callable[[Connection], None], what: str) -> None:
        import sqlite3

        connection = self._connection()
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                body(connection)
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            raise SessionError(f"cannot {what} in {self.path}: {error}", self.path) from None

    def _query(self, sql: str, args: tuple[str, ...], what: str) -> list[tuple[Any, ...]]:
        import sqlite3

        try:
            rows: list[tuple[Any, ...]] = self._connection().execute(sql, args).fetchall()
            return rows
        except sqlite3.Error as error:
            raise SessionError(f"cannot {what} in {self.path}: {error}", self.path) from None
