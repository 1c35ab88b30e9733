"""JsonDirStore: one pretty-printed JSON file per session, ``{dir}/{session_id}.json`` (SPEC §13.2 SESS-6;
seed 000 REQ-216, REQ-217).

phi-core's layout: a flat directory, no index. Writes are atomic: the JSON goes to a hidden temp
file in the same directory (``.{session_id}.<random>.tmp``), is flushed and fsynced, then renamed
over the old file with ``os.replace`` and the directory is fsynced, so a crash or kill at any moment
leaves either the previous version or the new one — never a truncated file. Concurrent savers of
one session: the last rename wins, whole. Files are created readable by their owner only.

``list_ids`` orders by file modification time, newest first (ties, within the file system's clock
granularity, by id). Every visible entry of the directory must be a ``{valid id}.json`` file;
anything else is reported as :class:`CorruptSession`, never skipped. Hidden entries (a leading dot:
temp files of savers that were killed) are ignored.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile

from .errors import CorruptSession, NotFound, SessionError
from .model import Session
from .store import check_session_id, decode_session, encode_session

_SUFFIX = ".json"


class JsonDirStore:
    """Sessions as ``{directory}/{session_id}.json``; the directory is created on first save."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)

    def __repr__(self) -> str:
        return f"JsonDirStore({self.directory!r})"

    def path_of(self, session_id: str) -> str:
        """The file a session is stored in (the id is checked first)."""
        return os.path.join(self.directory, check_session_id(session_id) + _SUFFIX)

    def save(self, session: Session) -> None:
        path = self.path_of(session.session_id)
        data = encode_session(session, indent=2)
        try:
            os.makedirs(self.directory, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=f".{session.session_id}.", suffix=".tmp", dir=self.directory)
        except OSError as error:
            raise SessionError(f"cannot save session {session.session_id} in {self.directory}: {error}", path,
                               session.session_id) from None
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, path)
        except BaseException as error:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(error, OSError):
                raise SessionError(f"cannot save session {session.session_id} to {path}: {error}", path,
                                   session.session_id) from None
            raise
        self._sync_directory()

    def load(self, session_id: str) -> Session:
        path = self.path_of(session_id)
        try:
            with open(path, "rb") as source:
                data = source.read()
        except FileNotFoundError:
            raise NotFound(f"no session {session_id} in {self.directory} ({path} does not exist)", path,
                           session_id) from None
        except OSError as error:
            raise SessionError(f"cannot read session file {path}: {error}", path, session_id) from None
        return decode_session(data, path, session_id)

    def list_ids(self) -> list[str]:
        found: list[tuple[int, str]] = []
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            return []
        except OSError as error:
            raise SessionError(f"cannot list session directory {self.directory}: {error}", self.directory) from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            mtime = self._mtime(entry)
            if mtime is not None:
                found.append((-mtime, entry.name[: -len(_SUFFIX)]))
        found.sort()
        return [session_id for _, session_id in found]

    def delete(self, session_id: str) -> None:
        path = self.path_of(session_id)
        try:
            os.unlink(path)
        except FileNotFoundError:
            raise NotFound(f"no session {session_id} in {self.directory} ({path} does not exist)", path,
                           session_id) from None
        except OSError as error:
            raise SessionError(f"cannot delete session file {path}: {error}", path, session_id) from None
        self._sync_directory()

    def load_for_agent(self, agent_id: str) -> list[Session]:
        out = []
        for session_id in self.list_ids():
            try:
                session = self.load(session_id)
            except NotFound:
                continue  # deleted since it was listed
            if session.agent_id == agent_id:
                out.append(session)
        return out

    # ------------------------------------------------------------------ helpers

    def _mtime(self, entry: os.DirEntry[str]) -> int | None:
        """Modification time of a session file; None if it vanished; CorruptSession if foreign."""
        name, path = entry.name, entry.path
        try:
            is_file = entry.is_file(follow_symlinks=False)
            stat = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            return None  # deleted while listing
        except OSError as error:
            raise SessionError(f"cannot stat {path}: {error}", path) from None
        stem = name[: -len(_SUFFIX)] if name.endswith(_SUFFIX) else None
        if not is_file or stem is None:
            raise CorruptSession(f"{path} is not a session file: the store directory holds only "
                                 "{session_id}.json files", path)
        try:
            check_session_id(stem)
        except SessionError:
            raise CorruptSession(f"{path} is not a session file: {stem!r} is not a valid session id", path) from None
        return stat.st_mtime_ns

    def _sync_directory(self) -> None:
        """Make the rename or unlink itself durable."""
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
