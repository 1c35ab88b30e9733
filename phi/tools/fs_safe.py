"""File access without a check-then-use window (SPEC §9.1 "Write confinement", "Reading files").

Writes are resolved beneath a trusted root directory one component at a time, each directory opened
relative to the previous one's file descriptor with ``O_NOFOLLOW`` (``openat``-style walking through
``dir_fd``). Symbolic links are followed in user space: a link whose target stays beneath the root is
honoured, one that leads out (``..`` past the root, an absolute target elsewhere) is refused with
:class:`ConfinementError`. Because every step works on a descriptor of a directory already known to
be inside the root, swapping a directory for a symlink while a write is under way cannot redirect
it: the ``O_NOFOLLOW`` open fails instead.

The file itself is replaced by writing a new file next to it and renaming it over the old name
(:func:`write_beneath`). That never writes through a hard link or into a FIFO or device, keeps the
old file's permission bits (as they are right before the rename: a ``chmod`` made meanwhile is
kept), and readers never see a half-written file. The price: a hard link to the old file keeps the
old content (the link is broken, not written through), and the new file belongs to the writing user.
A symlink at the path is written through: its target is replaced, the link stays. A file no one may
write (no ``w`` bit at all, e.g. 0444) is not replaced: the directory's permission would allow the
rename, but whoever made the file read-only did not mean it to change. A caller's ``verify`` runs
on the file about to be replaced once the new content is in the temporary file, right before the
rename, so a change someone else made meanwhile can stop the write
(:class:`phi.tools.file_state.Expected`); with ``renameat2`` even a change landing after that check
is caught (:func:`write_beneath`).

Nothing someone else wrote is ever removed: a temporary file is deleted only while it is the one
this write made and holds exactly the bytes written (compared byte for byte); anything else found
there — the version an exchange displaced, a save that landed in phi's file — is kept beside the
file as ``NAME.phi-kept-XXXXXX``, logged as a warning and named in the verify's error
(``Expected.kept``).

Reads that must stay beneath a root (a skill's files, SPEC §12.3) use :func:`open_beneath`, the same
walk ending in an ``O_NOFOLLOW`` open. Other reads (:func:`open_regular`) are not confined. Both open
only regular files: directories, FIFOs, sockets and devices (``/dev/zero``) are refused before
anything could block or grow without limit, and :func:`read_limited` never reads more than it was
allowed to.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from typing import Any, BinaryIO, Callable, Sequence

from ..log import get_logger
from .sandbox import ProtectedPathError

log = get_logger(__name__)

__all__ = [
    "ConfinementError", "NotRegularFileError", "FileTooLargeError", "open_regular", "read_limited",
    "write_beneath", "delete_beneath", "open_beneath", "split_parts", "MAX_PATH_CHARS", "Verify",
]

#: Longer paths are refused up front (the kernel's PATH_MAX), so no walk or library call can recurse
#: or loop on them.
MAX_PATH_CHARS = 4096
_MAX_SYMLINKS = 40
_DIR_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
_ROOT_FLAGS = os.O_DIRECTORY | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class ConfinementError(PermissionError):
    """A write would have left its allowed root (through a symlink, ``..`` or a race)."""

    def __init__(self, path: str, root: str, how: str) -> None:
        super().__init__(errno.EPERM, f"refused: {how} leads outside the allowed directory {root}", path)
        self.how = how


class NotRegularFileError(OSError):
    """The path names a FIFO, socket, device or other non-regular file."""

    def __init__(self, path: str, mode: int) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({_kind(mode)})", path)


class FileTooLargeError(OSError):
    """A read or write exceeded its size limit."""

    def __init__(self, path: str, size: int | None, limit: int) -> None:
        shown = f"{size} bytes" if size is not None else f"more than {limit} bytes"
        super().__init__(errno.EFBIG, f"file too large ({shown}; the limit is {limit} bytes)", path)
        self.size = size
        self.limit = limit


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "a special file"


def check_path_text(path: str) -> None:
    """Refuse paths no system call could take, with an OSError instead of a ValueError later."""
    if "\x00" in path:
        raise OSError(errno.EINVAL, "path contains a NUL byte", path.replace("\x00", "\\0"))
    if len(path) > MAX_PATH_CHARS:
        raise OSError(errno.ENAMETOOLONG, f"path is longer than {MAX_PATH_CHARS} characters", path[:80] + "...")


def split_parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


# -- reading -------------------------------------------------------------------------------------

def open_regular(path: str) -> BinaryIO:
    """Open ``path`` (symlinks followed) for reading; only regular files, never blocking on open."""
    check_path_text(path)
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(path, mode)
    return _regular_file(os.open(path, _READ_FLAGS), path)  # checked again: it may have been swapped


def _regular_file(fd: int, path: str) -> BinaryIO:
    """A blocking binary file object for ``fd`` if it is a regular file; closes ``fd`` otherwise."""
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(path, mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_limited(fh: BinaryIO, limit: int, path: str) -> bytes:
    """All of ``fh`` if it holds at most ``limit`` bytes, else FileTooLargeError.

    Reads no more than ``limit + 1`` bytes, and allocates for the file's size rather than for the
    limit (a file that grows meanwhile is read on in 1 MiB steps).
    """
    try:
        expected = os.fstat(fh.fileno()).st_size
    except (OSError, AttributeError, ValueError):
        expected = 0
    chunks = [fh.read(min(limit, expected) + 1)]
    total = len(chunks[0])
    while total <= limit:
        more = fh.read(min(1 << 20, limit + 1 - total))
        if not more:
            break
        chunks.append(more)
        total += len(more)
    if total > limit:
        raise FileTooLargeError(path, expected if expected > limit else None, limit)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# -- walking beneath a root ----------------------------------------------------------------------

class _Walk:
    """Directory descriptors from the root down to the current directory."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.root_forms = tuple({os.path.normpath(root), os.path.realpath(root)})
        self.stack = [os.open(root, _ROOT_FLAGS)]

    @property
    def fd(self) -> int:
        return self.stack[-1]

    def close(self) -> None:
        for fd in self.stack:
            os.close(fd)
        self.stack = []

    def up(self, path: str) -> None:
        if len(self.stack) == 1:
            if self.root == "/":  # as in the kernel, /.. is /
                return
            raise ConfinementError(path, self.root, "'..'")
        os.close(self.stack.pop())

    def reset(self) -> None:
        while len(self.stack) > 1:
            os.close(self.stack.pop())

    def down(self, name: str) -> None:
        self.stack.append(os.open(name, _DIR_FLAGS, dir_fd=self.fd))

    def link_parts(self, name: str, path: str) -> list[str]:
        """The components a symlink stands for, relative to the current directory (or the root)."""
        target = os.readlink(name, dir_fd=self.fd)
        if not target.startswith("/"):
            return target.split("/")
        target = os.path.normpath(target)
        for form in self.root_forms:
            if target == form or target.startswith(form.rstrip("/") + "/"):
                self.reset()
                return split_parts(target[len(form):])
        raise ConfinementError(path, self.root, f"the symlink {name!r} (-> {target})")


