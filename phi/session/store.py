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

Two writers of one session: both stores also have ``claim(session, avoid)`` (see :class:`Claim`),
which an Agent uses to store a run's ``Pending`` record as the run starts, so that concurrent
writers never share a loop id and a run that continues a point another writer already continued
becomes a branch beside it (SPEC SESS-6, SESS-7). For a store of your own without ``claim`` an
Agent loads the session and saves the placeholders instead, trying again past the ids of a save
that meets another writer's (:class:`SessionConflict`).

Session ids must work as plain file names in every store, so sessions move freely between them:
1–200 characters from ``A-Z a-z 0-9 . _ -``, not starting with a dot.

What a store writes holds no secret phi knows of (SPEC §17 OTEL-11): :func:`encode_loops` and
:func:`encode_header` replace each by ``***`` (:mod:`phi.providers.secret_registry`) before the
digests are taken, so a loop is compared with its stored version as stored.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, Protocol, Sequence, cast, runtime_checkable

from ..errors import DecodeError
from ..ids import loop_key, loop_number
from ..json_values import is_array, is_object
from ..providers.secret_registry import redact_encoded
from .errors import CorruptSession, InvalidSessionId, SessionConflict, SessionError, UnencodableSession
from .model import (
    LoopRecord,
    Session,
    header_to_json,
    loop_from_json,
    loop_to_json,
    replace_loops,
    session_from_json,
)

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
    """A loop as a store writes it: ``text`` (its JSON), ``digest`` (of that JSON without
    ``children_loop_ids``, see :func:`core_digest`) and the loop it ``follows``."""

    loop_id: str
    text: str
    digest: bytes
    follows: str | None = None
    claimant: Any = None  # ``claimed_by`` of a claim's placeholder record (see :func:`claimant`)


def encode_loops(session: Session) -> list[EncodedLoop]:
    """The session's loops as JSON text; :class:`SessionError` if some value (metadata, tool
    details) is not JSON data, a loop id repeats or a loop belongs to another session."""
    out: list[EncodedLoop] = []
    ids: set[str] = set()
    for record in session.loops:
        if record.loop_id in ids or record.session_id != session.session_id:
            problem = "twice" if record.loop_id in ids else f"of session {record.session_id!r}"
            raise SessionError(f"session {session.session_id} cannot be saved: it holds loop {record.loop_id} "
                               f"{problem}", session_id=session.session_id)
        ids.add(record.loop_id)
        data = loop_to_json(record)
        what = f"loop {record.loop_id}"
        text = _encode(data, session.session_id, what)
        data, text = redact_encoded(data, text, lambda clean: _encode(clean, session.session_id, what))
        out.append(EncodedLoop(record.loop_id, text, core_digest(data), follows_of(data), data.get("claimed_by")))
    return out


def core_digest(loop: dict[str, Any]) -> bytes:
    """The digest two writers' versions of a loop are compared by: its JSON without
    ``children_loop_ids``. A loop's children are derived data in a store (every same-session loop
    naming it as parent is its child, :func:`complete_children`), so two writers that continued
    the same loop each add a child without a conflict, and neither rewrites the loop for it."""
    return digest(dumps({key: value for key, value in loop.items() if key != "children_loop_ids"}))


def follows_of(loop: Any) -> str | None:
    """The loop a stored loop (JSON) continues: its parent, else the loop its recorded history
    continues (SESS-8) — how two writers that continued the same point are told apart."""
    if not is_object(loop):
        return None
    parent = loop.get("parent_loop_id")
    history = loop.get("history")
    after = history.get("after_loop_id") if is_object(history) else None
    found = parent if isinstance(parent, str) else after
    return found if isinstance(found, str) else None


def _encode(data: Any, session_id: str, what: str) -> str:
    try:
        text: str = dumps(data)
        text.encode("utf-8")  # lone surrogates cannot be stored
        return text
    except (TypeError, ValueError, RecursionError) as error:
        field = _culprit(data, "")
        where = f"{what}, field {field.lstrip('.')}" if field else what
        raise UnencodableSession(f"session {session_id} cannot be saved as JSON: {where}: {error}",
                                 session_id=session_id, field=where) from None


