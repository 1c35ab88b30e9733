"""Which project files the ``phi`` command trusts (SPEC §15 CLI-15; issue 34).

Two files in a project make ``phi`` act outside the sandbox when it starts: ``.mcp.json`` (its
servers run with the user's rights) and ``.phi/settings.json`` (its allow rules let commands run
unasked). A sandboxed command cannot change them where they exist (they are read-only to it) and
what it creates where none was is set aside, but not everywhere: in a subdirectory where ``phi``
is started later, or by a background command outliving a killed ``phi``. So ``phi`` trusts such a
file only in the version the user trusted: its SHA-256 recorded in ``$PHI_HOME/trusted-files.json``
by ``phi trust`` (which lists what it trusts). An untrusted ``.mcp.json``'s servers are not
started and an untrusted settings file's allow rules are not applied (its deny and ask rules are:
they only hold back); one line says so and how to trust it. A file named with ``--mcp`` is trusted
by being named.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile

from ..json_values import is_object

#: the project files trust is asked for, relative to the working directory
PROJECT_FILES = (".mcp.json", os.path.join(".phi", "settings.json"))
_MAX_BYTES = 1 << 20  # a project file larger than this is never trusted


def _store(home: str) -> str:
    return os.path.join(home, "trusted-files.json")


def read_project_file(path: str) -> bytes | None:
    """``path``'s bytes, read once, so that the version parsed is the version whose trust is checked
    (:func:`is_trusted_content`); None when it does not exist. A path that is not a regular file (a
    FIFO, a device) or is larger than 1 MiB raises :class:`~phi.errors.ConfigError` instead of
    hanging or filling memory."""
    from ..errors import ConfigError

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read it ({error.strerror or error})") from None
    try:
        import stat

        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a regular file")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
        if len(data) > _MAX_BYTES:
            raise ConfigError(f"{path}: larger than {_MAX_BYTES} bytes")
        return data
    finally:
        os.close(fd)


def is_trusted_content(path: str, data: bytes, home: str) -> bool:
    """Whether ``data`` (read from ``path``) is the version the user trusted for that path, reached
    without a symlink on the way (a link to another project's trusted file is not that file)."""
    if os.path.realpath(path) != os.path.abspath(path):
        return False
    return _recorded(home).get(os.path.realpath(path)) == hashlib.sha256(data).hexdigest()


def digest(path: str) -> str | None:
    """The SHA-256 of the regular file ``path`` (None: missing, not a regular file, or too large)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        import stat

        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return hashlib.sha256(handle.read(_MAX_BYTES + 1)).hexdigest()
    finally:
        os.close(fd)


def _recorded(home: str) -> dict[str, str]:
    try:
        with open(_store(home), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return {str(key): str(value) for key, value in data.items()} if is_object(data) else {}


def is_trusted(path: str, home: str) -> bool:
    """Whether ``path`` holds the version the user trusted (see the module docstring)."""
    found = digest(path)
    return found is not None and _recorded(home).get(os.path.realpath(path)) == found


def trust(paths: list[str], home: str) -> list[str]:
    """Record the current version of each of ``paths`` that exists; the ones recorded."""
    recorded = _recorded(home)
    done: list[str] = []
    for path in paths:
        found = digest(path)
        if found is not None:
            recorded[os.path.realpath(path)] = found
            done.append(path)
    os.makedirs(home, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".trusted-", dir=home)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(recorded, handle, indent=1, sort_keys=True)
    os.replace(temporary, _store(home))
    return done


_said: set[str] = set()


def say_untrusted(name: str, what: str) -> None:
    """Say once per process (on stderr) that ``name`` is not trusted and what is left out because of it."""
    note = (f"phi: {name} is new or changed since you last trusted it (`phi trust`): {what}; "
            "run `phi trust` here to trust this version")
    if note not in _said:
        _said.add(note)
        sys.stderr.write(note + "\n")


def trust_command(args: list[str]) -> int:
    """``phi trust [DIR]``: trust the project files of DIR (default: here) as they are now."""
    from .options import home_dir

    if len(args) > 1 or (args and args[0].startswith("-")):
        sys.stderr.write("usage: phi trust [DIR]  (trusts DIR's .mcp.json and .phi/settings.json as they are now)\n")
        return 2
    where = args[0] if args else os.curdir
    paths = [os.path.join(where, name) for name in PROJECT_FILES]
    done = trust(paths, home_dir())
    for path in done:
        sys.stdout.write(f"trusted {os.path.normpath(path)} (sha256 {digest(path)})\n")
    if not done:
        sys.stdout.write(f"nothing to trust in {os.path.abspath(where)} (no .mcp.json or .phi/settings.json)\n")
    return 0


__all__ = ["PROJECT_FILES", "digest", "is_trusted", "is_trusted_content", "read_project_file", "say_untrusted",
           "trust", "trust_command"]