#: Names a walk must not pass through (anywhere, and directly beneath the root) — see
#: :class:`~phi.tools.environment.LocalExecutionEnvironment`'s sandbox; checked on each component as
#: it is walked (symlinks expanded), so a link swapped in meanwhile cannot lead past it.
Guard = tuple[frozenset[str], frozenset[str]]


def _resolve(walk: _Walk, parts: Sequence[str], path: str, *, follow_last: bool, create_dirs: bool,
             guard: Guard | None = None) -> str:
    """Walk ``parts`` beneath the root; returns the final name, ``walk.fd`` is its directory."""
    pending = list(reversed(parts))
    links = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            walk.up(path)
            continue
        if guard is not None and (name in guard[0] or (len(walk.stack) == 1 and name in guard[1])):
            raise ProtectedPathError(errno.EACCES, f"refused: {name} is protected by the sandbox (what is written "
                                     "there would be run or trusted later, outside it)", path)
        last = not pending
        if last and not follow_last:
            return name
        try:
            mode: int | None = os.stat(name, dir_fd=walk.fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            if last:
                return name
            if not create_dirs:
                raise
            mode = None
        if mode is not None and stat.S_ISLNK(mode):
            links += 1
            if links > _MAX_SYMLINKS:
                raise OSError(errno.ELOOP, "Too many levels of symbolic links", path)
            pending.extend(reversed(walk.link_parts(name, path)))
            continue
        if last:
            return name
        if mode is None:
            try:
                os.mkdir(name, 0o777, dir_fd=walk.fd)
            except FileExistsError:  # created meanwhile: look at it again
                pending.append(name)
                continue
        elif not stat.S_ISDIR(mode):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", path)
        walk.down(name)
    raise IsADirectoryError(errno.EISDIR, "Is a directory", path)


#: Called with the file's file object, or None when the path names no file; raises to stop a write.
#: A verify whose ``exact`` attribute is true compares content (which a rename does not change), so
#: it may also be run on the file the new one displaced (see :func:`write_beneath`).
Verify = Callable[[BinaryIO | None], None]
#: A verify's optional ``kept(error, where)``: ``error`` told that another version is kept at ``where``.
_Explain = Callable[[BaseException, str], BaseException]

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_SWAP_TRIES = 5
_COMPARE_CHUNK = 1 << 20
_renameat2: Any = None  # libc's renameat2, looked up on first use (False: there is none)


def _before_replace(path: str, checked: bool) -> None:
    """Test seam: called once the new content of ``path`` is complete in its temporary file, before
    the file it replaces is checked (``checked`` False) and again after that check, right before the
    rename (``checked`` True). Does nothing; tests replace it to act as a second writer at exactly
    those moments."""


def _set_aside(path: str) -> None:
    """Test seam: called once a file being deleted with a check has been renamed aside, before it is
    checked. Does nothing; tests replace it to save the file by name at that moment."""


def write_beneath(root: str, parts: Sequence[str], data: bytes, path: str, verify: Verify | None = None,
                  guard: Guard | None = None) -> None:
    """Replace (or create) the file at ``parts`` beneath ``root`` with ``data``, atomically.

    Missing parent directories are created. ``path`` is only used in error messages. ``verify`` is
    called with the file about to be replaced (open for reading; None when there is none) once the
    new content is in its temporary file; whatever it raises abandons the write, leaving the file as
    it is. Where the kernel offers ``renameat2`` (Linux), the change that could still land between
    that check and the rename is caught as well: a file that is still missing is created with
    ``RENAME_NOREPLACE`` (someone else's new file is never replaced), and with an ``exact`` verify an
    existing one is swapped with ``RENAME_EXCHANGE`` and the file it displaced checked again. If
    that changed too, it is swapped back when the name still holds exactly what this write put
    there; if someone saved again in between, their save stays at the name and the displaced
    version is kept beside it (``NAME.phi-kept-XXXXXX``) — the error raised says so. A file with
    no write permission for anyone is refused (PermissionError).
    """
    walk = _Walk(root)
    try:
        name = _resolve(walk, parts, path, follow_last=True, create_dirs=True, guard=guard)
        try:
            old: os.stat_result | None = os.stat(name, dir_fd=walk.fd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None and stat.S_ISDIR(old.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if old is not None and not stat.S_ISREG(old.st_mode):
            raise NotRegularFileError(path, old.st_mode)
        if old is not None:
            _refuse_read_only(old.st_mode, path)
        _replace(walk.fd, name, data, stat.S_IMODE(old.st_mode) if old is not None else None, path, verify)
    finally:
        walk.close()


def _verify_target(dir_fd: int, name: str, path: str, verify: Verify) -> None:
    try:
        fd = os.open(name, _READ_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        verify(None)
        return
    with _regular_file(fd, path) as fh:
        verify(fh)


def _refuse_read_only(mode: int, path: str) -> None:
    """A file no one may write is not replaced by renaming over it (which the directory's permission
    alone would allow): whoever made it read-only meant it to stay as it is."""
    if not mode & 0o222:
        raise PermissionError(errno.EACCES, f"read-only: no one may write it, mode {stat.S_IMODE(mode):04o}; it "
                              "was not replaced. Make it writable (chmod u+w) first if it should change", path)


def _mode_now(dir_fd: int, name: str, path: str, mode: int | None) -> int | None:
    """The permission bits the new file takes: those of the file it replaces as they are right now
    (a ``chmod`` made while the new content was written is kept), else ``mode``."""
    info = _lstat(dir_fd, name)
    if info is None or not stat.S_ISREG(info.st_mode):
        return mode
    _refuse_read_only(info.st_mode, path)
    return stat.S_IMODE(info.st_mode)


def _replace(dir_fd: int, name: str, data: bytes, mode: int | None, path: str, verify: Verify | None) -> None:
    temp = f".phi-{os.urandom(6).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
    ours = os.fstat(fd).st_ino
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            _before_replace(path, False)
            if verify is not None:
                _verify_target(dir_fd, name, path, verify)
            _before_replace(path, True)
            mode = _mode_now(dir_fd, name, path, mode)
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        _swap_in(dir_fd, temp, name, path, verify, ours, data)
    except BaseException as exc:
        kept = _discard_if_ours(dir_fd, temp, name, ours, data, path)
        explain: _Explain | None = getattr(verify, "kept", None)
        if kept is not None and callable(explain):
            raise explain(exc, kept) from None
        raise


def _swap_in(dir_fd: int, temp: str, name: str, path: str, verify: Verify | None, ours: int, data: bytes) -> None:
    """Rename ``temp`` over ``name``; with ``verify``, as described in :func:`write_beneath`."""
    if verify is None:
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    exact = bool(getattr(verify, "exact", False))
    for _ in range(_SWAP_TRIES):
        exchanged = False
        try:
            if _lstat(dir_fd, name) is None:
                verify(None)
                swapped = _rename2(dir_fd, temp, name, _RENAME_NOREPLACE)
            else:
                swapped = exchanged = exact and _rename2(dir_fd, temp, name, _RENAME_EXCHANGE)
        except (FileExistsError, FileNotFoundError):  # created or removed since it was looked at
            _verify_target(dir_fd, name, path, verify)
            continue
        if exchanged:
            _check_displaced(dir_fd, temp, name, path, verify, ours, data)
        elif not swapped:  # no renameat2 (or no exact check): the plain rename, after the check above
            os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    raise OSError(errno.EAGAIN, "the file kept changing while it was being replaced", path)


def _check_displaced(dir_fd: int, temp: str, name: str, path: str, verify: Verify, ours: int, data: bytes) -> None:
    """After the exchange ``temp`` holds the file that was at ``name``: drop it if it is the version
    ``verify`` expects, else let verify's error through — having put it back at ``name`` when
    ``name`` still holds exactly what this write made. When someone saved again after the exchange,
    their newer save stays at ``name`` and the displaced version is kept by :func:`_discard_if_ours`,
    which :func:`_replace` calls next: nothing is swapped back over a save, nothing removed that
    someone else wrote."""
    try:
        _verify_target(dir_fd, temp, path, verify)
    except BaseException:
        if _holds_ours(dir_fd, name, ours, data):
            try:
                if not _rename2(dir_fd, temp, name, _RENAME_EXCHANGE):
                    raise OSError(errno.ENOTSUP, "renameat2 stopped working", path)
            except OSError as exc:
                log.error("%s: could not put back the version written meanwhile (%s)", path, exc)
        raise
    os.unlink(temp, dir_fd=dir_fd)


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _holds_ours(dir_fd: int, name: str, ours: int, data: bytes) -> bool:
    """Whether ``name`` is the file this write made (inode ``ours``) holding exactly ``data``: a save
    someone made into it after it was swapped in makes it theirs."""
    try:
        fd = os.open(name, _READ_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if info.st_ino != ours or info.st_size != len(data):
            return False
        view, offset = memoryview(data), 0
        while True:
            chunk = fh.read(_COMPARE_CHUNK)
            if not chunk:
                return offset == len(data)
            if view[offset:offset + len(chunk)] != memoryview(chunk):  # view to view: no copy, and checkers agree
                return False
            offset += len(chunk)


def _discard_if_ours(dir_fd: int, temp: str, name: str, ours: int, data: bytes, path: str) -> str | None:
    """Remove ``temp`` if it is the file this write made, still holding exactly ``data``. Anything
    else there (the displaced version of an exchange, or a save that landed in phi's file) is
    someone's work: it is kept beside the file under a clear name, which is returned (and logged)."""
    if _lstat(dir_fd, temp) is None:
        return None
    if _holds_ours(dir_fd, temp, ours, data):
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except OSError:
            pass
        return None
    return _keep_beside(dir_fd, temp, name, path)


def _put_back(dir_fd: int, aside: str, name: str) -> bool:
    """Rename ``aside`` back to ``name`` unless a file is there now; whether it was put back."""
    try:
        if _rename2(dir_fd, aside, name, _RENAME_NOREPLACE):
            return True
        if _lstat(dir_fd, name) is not None:  # no renameat2: a narrow window stays here
            return False
        os.rename(aside, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return True
    except OSError:
        return False


def _keep_beside(dir_fd: int, temp: str, name: str, path: str) -> str:
    """Rename ``temp`` (someone else's version of ``name``) to a clear name beside ``name``; returns
    its absolute path (the temporary one if that rename fails) and logs a warning."""
    kept = temp
    backup = f"{name}.phi-kept-{os.urandom(3).hex()}"
    try:
        if not _rename2(dir_fd, temp, backup, _RENAME_NOREPLACE):
            os.rename(temp, backup, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        kept = backup
    except OSError as exc:  # e.g. the name would be too long: it stays under the temporary name
        log.warning("%s: could not rename %s to %s (%s)", path, temp, backup, exc)
    where = os.path.join(os.path.dirname(path), kept)
    log.warning("%s: a version of the file someone else wrote while phi changed it is kept as %s", path, where)
    return where


def _rename2(dir_fd: int, src: str, dst: str, flags: int) -> bool:
    """``renameat2(src, dst, flags)`` in ``dir_fd``: True when done, False when the system or the file
    system does not offer it; other failures raise OSError (FileExistsError, FileNotFoundError...)."""
    global _renameat2
    if _renameat2 is None:
        _renameat2 = _load_renameat2()
    if _renameat2 is False:
        return False
    if _renameat2(dir_fd, os.fsencode(src), dir_fd, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), dst)


def _load_renameat2() -> Any:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def delete_beneath(root: str, parts: Sequence[str], path: str, verify: Verify | None = None,
                   guard: Guard | None = None) -> None:
    """Remove the file (or symlink itself) at ``parts`` beneath ``root``; directories are refused.

    With ``verify`` a regular file is checked first; whatever it raises stops the removal. With an
    ``exact`` verify the file is renamed aside first and checked there, so a save made by name from
    then on makes a new file (kept): if ``verify`` raises, the file is put back — never over a file
    saved meanwhile; then it is kept beside it and the verify's ``kept`` says where — and the error
    goes through; else it is removed. A symlink is removed without a check (it holds no content).
    """
    walk = _Walk(root)
    try:
        name = _resolve(walk, parts, path, follow_last=False, create_dirs=False, guard=guard)
        mode = os.stat(name, dir_fd=walk.fd, follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if verify is not None and stat.S_ISREG(mode) and getattr(verify, "exact", False):
            _delete_verified(walk.fd, name, path, verify)
            return
        if verify is not None and stat.S_ISREG(mode):  # compared by identity, which a rename changes
            _verify_target(walk.fd, name, path, verify)
        os.unlink(name, dir_fd=walk.fd)
    finally:
        walk.close()


def _delete_verified(dir_fd: int, name: str, path: str, verify: Verify) -> None:
    aside = f".phi-{os.urandom(6).hex()}.del"
    os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    try:
        _set_aside(path)
        _verify_target(dir_fd, aside, path, verify)
    except BaseException as exc:
        if _put_back(dir_fd, aside, name):
            raise
        where = _keep_beside(dir_fd, aside, name, path)  # a new file was saved at the name meanwhile
        explain: _Explain | None = getattr(verify, "kept", None)
        if callable(explain):
            raise explain(exc, where) from None
        raise
    os.unlink(aside, dir_fd=dir_fd)


def open_beneath(root: str, parts: Sequence[str], path: str) -> BinaryIO:
    """Open the regular file at ``parts`` beneath ``root`` for reading, without ever leaving ``root``.

    ``..`` and symlinks are followed only while they stay beneath the root (ConfinementError
    otherwise); FIFOs, sockets and devices are refused as by :func:`open_regular`. ``path`` is only
    used in error messages.
    """
    check_path_text(path)
    walk = _Walk(root)
    try:
        name = _resolve(walk, parts, path, follow_last=True, create_dirs=False)
        fd = os.open(name, _READ_FLAGS | os.O_NOFOLLOW, dir_fd=walk.fd)
    finally:
        walk.close()
    return _regular_file(fd, path)