def _culprit(data: Any, path: str, depth: int = 8) -> str:
    """The JSON path of the value that cannot be written, as far down as ``depth`` levels (found by
    encoding parts again: only ever done for a save that fails)."""
    items: Iterable[tuple[object, object]] = ()
    if isinstance(data, dict):
        items = cast("dict[object, object]", data).items()  # any keys: not yet known to be JSON data
    elif is_array(data):
        items = enumerate(data)
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
    text = _encode(header, session.session_id, "the header")
    return redact_encoded(header, text, lambda clean: _encode(clean, session.session_id, "the header"))[0]


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
    unchanged: dict[str, bytes] = field(default_factory=dict[str, bytes])  # loops found stored as given

    @property
    def empty(self) -> bool:
        return not self.loops and not self.header_changed


def plan_save(session: Session, encoded: Sequence[EncodedLoop], stored_header: dict[str, Any] | None,
              stored: Mapping[str, bytes], seen: Mapping[str, bytes], where: str) -> SavePlan:
    """Decide what a save writes, or raise :class:`SessionConflict` (see the module docstring).
    ``stored``: the stored digest of (at least) every loop of ``encoded`` whose digest differs from
    ``seen``, the digests this store object last read or wrote."""
    writes: list[EncodedLoop] = []
    unchanged: dict[str, bytes] = {}
    conflicts: list[str] = []
    for loop in encoded:
        if seen.get(loop.loop_id) == loop.digest:
            continue  # nothing new from this writer
        current = stored.get(loop.loop_id)
        if current is not None and current == loop.digest:
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
    """Digests (:func:`core_digest`) of loop JSON objects as parsed from storage."""
    return {loop["loop_id"]: core_digest(loop) for loop in loops if is_object(loop) and "loop_id" in loop}


def complete_children(loops: list[LoopRecord]) -> list[LoopRecord]:
    """``loops`` (in start order) with every loop that names a loop of the same session as its
    parent among that loop's ``children_loop_ids`` (SPEC SESS-2, SESS-6): writers add children to
    a stored loop by storing the child, never by rewriting the parent."""
    by_id = {record.loop_id: record for record in loops}
    for record in loops:
        parent = by_id.get(record.parent_loop_id) if record.parent_loop_id is not None else None
        if parent is not None and parent is not record and record.loop_id not in parent.children_loop_ids:
            parent.children_loop_ids.append(record.loop_id)
    return loops


# --------------------------------------------------------------------------- claiming loop ids


@dataclass(frozen=True)
class Claim:
    """What :meth:`claim` did (SPEC SESS-6): ``loop_ids`` maps each proposed loop id to the one the
    run got (another number when a writer had stored or claimed the proposed one); ``others`` maps
    each loop id the run got to the stored loops of other runs that continue the same loop, oldest
    first (the caller tells apart the ones it already knew)."""

    loop_ids: dict[str, str]
    others: dict[str, tuple[str, ...]]


def plan_claim(proposed: Sequence[str], taken: Collection[str]) -> dict[str, str]:
    """Proposed loop id -> a loop id not in ``taken`` and not given to another proposal: the
    proposed one when free, else ``{key}.{N}`` past the highest N of its key."""
    given: set[str] = set()
    out: dict[str, str] = {}
    for loop_id in proposed:
        final = loop_id
        if final in taken or final in given:
            key = loop_key(loop_id)
            numbers = (loop_number(i) for i in itertools.chain(taken, given) if loop_key(i) == key)
            final = f"{key}.{max(numbers, default=0) + 1}"
        given.add(final)
        out[loop_id] = final
    return out


def renamed_loops(loops: Sequence[LoopRecord], names: Mapping[str, str]) -> list[LoopRecord]:
    """Copies of ``loops`` under the ids ``names`` gives them."""
    out: list[LoopRecord] = []
    for record in loops:
        copy = record.copy()
        copy.loop_id = names.get(record.loop_id, record.loop_id)
        out.append(copy)
    return out


