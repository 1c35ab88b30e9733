"""Typed errors of the session layer (SPEC §8 "Errors"; seed 000 REQ-217).

Every failure to read or write a stored session is a :class:`SessionError` naming the file (or
database) and, where known, the session id. A missing session is :class:`NotFound`; a file that is
not a readable phi session (bad JSON, wrong shape, another session's data) is :class:`CorruptSession`.
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
    """A stored file or row is not a readable session (the message says what is wrong and where)."""


class InvalidSessionId(SessionError, ValueError):
    """A session id that cannot be stored: it must be usable as a plain file name."""
