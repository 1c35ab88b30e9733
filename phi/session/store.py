"""The session store interface and what its implementations share (SPEC §13.2 SESS-6; seed 000
REQ-216, REQ-217).

A store keeps each session as its header and an append-only set of loop records, keyed by loop id.
``save(session)`` adds what is new: loops not stored yet are appended, loops that changed are
written again (the latest record of a loop wins), the header is merged (:func:`merge_header`), and
loops stored but absent from ``session`` are kept — saving never loses what is stored, so a
recorder in a new process (or a ``flush_changes`` holding only the new loops) continues a stored
session. Nothing new: nothing is written.

Conflicts: each store object remembers the digest of every loop it last read or wrote (its
:class:`Ledger`). A save that would change a loop whose stored version is one this store object has
not seen — another writer created or changed it since — raises :class:`SessionConflict` and writes
nothing; saves of different loops by several writers all land. ``list_ids`` and
``load_for_agent`` give the newest save first, ``load``/``delete`` of an absent id raise
``NotFound``. Implementations: :class:`JsonDirStore` (``phi.session.json_store``) and
:class:`SqliteStore` (``phi.session.sqlite_store``).

Session ids must work as plain file names in every store, so sessions move freely between them:
1–200 characters from ``A-Z a-z 0-9 . _ -``, not starting with a dot.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from ..errors import DecodeError
from .codec import header_to_json, loop_to_json, session_from_json
from .errors import CorruptSession, InvalidSessionId, SessionConflict, SessionError
from .model import LoopRecord, Session

_SESSION_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\Z")


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions are kept by id (SPEC SESS-6): ``save`` adds (appends new loops, rewrites
    changed ones, keeps the rest), ``list_ids`` and ``load_for_agent`` give the newest save first,
    ``load``/``delete`` of an absent id raise ``NotFound``. Implemented by ``JsonDirStore`` and
    ``SqliteStore``."""

    def save(self, session: Session) -> None:
        """Add ``session`` to what is stored under its id; SessionConflict if another writer
        changed a loop this store object has not seen."""
        ...

    def load(self, session_id: str) -> Session:
        """The stored session; raises NotFound, CorruptSession."""
        ...

    def list_ids(self) -> list[str]:
        """Every stored session id, most recently saved first."""
        ...

    def delete(self, session_id: str) -> None:
        """Remove the session; raises NotFound if it is not stored."""
        ...

    def load_for_agent(self, agent_id: str) -> list[Session]:
        """Every stored session of ``agent_id``, most recently saved first."""
        ...


def check_session_id(session_id: object) -> str:
    """``session_id`` if a store can keep it; else :class:`InvalidSessionId` saying why."""
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise InvalidSessionId(
            f"session id {session_id!r} cannot be stored: use 1-200 characters from A-Z a-z 0-9 . _ - "
            "not starting with a dot", session_id=session_id if isinstance(session_id, str) else None)
    return session_id


# --------------------------------------------------------------------------- encoding


def dumps(data: Any) -> str:
    """The one JSON text form stores write (compact, UTF-8, no NaN): digests compare these."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


@dataclass(frozen=True)
class EncodedLoop:
    loop_id: str
    text: str
    digest: bytes


def encode_loops(session: Session) -> list[EncodedLoop]:
    """The session's loops as JSON text; :class:`SessionError` if some value (metadata, tool
    details) is not JSON data, a loop id repeats or a loop belongs to another session."""
    out, ids = [], set()
    for record in session.loops:
        if record.loop_id in ids or record.session_id != session.session_id:
            problem = "twice" if record.loop_id in ids else f"of session {record.session_id!r}"
            raise SessionError(f"session {session.session_id} cannot be saved: it holds loop {record.loop_id} "
                               f"{problem}", session_id=session.session_id)
        ids.add(record.loop_id)
        text = _encode(loop_to_json(record), session.session_id, f"loop {record.loop_id}")
        out.append(EncodedLoop(record.loop_id, text, digest(text)))
    return out


def _encode(data: Any, session_id: str, what: str) -> str:
    try:
        text: str = dumps(data)
        text.encode("utf-8")  # lone surrogates cannot be stored
        return text
    except (TypeError, ValueError, RecursionError) as error:
        field = _culprit(data, "")
        where = f"{what}, field {field.lstrip('.')}" if field else what
        raise SessionError(f"session {session_id} cannot be saved as JSON: {where}: {error}",
                           session_id=session_id) from None


def _culprit(data: Any, path: str, depth: int = 8) -> str:
    """The JSON path of the value that cannot be written, as far down as ``depth`` levels (found by
    encoding parts again: only ever done for a save that fails)."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        try:
            dumps(value).encode("utf-8")
        except (TypeError, ValueError, RecursionError):
            inner = f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]"
            return _culprit(value, inner, depth - 1) if depth > 1 else inner + "..."
    return path


def encode_header(session: Session) -> dict[str, Any]:
    """The header's JSON form, checked to be JSON data."""
    header = header_to_json(session)
    _encode(header, session.session_id, "the header")
    return header


def decode_json(data: bytes | str, where: str, expected_id: str | None) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CorruptSession(f"{where} is not valid JSON: {error}", where, expected_id) from None