def claimed_others(claimed: Sequence[EncodedLoop], follows: Mapping[str, str | None],
                   claims: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """For each claimed loop, the stored loops (not claimed with it) that continue the loop it
    follows — leaving out the placeholders of claims whose process is known to be dead (``claims``:
    loop -> ``claimed_by`` of loops whose stored version is still a claim's placeholder)."""
    mine = {loop.loop_id for loop in claimed}
    out: dict[str, tuple[str, ...]] = {}
    for loop in claimed:
        if loop.follows is not None:
            out[loop.loop_id] = tuple(i for i, f in follows.items() if f == loop.follows and i not in mine
                                      and not claimant_dead(claims.get(i)))
    return out


def claimant() -> dict[str, Any]:
    """Who is claiming (stored as a placeholder's ``claimed_by``): host, process id and the
    process's start time (Linux; 0 elsewhere), so a reader can tell a writer that died."""
    import socket

    return {"host": socket.gethostname(), "pid": os.getpid(), "start": _process_start(os.getpid())}


def claimant_dead(info: Any) -> bool:
    """True only when ``info`` (a ``claimed_by``) names a process of this host that is gone: its pid
    is free, or now belongs to a process started at another time."""
    if not is_object(info) or not isinstance(info.get("pid"), int) or not isinstance(info.get("host"), str):
        return False
    import socket

    if info["host"] != socket.gethostname():
        return False  # another machine's writer: assumed alive
    try:
        os.kill(info["pid"], 0)
    except ProcessLookupError:
        return True
    except OSError:
        pass  # alive, someone else's
    start = info.get("start")
    return isinstance(start, int) and start != 0 and _process_start(info["pid"]) not in (start, 0)


def _process_start(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[19])  # starttime, field 22 of proc(5)
    except (OSError, IndexError, ValueError):
        return 0


def follows_of_record(record: LoopRecord) -> str | None:
    """:func:`follows_of` of a loop record."""
    return record.parent_loop_id or (record.history.after_loop_id if record.history is not None else None)


def children_first(sessions: Sequence[Session]) -> list[Session]:
    """``sessions`` in the order to save them (SPEC SESS-7): every sub-agent session before the
    session whose loop spawned it, so a save interrupted between the two never leaves a stored link
    to a session that is not stored; otherwise in the given order."""
    by_id = {session.session_id: session for session in sessions}

    def depth(session: Session) -> int:
        seen, level = {session.session_id}, 0
        ref = session.parent_spawn_ref
        while ref is not None and ref.parent_session_id in by_id and ref.parent_session_id not in seen:
            seen.add(ref.parent_session_id)
            level += 1
            ref = by_id[ref.parent_session_id].parent_spawn_ref
        return level

    order = {session.session_id: index for index, session in enumerate(sessions)}
    return sorted(sessions, key=lambda session: (-depth(session), order[session.session_id]))


def spawned_sessions(session: Session) -> set[str]:
    """The ids of the sub-agent sessions ``session``'s loops link to."""
    return {ref.child_session_id for record in session.loops for ref in record.child_loop_refs
            if ref.child_session_id != session.session_id}


UNENCODABLE = "<not JSON data: {}>"  # what stands for a value a save could not write (see :func:`jsonable`)
DEEPEST = 200  # levels of nesting :func:`jsonable` keeps


def jsonable(data: Any, depth: int = DEEPEST) -> Any:
    """``data`` (a loop's JSON form) with every value that is not JSON data replaced by a marker
    string naming its type (``<not JSON data: set>``), NaN and infinities too, and whatever lies
    deeper than ``depth`` levels — so a session with one bad value can still be saved whole."""
    if isinstance(data, str) or data is None or isinstance(data, bool) or isinstance(data, int):
        return data
    if isinstance(data, float):
        return data if math.isfinite(data) else UNENCODABLE.format(repr(data))
    if depth <= 0:
        return UNENCODABLE.format("nested too deeply")
    if isinstance(data, dict):
        entries = cast("dict[object, object]", data)  # any keys: this is where the ones JSON cannot hold are found
        return {key if isinstance(key, str) else UNENCODABLE.format(type(key).__name__): jsonable(value, depth - 1)
                for key, value in entries.items()}
    if isinstance(data, (list, tuple)):
        return [jsonable(value, depth - 1) for value in cast("list[object] | tuple[object, ...]", data)]
    return UNENCODABLE.format(type(data).__name__)


def jsonable_session(session: Session) -> Session:
    """``session`` with every loop passed through :func:`jsonable` (SPEC SESS-7: an Agent saves this
    when the session itself cannot be written, rather than never saving it again)."""
    loops = [loop_from_json(jsonable(loop_to_json(record)), "loop") for record in session.loops]
    return replace_loops(session, loops)


def default_sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where phi keeps sessions unless told otherwise: ``$PHI_HOME/sessions``, ``PHI_HOME`` defaulting
    to ``~/.phi`` (the ``phi`` command saves there, ``phi export`` reads from there)."""
    env = os.environ if env is None else env
    # os.path's expanduser, as the phi command's: an unknown ~user stays as it is instead of raising
    return Path(os.path.expanduser(env.get("PHI_HOME") or "~/.phi")) / "sessions"
