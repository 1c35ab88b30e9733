"""The session store interface and what its implementations share (SPEC §13.2 SESS-6; seed 000
REQ-216, REQ-217).

A store keeps whole :class:`~phi.session.model.Session` objects under their ``session_id``:
``save`` (insert or replace), ``load``, ``list_ids`` (most recently saved first), ``delete``
(:class:`NotFound` if absent) and ``load_for_agent``. Implementations: :class:`JsonDirStore`
(``phi.session.json_store``) and :class:`SqliteStore` (``phi.session.sqlite_store``).

Session ids must work as plain file names in every store, so sessions move freely between them:
1–200 characters from ``A-Z a-z 0-9 . _ -``, not starting with a dot.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Mapping, Protocol, runtime_checkable

from ..errors import DecodeError
from .errors import CorruptSession, InvalidSessionId, SessionError
from .model import Session

_SESSION_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\Z")


@runtime_checkable
class SessionStore(Protocol):
    """Where whole sessions are kept by id (SPEC SESS-6): ``save`` replaces, ``list_ids`` and
    ``load_for_agent`` give the newest save first, ``load``/``delete`` of an absent id raise
    ``NotFound``. Implemented by ``JsonDirStore`` and ``SqliteStore``."""

    def save(self, session: Session) -> None:
        """Store ``session``, replacing any stored session with the same id."""
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


def encode_session(session: Session, indent: int | None) -> bytes:
    """The session as UTF-8 JSON; :class:`SessionError` if some value (metadata, tool details) is
    not JSON data."""
    try:
        return json.dumps(session.to_json(), indent=indent, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as error:
        raise SessionError(f"session {session.session_id} cannot be saved as JSON: {error}",
                           session_id=session.session_id) from None


def decode_session(data: bytes | str, where: str, expected_id: str | None) -> Session:
    """Parse a stored session; :class:`CorruptSession` naming ``where`` for anything unreadable."""
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CorruptSession(f"{where} is not valid JSON: {error}", where, expected_id) from None
    try:
        session = Session.from_json(raw)
    except (DecodeError, ValueError) as error:
        raise CorruptSession(f"{where} is not a phi session: {error}", where, expected_id) from None
    if expected_id is not None and session.session_id != expected_id:
        raise CorruptSession(f"{where} holds session {session.session_id!r}, not {expected_id!r}", where, expected_id)
    return session


def default_sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where phi keeps sessions unless told otherwise: ``$PHI_HOME/sessions``, ``PHI_HOME`` defaulting
    to ``~/.phi`` (the ``phi`` command saves there, ``phi export`` reads from there)."""
    env = os.environ if env is None else env
    return Path(env.get("PHI_HOME") or Path("~/.phi").expanduser()) / "sessions"
