"""Typed errors of the session layer (SPEC §8 "Errors"; seed 000 REQ-217).

Every failure to read or write a stored session is a :class:`SessionError` naming the file (or
database) and, where known, the session id. A missing session is :class:`NotFound`; a file that is
not a readable phi session (bad JSON, wrong shape, a missing field, another session's data) is
:class:`CorruptSession`; a save that would overwrite another writer's loops is :class:`SessionConflict`.
"""

from __future__ import annotations

from ..errors import PhiError


class SessionError(PhiError):
    """A session could not be saved, loaded, listed or deleted. ``path``: the file involved."""

    def __init__(self, message: str, path: str | None = None, session_id: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.session_id = session_id


class NotFound(SessionError):
    """No session with this id is stored."""


class CorruptSession(SessionError):
    """A stored file or row is not a readable session (the message says what is wrong and where;
    ``field``: the JSON path of the offending value, when one is to blame)."""

    def __init__(self, message: str, path: str | None = None, session_id: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message, path, session_id)
        self.field = field


class UnencodableSession(SessionError):
    """A session holds a value that is not JSON data (a set, an object, NaN, one nested too deeply:
    in metadata or a tool result's details); nothing was written. ``field`` names where, when found."""

    def __init__(self, message: str, path: str | None = None, session_id: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message, path, session_id)
        self.field = field


class InvalidSessionId(SessionError, ValueError):
    """A session id that cannot be stored: it must be usable as a plain file name."""


class SessionConflict(SessionError):
    """A save would change loops that another writer stored since this store object last read them
    (two processes continued the same session from the same point). Nothing of that save was
    written; ``loop_ids`` names the loops in conflict (SPEC SESS-6)."""

    def __init__(self, message: str, path: str | None = None, session_id: str | None = None,
                 loop_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message, path, session_id)
        self.loop_ids = loop_ids
