"""What the model last saw of each file, so a write cannot silently undo someone else's change
(SPEC §9.1 "Read before write").

A coding agent edits from the text it read. When the user (an editor, a formatter, another process)
changes the file afterwards, a write or edit based on the old text overwrites that change without
anyone noticing. :class:`FileRecord` keeps, per path, the :class:`FileStamp` of the version the model
last read or wrote through the tools: for files up to :data:`DIGEST_LIMIT` bytes a SHA-256 of the
content, for larger ones their identity (size, modification and change times, device and inode).
Before ``write_file`` or ``edit_file`` replaces an existing file, :meth:`FileRecord.check` compares
the file with that stamp:

* no record (the model never read the file): refused — a file may be *created* without a read, not
  overwritten;
* a file that exists but cannot be read (no permission): refused — what cannot be checked is not
  replaced;
* a file the model read that is gone now (deleted by the user or a command): refused once, with a
  message saying so, and forgotten — the model decides, and a write after that creates it;
* a file up to the limit: its content is hashed *every time* and must have the recorded digest. Size
  and modification time prove nothing: ``touch -r``, ``cp -p``, ``rsync -a``, ``tar x`` and editors
  that restore the time leave a same-size edit with the old ones (a ``touch`` alone is still no
  change: same digest);
* a larger file: its identity must be unchanged. The change time (``ctime``) cannot be set back by
  any of those programs, and the kernel gives it a fine-grained value once it has been looked at;
* otherwise refused with a message telling the model to read the file again.

A passed check returns an :class:`Expected`, which the write runs once more against the file that is
about to be replaced, after the new content is in its temporary file and right before the rename
(:func:`phi.tools.fs_safe.write_beneath`); a change that landed in between refuses the write too.

The stamp recorded after a read is taken from the very file object the read used, and the stamp
recorded after a write is the digest of the bytes written, so a change made by someone else just
after the read or the write is never mistaken for something the model has seen. Reading any part of
a file (``offset``/``limit``) counts as reading it, as in the agents this rule comes from.
Everything goes through the environment (``open_read``), so the rule works for any
:class:`~phi.tools.environment.ExecutionEnvironment`; where the file object has no descriptor, only
the size and the digest are compared.
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from ..errors import ToolError
from .fs_safe import NotRegularFileError

if TYPE_CHECKING:
    from .environment import ExecutionEnvironment

__all__ = ["DIGEST_LIMIT", "Expected", "FileStamp", "FileRecord", "fstat_of", "stamp_of", "stamp_of_bytes",
           "stamp_of_handle"]

#: Files up to this size are compared by a content digest (larger ones by their identity).
DIGEST_LIMIT = 16 << 20
_CHUNK = 1 << 20
#: Errors of the path itself (not of the file): the write fails on them too and says why.
_PATH_ERRORS = frozenset({errno.ELOOP, errno.ENAMETOOLONG, errno.EINVAL})


@dataclass(frozen=True)
class FileStamp:
    """What identifies one version of a file: ``size``, ``digest`` (SHA-256 of the content; None for
    a file over :data:`DIGEST_LIMIT`) and, when the environment can say, ``mtime_ns``, ``ctime_ns``
    and ``inode`` (``(st_dev, st_ino)``). A stamp with neither a digest nor a full identity matches
    no file (the file changed while it was being read)."""

    size: int
    mtime_ns: int | None
    digest: str | None
    ctime_ns: int | None = None
    inode: tuple[int, int] | None = None

    def identity(self) -> tuple[int, int, int, tuple[int, int]] | None:
        if self.mtime_ns is None or self.ctime_ns is None or self.inode is None:
            return None
        return self.size, self.mtime_ns, self.ctime_ns, self.inode

    def agrees(self, other: FileStamp) -> bool:
        """Whether ``other`` is the same version: the same digest when this stamp has one, else the
        same identity."""
        if self.size != other.size:
            return False
        if self.digest is not None:
            return other.digest == self.digest
        mine = self.identity()
        return mine is not None and mine == other.identity()


def fstat_of(fh: BinaryIO) -> os.stat_result | None:
    """``os.fstat`` of the file object, or None when it has no descriptor (a remote environment's)."""
    try:
        return os.fstat(fh.fileno())
    except (OSError, AttributeError, ValueError):
        return None


def _from_stat(info: os.stat_result, digest: str | None) -> FileStamp:
    return FileStamp(info.st_size, info.st_mtime_ns, digest, info.st_ctime_ns, (info.st_dev, info.st_ino))


def _digest(fh: BinaryIO) -> tuple[int, str]:
    sha = hashlib.sha256()
    size = 0
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            return size, sha.hexdigest()
        size += len(chunk)
        sha.update(chunk)


def stamp_of_bytes(data: bytes) -> FileStamp:
    """The stamp of a file holding exactly ``data`` (what a write just wrote)."""
    return FileStamp(len(data), None, hashlib.sha256(data).hexdigest())


def stamp_of_handle(fh: BinaryIO, *, since: os.stat_result | None = None, digest_limit: int = DIGEST_LIMIT,
                    digest: bool = True) -> FileStamp:
    """The stamp of the open file ``fh`` (read again from its start). ``since``: its ``fstat`` when it
    was opened, so a change made while it was read — before this call or during it — yields a stamp
    that matches nothing. The content is hashed when ``digest`` and the file is at most
    ``digest_limit`` bytes."""
    before = fstat_of(fh)
    first = since if since is not None else before
    if before is not None and (not digest or before.st_size > digest_limit):
        return _from_stat(before, None) if _same(first, before) else FileStamp(before.st_size, None, None)
    fh.seek(0)
    size, hexdigest = _digest(fh)
    after = fstat_of(fh)
    if first is None or after is None:
        return FileStamp(size, None, hexdigest)
    if not _same(first, after) or size != after.st_size:
        return FileStamp(after.st_size, None, None)  # changed while it was read: no version of it
    return _from_stat(after, hexdigest)


def _same(a: os.stat_result | None, b: os.stat_result | None) -> bool:
    if a is None or b is None:
        return a is b
    return ((a.st_size, a.st_mtime_ns, a.st_ctime_ns, a.st_dev, a.st_ino)
            == (b.st_size, b.st_mtime_ns, b.st_ctime_ns, b.st_dev, b.st_ino))


def stamp_of(env: ExecutionEnvironment, path: str, *, digest: bool = True) -> FileStamp:
    """The stamp of the file ``path`` now (OSError when it cannot be opened). Without ``digest``
    only the identity is taken when the environment gives it."""
    with env.open_read(path) as fh:
        return stamp_of_handle(fh, digest=digest)


def _current(known: FileStamp, fh: BinaryIO) -> FileStamp:
    """The stamp of ``fh`` as far as comparing it with ``known`` needs: hashed (whatever its size)
    when ``known`` has a digest and the sizes agree."""
    info = fstat_of(fh)
    if info is not None and (info.st_size != known.size or known.digest is None):
        return _from_stat(info, None)
    return stamp_of_handle(fh, since=info, digest_limit=max(known.size, DIGEST_LIMIT))


@dataclass(frozen=True)
class Expected:
    """What the file at ``path`` must still be when a write replaces it: absent (``stamp`` None) or
    the version ``stamp``. Called with the file about to be replaced (open for reading; None when
    there is none), it raises :class:`ToolError` telling the model to read the file again when the
    file is something else — so the write is abandoned and the other change kept."""

    path: str
    shown: str
    stamp: FileStamp | None

    @property
    def exact(self) -> bool:
        """Compared by content (or absence), which renaming the file does not change: the write may
        check the file it displaced once more after swapping the new one in (fs_safe)."""
        return self.stamp is None or self.stamp.digest is not None

    def __call__(self, fh: BinaryIO | None) -> None:
        if self.stamp is None:
            if fh is not None:
                raise ToolError(f"{self.shown} was created by someone else (the user or another program) "
                                "while it was being written; your change was not applied. Read it, then "
                                "write or edit it again.")
            return
        if fh is None:
            raise ToolError(f"{self.shown} was deleted or moved by someone else (the user or another program) "
                            "while it was being written; your change was not applied. Check it (read_file), "
                            "then write it again if it is still wanted.")
        if not self.stamp.agrees(_current(self.stamp, fh)):
            raise ToolError(f"{self.shown} was changed by someone else (the user or another program) while "
                            "it was being written; your change was not applied and theirs is kept. Read it "
                            "again, then redo your change.")

    def kept(self, error: BaseException, where: str) -> BaseException:
        """``error`` saying also that a version someone else wrote while the file was replaced is kept
        as the file ``where`` (absolute) beside it — called by the write instead of removing it."""
        backup = os.path.join(os.path.dirname(self.shown), os.path.basename(where))
        note = (f" Another version of {self.shown}, written by someone else while yours was being put in "
                f"place, is kept beside it as {backup} so that nothing is lost: tell the user, and do not "
                "delete it yourself.")
        if isinstance(error, ToolError):
            return ToolError(f"{error}{note}")
        return error


class FileRecord:
    """The stamps of the files one agent or session has read or written (thread-safe).

    ``enabled`` False turns :meth:`check` off; the record is still kept.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._stamps: dict[str, FileStamp] = {}
        self._lock = threading.Lock()

    def __contains__(self, path: object) -> bool:
        with self._lock:
            return path in self._stamps

    def remember(self, env: ExecutionEnvironment, path: str) -> None:
        """Record the file at the absolute ``path`` as it is now. Prefer :meth:`note` with the stamp
        of what was actually read or written: the file may have changed since."""
        try:
            stamp = stamp_of(env, path)
        except OSError:
            self.forget(path)
            return
        self.note(path, stamp)

    def note(self, path: str, stamp: FileStamp) -> None:
        """Record ``stamp`` as the version of the absolute ``path`` the model now knows."""
        with self._lock:
            self._stamps[path] = stamp

    def forget(self, path: str) -> None:
        with self._lock:
            self._stamps.pop(path, None)

    def check(self, env: ExecutionEnvironment, path: str, shown: str) -> Expected | None:
        """Raise :class:`ToolError` if replacing the file at the absolute ``path`` would overwrite
        something the model has not seen (see the module docstring). Returns what the file must
        still be when it is replaced (absent, for a missing file), or None when the check is off or
        the path names no regular file (a directory, a FIFO...: the write itself refuses it and says
        why). A file that cannot be read (no permission) is refused: it cannot be checked. A file the
        model read that is gone now is refused once, and forgotten (the next write creates it)."""
        if not self.enabled:
            return None
        with self._lock:
            known = self._stamps.get(path)
        try:
            fh = env.open_read(path)
        except FileNotFoundError:
            if known is not None:
                self.forget(path)  # said once: a write after this creates the file anew
                raise ToolError(f"{shown} was deleted by someone else (the user, another program or a command) "
                                "since it was last read in this session; your change was not applied. Read the "
                                "directory again (list it), and write the file again only if it is still "
                                "wanted.") from None
            return Expected(path, shown, None)
        except (IsADirectoryError, NotADirectoryError, NotRegularFileError):
            return None  # no regular file there: the write refuses it and says why
        except OSError as exc:
            if exc.errno in _PATH_ERRORS:
                return None
            raise ToolError(f"{shown} cannot be read ({exc.strerror or exc}), so it cannot be checked for "
                            "changes made outside this conversation; it was not replaced. Make it readable "
                            "and read it first if it should be written.") from None
        with fh:
            if known is None:
                raise ToolError(f"{shown} already exists and has not been read in this session. Read it first "
                                "(read_file), then write or edit it, so that no change made outside this "
                                "conversation is lost.")
            now = _current(known, fh)
        if not known.agrees(now):
            raise ToolError(f"{shown} has changed since it was last read in this session (by the user or "
                            "another program). Read it again before writing or editing it; your change was not "
                            "applied.")
        return Expected(path, shown, known)
