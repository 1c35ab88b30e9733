"""What the model last saw of each file, so a write cannot silently undo someone else's change
(SPEC §9.1 "Read before write").

A coding agent edits from the text it read. When the user (an editor, a formatter, another process)
changes the file afterwards, a write or edit based on the old text overwrites that change without
anyone noticing. :class:`FileRecord` keeps, per path, the file's stamp — size, modification time and,
for files up to :data:`DIGEST_LIMIT` bytes, a SHA-256 of the content — as of the model's last read or
write through the tools. Before ``write_file`` or ``edit_file`` replaces an existing file,
:meth:`FileRecord.check` compares the file with that stamp:

* no record (the model never read the file): refused — a file may be *created* without a read, not
  overwritten;
* same size and modification time: allowed;
* otherwise the content is hashed: the same digest (the file was only touched) is allowed; anything
  else is refused with a message telling the model to read the file again.

Reading any part of a file (``offset``/``limit``) counts as reading it, as in the agents this rule
comes from. Everything goes through the environment (``open_read``), so the rule works for any
:class:`~phi.tools.environment.ExecutionEnvironment`; where the file object has no descriptor, only
the size and the digest are compared.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from ..errors import ToolError

if TYPE_CHECKING:
    from .environment import ExecutionEnvironment

__all__ = ["DIGEST_LIMIT", "FileStamp", "FileRecord", "stamp_of"]

#: Files up to this size get a content digest (larger ones are compared by size and time only).
DIGEST_LIMIT = 16 << 20
_CHUNK = 1 << 20


@dataclass(frozen=True)
class FileStamp:
    """What identifies one version of a file: ``size``, ``mtime_ns`` (None when the environment
    cannot say) and ``digest`` (None for files over :data:`DIGEST_LIMIT`)."""

    size: int
    mtime_ns: int | None
    digest: str | None


def _fstat(fh: BinaryIO) -> tuple[int, int] | None:
    try:
        info = os.fstat(fh.fileno())
    except (OSError, AttributeError, ValueError):
        return None
    return info.st_size, info.st_mtime_ns


def _digest(fh: BinaryIO) -> tuple[int, str]:
    sha = hashlib.sha256()
    size = 0
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            return size, sha.hexdigest()
        size += len(chunk)
        sha.update(chunk)


def stamp_of(env: ExecutionEnvironment, path: str, *, digest: bool = True) -> FileStamp:
    """The stamp of the file ``path`` now (OSError when it cannot be opened). Without ``digest``
    only size and time are taken when the environment gives them."""
    with env.open_read(path) as fh:
        before = _fstat(fh)
        if before is not None and (not digest or before[0] > DIGEST_LIMIT):
            return FileStamp(before[0], before[1], None)
        size, hexdigest = _digest(fh)
        after = _fstat(fh)
    if before is None or after is None:
        return FileStamp(size, None, hexdigest)
    # changed while it was hashed: the digest belongs to no stamp
    return FileStamp(after[0], after[1], hexdigest if before == after else None)


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
        """Record the file at the absolute ``path`` as the model now knows it (after a read or write)."""
        try:
            stamp = stamp_of(env, path)
        except OSError:
            self.forget(path)
            return
        with self._lock:
            self._stamps[path] = stamp

    def forget(self, path: str) -> None:
        with self._lock:
            self._stamps.pop(path, None)

    def check(self, env: ExecutionEnvironment, path: str, shown: str) -> None:
        """Raise :class:`ToolError` if replacing the file at the absolute ``path`` would overwrite
        something the model has not seen (see the module docstring). A missing file passes."""
        if not self.enabled:
            return
        with self._lock:
            known = self._stamps.get(path)
        try:
            now = stamp_of(env, path, digest=False)
        except FileNotFoundError:
            return
        except OSError:  # not a readable regular file: the write itself reports why
            return
        if known is None:
            raise ToolError(f"{shown} already exists and has not been read in this session. Read it first "
                            "(read_file), then write or edit it, so that no change made outside this "
                            "conversation is lost.")
        if known.mtime_ns is not None and (now.size, now.mtime_ns) == (known.size, known.mtime_ns):
            return
        if known.digest is not None:
            try:
                now = stamp_of(env, path)
            except OSError:
                return
            if now.digest == known.digest:
                with self._lock:
                    self._stamps[path] = now
                return
        raise ToolError(f"{shown} has changed since it was last read in this session (by the user or "
                        "another program). Read it again before writing or editing it; your change was not "
                        "applied.")