def decode_session(raw: Any, where: str, expected_id: str | None, loops_required: bool = True) -> Session:
    """A session (or, ``loops_required=False``, a header) from parsed JSON; :class:`CorruptSession`
    naming ``where`` and the offending field for anything unreadable."""
    try:
        session = session_from_json(raw, "session", loops_required)
    except (DecodeError, ValueError) as error:
        field_name = error.field if isinstance(error, DecodeError) else None
        raise CorruptSession(f"{where} is not a phi session: {error}", where, expected_id, field_name) from None
    if expected_id is not None and session.session_id != expected_id:
        raise CorruptSession(f"{where} holds session {session.session_id!r}, not {expected_id!r}", where, expected_id)
    return session


def decode_loop(raw: Any, where: str, session_id: str, path: str = "loop") -> LoopRecord:
    """A loop record from parsed JSON; :class:`CorruptSession` naming ``where`` and the field
    (``path``: the record's JSON path, e.g. ``loops[3]``)."""
    from .codec import loop_from_json

    try:
        record = loop_from_json(raw, path)
    except (DecodeError, ValueError) as error:
        field_name = error.field if isinstance(error, DecodeError) else None
        raise CorruptSession(f"{where} is not a phi loop record: {error}", where, session_id, field_name) from None
    if record.session_id != session_id:
        raise CorruptSession(f"{where} holds a loop of session {record.session_id!r}, not {session_id!r}", where,
                             session_id)
    return record


def sort_loops(loops: list[LoopRecord]) -> list[LoopRecord]:
    """Loops in start order (stable: records stored first come first among equal starts)."""
    return sorted(loops, key=lambda record: record.started_at)


# --------------------------------------------------------------------------- merging and conflicts


def merge_header(stored: Session | None, new: Session) -> Session:
    """The header a save leaves (SPEC SESS-6): ``created_at`` and ``formation`` of the earlier
    creation (the saved session's on a tie), the latest ``last_active_at``, the saved ``agent_id``
    and ``parent_spawn_ref`` unless empty, unknown keys of both (the saved session's win)."""
    if stored is None:
        return new
    first = new if new.created_at <= stored.created_at else stored
    return Session(new.session_id, new.agent_id or stored.agent_id, first.created_at,
                   max(stored.last_active_at, new.last_active_at), first.formation,
                   new.parent_spawn_ref if new.parent_spawn_ref is not None else stored.parent_spawn_ref,
                   [], {**stored.extra, **new.extra}, _merged_preserved(stored, new))


def _merged_preserved(stored: Session, new: Session) -> Any:
    if stored.preserved is None or new.preserved is not None:
        return new.preserved
    return stored.preserved  # raw timestamps are written only while they still hold their values


@dataclass
class SavePlan:
    """What one save writes: the merged header (JSON; None when unchanged) and the loops."""

    header: dict[str, Any]
    header_changed: bool
    loops: list[EncodedLoop]
    unchanged: dict[str, bytes] = field(default_factory=dict)  # loops found stored as given

    @property
    def empty(self) -> bool:
        return not self.loops and not self.header_changed


def plan_save(session: Session, encoded: Sequence[EncodedLoop], stored_header: dict[str, Any] | None,
              stored: Mapping[str, bytes], seen: Mapping[str, bytes], where: str) -> SavePlan:
    """Decide what a save writes, or raise :class:`SessionConflict` (see the module docstring).
    ``stored``: the stored digest of (at least) every loop of ``encoded`` whose digest differs from
    ``seen``, the digests this store object last read or wrote."""
    writes, unchanged, conflicts = [], {}, []
    for loop in encoded:
        if seen.get(loop.loop_id) == loop.digest:
            continue  # nothing new from this writer
        current = stored.get(loop.loop_id)
        if current == loop.digest:
            unchanged[loop.loop_id] = current
        elif current is None or seen.get(loop.loop_id) == current:
            writes.append(loop)
        else:
            conflicts.append(loop.loop_id)
    if conflicts:
        raise SessionConflict(
            f"cannot save session {session.session_id} to {where}: another writer stored loop(s) "
            f"{_some(conflicts)} since this store last read them; nothing was saved",
            where, session.session_id, tuple(conflicts))
    old = decode_session(stored_header, where, session.session_id, loops_required=False) if stored_header else None
    header = encode_header(merge_header(old, session))
    return SavePlan(header, header != stored_header, writes, unchanged)


def _some(names: Sequence[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


class Ledger:
    """The digest of every loop one store object last read or wrote, per session (thread-safe).
    Reads and updates cost what they touch, not the size of the session."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, dict[str, bytes]] = {}

    def seen(self, session_id: str, loop_ids: Iterable[str]) -> dict[str, bytes]:
        """What was seen of these loops (those never seen are absent)."""
        with self._lock:
            known = self._seen.get(session_id, {})
            return {loop_id: known[loop_id] for loop_id in loop_ids if loop_id in known}

    def learn(self, session_id: str, digests: Mapping[str, bytes], replace: bool = False) -> None:
        with self._lock:
            if replace or session_id not in self._seen:
                self._seen[session_id] = dict(digests)
            else:
                self._seen[session_id].update(digests)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._seen.pop(session_id, None)


def loop_digests(loops: Sequence[Any]) -> dict[str, bytes]:
    """Digests of loop JSON objects as parsed from storage (re-encoded in the stored form)."""
    return {loop["loop_id"]: digest(dumps(loop)) for loop in loops if isinstance(loop, dict) and "loop_id" in loop}


def default_sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where phi keeps sessions unless told otherwise: ``$PHI_HOME/sessions``, ``PHI_HOME`` defaulting
    to ``~/.phi`` (the ``phi`` command saves there, ``phi export`` reads from there)."""
    env = os.environ if env is None else env
    return Path(env.get("PHI_HOME") or Path("~/.phi").expanduser()) / "sessions"
