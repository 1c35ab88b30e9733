"""The command sandbox: policies, what this machine offers, and the launcher's instructions
(SPEC §9.1 "Sandbox").

A :class:`SandboxPolicy` says what a command may change:

* ``read-only`` — read anywhere the user can; write only the environment's private temporary
  directory (``TMPDIR``) and device files such as ``/dev/null``;
* ``workspace-write`` — also write beneath the environment's write roots (the workspace), except its
  ``.git`` (unless ``git_writable``) and ``.phi`` directories, which stay read-only: a hook or a
  settings file written there would run or be trusted later, outside the sandbox;
* ``full`` — no sandbox (phi's deny list stays as a guardrail).

The network is off in the two sandboxed modes unless ``network=True``: the command gets a network
namespace of its own with only loopback (its own servers on 127.0.0.1 work, the host's do not),
and cannot create Unix sockets (so it cannot reach an outside listener's either).

The policy is applied by the command's launcher (:mod:`phi.tools._reaper` with
:mod:`phi.tools._sandbox`) before the command starts. :func:`sandbox_status` says — once per
process, from a probe in a throw-away child — which layers this kernel offers; where it offers
neither Landlock nor user namespaces a sandboxed policy cannot be kept and commands are refused with
:class:`SandboxUnavailable` (the coding layer and ``phi`` then ask before every command instead).
``PHI_NO_SANDBOX=1`` in the environment makes phi behave as on such a kernel (for trying that path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence, Union, get_args

from ..errors import ConfigError, ToolError
from ..json_values import is_array, is_object
from ..log import get_logger

log = get_logger(__name__)

SandboxMode = Literal["read-only", "workspace-write", "full"]
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
#: What stays read-only directly inside a writable root when it exists (and ``.git`` unless
#: ``git_writable``): each is read or run later by phi or git outside the sandbox.
PROTECTED_NAMES = (".phi", ".mcp.json")
#: Device files a sandboxed command may open for writing.
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")

_TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
_PROBE_BOOT = "import sys; sys.path.append(sys.argv.pop(1)); import _sandbox; _sandbox.run_probe()"
_PROBE_TIMEOUT_SECONDS = 20.0
_SEPARATOR = "\x1f"  # between the launcher's items (phi.tools._sandbox.SEPARATOR)


class SandboxUnavailable(ToolError):
    """A sandboxed policy was asked for where the kernel cannot keep it (:func:`sandbox_status`)."""


class ProtectedPathError(PermissionError):
    """A file tool was asked to write where a sandboxed environment keeps things read-only."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What a command may change and reach (see the module docstring).

    ``writable_roots`` adds directories to the environment's write roots (``workspace-write``);
    ``git_writable`` lets commands write ``.git`` inside them (off by default: a hook or config
    written there runs later, unsandboxed, at the next ``git commit``).
    """

    mode: SandboxMode = "workspace-write"
    network: bool = False
    writable_roots: tuple[str, ...] = ()
    git_writable: bool = False

    def __post_init__(self) -> None:
        # callers without a type checker may pass anything
        if self.mode not in SANDBOX_MODES:  # pyright: ignore[reportUnnecessaryContains]
            raise ConfigError(f"unknown sandbox mode {self.mode!r}; use one of {', '.join(SANDBOX_MODES)}")

    @property
    def sandboxed(self) -> bool:
        return self.mode != "full"

    def describe(self) -> str:
        """``workspace-write, network off`` — for banners and ``/status``."""
        if not self.sandboxed:
            return "full (no sandbox)"
        extras = ["network on" if self.network else "network off"]
        if self.mode == "workspace-write":
            extras.append(".git writable" if self.git_writable else ".git read-only")
        return f"{self.mode}, {', '.join(extras)}"


#: What ``sandbox=`` accepts: a policy, a mode's name, or None (``full``).
SandboxSetting = Union[SandboxPolicy, SandboxMode, None]


def as_policy(setting: SandboxPolicy | str | None) -> SandboxPolicy:
    """A policy from a ``sandbox=`` argument (None is ``full``)."""
    if setting is None:
        return SandboxPolicy("full")
    if isinstance(setting, SandboxPolicy):
        return setting
    if isinstance(setting, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers without a type checker
        if setting not in SANDBOX_MODES:
            raise ConfigError(f"unknown sandbox mode {setting!r}; use one of {', '.join(SANDBOX_MODES)}")
        return SandboxPolicy(setting)
    raise ConfigError(f"sandbox must be a SandboxPolicy, a mode name or None, not {type(setting).__name__}")


@dataclass(frozen=True)
class SandboxStatus:
    """What this machine offers for sandboxing (:func:`sandbox_status`)."""

    landlock_abi: int = 0
    namespaces: bool = False  # unprivileged user, mount and network namespaces
    seccomp: bool = False
    reason: str = ""  # why something is missing
    problems: tuple[str, ...] = field(default=())

    @property
    def available(self) -> bool:
        """Whether sandboxed policies can be kept (writes confined by Landlock or read-only mounts)."""
        return self.landlock_abi > 0 or self.namespaces

    @property
    def gaps(self) -> tuple[str, ...]:
        """What a sandboxed command is not kept from on this machine."""
        if not self.available:
            return ("everything: commands cannot be sandboxed here",)
        gaps: list[str] = []
        if not self.namespaces:
            gaps.append("chmod/chown/utime/xattrs of files outside the workspace (no mount namespace)")
            gaps.append(".git, .phi and .mcp.json inside the workspace are writable (no mount namespace)")
            gaps.append("System V IPC, /dev/shm and other terminals of the host (no namespaces)")
            if self.landlock_abi < 3:
                gaps.append("truncating files outside the workspace (Landlock < 3)")
            if not self.seccomp:
                gaps.append("network: UDP and Unix sockets (no seccomp filter)" if self.landlock_abi >= 4
                            else "network: not restricted (no network namespace, Landlock < 4, no seccomp)")
        if not self.seccomp:
            gaps.append("Unix sockets to outside listeners, vsock, keyrings, io_uring (no seccomp filter)")
        if self.landlock_abi < 6:
            gaps.append("signals to processes outside the sandbox (Landlock < 6)")
        return tuple(gaps)

    def describe(self) -> str:
        """One line: what protects commands here, or why nothing does."""
        if not self.available:
            return f"no sandbox on this machine ({self.reason or 'no Landlock, no user namespaces'})"
        layers: list[str] = []
        if self.landlock_abi:
            layers.append(f"Landlock ABI {self.landlock_abi}")
        if self.namespaces:
            layers.append("user/mount/network namespaces")
        if self.seccomp:
            layers.append("seccomp")
        text = " + ".join(layers)
        return text + (f"; not covered: {'; '.join(self.gaps)}" if self.gaps else "")

    def layers(self) -> list[str]:
        """The launcher's items naming the layers to apply."""
        return [f"userns={int(self.namespaces)}", f"landlock={self.landlock_abi}", f"seccomp={int(self.seccomp)}"]


def describe_protection(policy: SandboxPolicy, status: SandboxStatus) -> str:
    """One line saying what protects commands under ``policy`` on a machine with ``status`` (the
    banner's ``sandbox:`` line, ``CommandSandbox.describe``)."""
    if policy.sandboxed and not status.available:
        return (f"{policy.mode} asked for, but {status.describe()}: "
                "commands run unconfined and every one is asked")
    if not policy.sandboxed:
        return policy.describe()
    return f"{policy.describe()} ({status.describe()})"


_status: SandboxStatus | None = None
_status_lock = threading.Lock()


def _cannot_probe() -> SandboxStatus | None:
    if os.environ.get("PHI_NO_SANDBOX", "") not in ("", "0"):
        return SandboxStatus(reason="disabled by PHI_NO_SANDBOX")
    if not sys.platform.startswith("linux"):
        return SandboxStatus(reason=f"phi sandboxes commands on Linux only, not on {sys.platform}")
    if not sys.executable:
        return SandboxStatus(reason="no Python interpreter to run the launcher")
    return None


def _start() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-I", "-S", "-c", _PROBE_BOOT, _TOOLS_DIR], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _probe(pending: subprocess.Popen[bytes] | None) -> SandboxStatus:
    cannot = _cannot_probe()
    if cannot is not None:
        return cannot
    try:
        proc = pending or _start()
        try:
            stdout, stderr = proc.communicate(timeout=_PROBE_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        found = json.loads(stdout.decode() or "null")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return SandboxStatus(reason=f"the probe failed: {type(exc).__name__}: {exc}")
    if not is_object(found):
        return SandboxStatus(reason=f"the probe failed (exit {proc.returncode}): "
                                    f"{stderr.decode(errors='replace')[-300:].strip()}")
    abi = found.get("landlock")
    errors = found.get("errors")
    problems = tuple(str(problem) for problem in errors) if is_array(errors) else ()
    status = SandboxStatus(landlock_abi=abi if isinstance(abi, int) else 0, namespaces=found.get("userns") is True,
                           seccomp=found.get("seccomp") is True, problems=problems)
    if not status.available:
        status = SandboxStatus(problems=problems, reason="; ".join(("Landlock: not in this kernel",) + problems))
    return status


_pending: subprocess.Popen[bytes] | None = None


def start_probe() -> None:
    """Start probing in the background now (``phi`` does at start-up); :func:`sandbox_status`
    collects the answer."""
    global _pending
    with _status_lock:
        if _status is None and _pending is None and _cannot_probe() is None:
            try:
                _pending = _start()
            except OSError:
                pass  # sandbox_status() probes again and says why


def sandbox_status(refresh: bool = False) -> SandboxStatus:
    """What this machine offers for sandboxing commands, probed once per process (thread-safe;
    ``refresh`` probes again). Logs what it found the first time."""
    global _status, _pending
    with _status_lock:
        if _status is None or refresh:
            pending, _pending = _pending, None
            _status = _probe(pending)
            if _status.available:
                log.info("command sandbox: %s", _status.describe())
            else:
                log.warning("command sandbox: %s; sandboxed commands are refused (the coding layer and phi "
                            "ask before each instead)", _status.describe())
        return _status


_TEMP_PREFIX = "phi-sandbox-"


class PrivateTemp:
    """A sandboxed environment's private temporary directory: made on first use (mode 0700, named
    after this process), removed by :meth:`remove` or when the process exits; those of processes
    that died without removing theirs are removed when the next one is made."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._path: str | None = None
        self._finalizer: Callable[[], object] | None = None

    def path(self) -> str:
        with self._lock:
            if self._path is None or not _is_own_directory(self._path):
                _remove_orphans()
                self._path = os.path.realpath(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{os.getpid()}-"))
                self._finalizer = weakref.finalize(self, _remove_tree, self._path)
            return self._path

    def remove(self) -> None:
        with self._lock:
            finalizer, self._path, self._finalizer = self._finalizer, None, None
        if finalizer is not None:
            finalizer()


def _remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _is_own_directory(path: str) -> bool:
    """Still the directory made (a command may have replaced it with a symlink meanwhile)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def _remove_orphans() -> None:
    root = tempfile.gettempdir()
    try:
        names = [name for name in os.listdir(root) if name.startswith(_TEMP_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(_TEMP_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:  # its process is gone: nobody else removes it
            path = os.path.join(root, name)
            if _is_own_directory(path):
                _remove_tree(path)
        except OSError:
            pass  # another user's process, alive


def beneath(path: str, roots: Sequence[str]) -> str | None:
    """The first of ``roots`` (real paths) that ``path`` (a real path) is or lies beneath."""
    for root in roots:
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return root
    return None


#: phi's runtime dependencies (and theirs): when installed inside a workspace they are kept read-only
#: like phi itself — this process imports from them later, unconfined.
_HOST_PACKAGES = ("requests", "urllib3", "certifi", "idna", "charset_normalizer", "jsonschema",
                  "jsonschema_specifications", "referencing", "rpds", "attrs", "yaml", "_yaml")
_host_code: tuple[str, ...] | None = None


def host_code() -> tuple[str, ...]:
    """Where the code this process may still import or run lives: phi's own package (under whatever
    name it is vendored), its dependencies', the interpreter's site-packages and scripts — real
    paths, found once."""
    global _host_code
    if _host_code is None:
        import importlib.util

        found = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        for name in _HOST_PACKAGES:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            if spec is not None and spec.origin:
                found.append(os.path.dirname(spec.origin) if spec.submodule_search_locations else spec.origin)
        # where this interpreter finds packages, and its scripts: a .pth file or a console script
        # written there would run at phi's next start
        found += [entry for entry in sys.path if os.path.basename(entry) in ("site-packages", "dist-packages")]
        found.append(os.path.join(sys.prefix, "Scripts" if sys.platform == "win32" else "bin"))
        if sys.prefix != sys.base_prefix:  # a virtual environment: all of it (pyvenv.cfg names the Python
            found.append(sys.prefix)  # it runs; a read-only mount point cannot be renamed away either)
        _host_code = tuple(dict.fromkeys(os.path.realpath(path) for path in found))
    return _host_code


def launcher_spec(policy: SandboxPolicy, write_roots: Sequence[str], temp_dir: str,
                  status: SandboxStatus | None = None) -> str:
    """The argument the launcher applies for ``policy`` (``write_roots``: the environment's and the
    policy's, resolved once — real paths, so that a command cannot turn the next command's root into a symlink
    elsewhere; ``temp_dir``: its private temporary directory; format in :mod:`phi.tools._sandbox`,
    which checks at each start that no root leads elsewhere). Raises
    :class:`SandboxUnavailable` when it cannot be kept, :class:`ConfigError` for a root whose name
    holds the item separator."""
    status = status or sandbox_status()
    if not status.available:
        raise SandboxUnavailable(f"the {policy.mode} sandbox cannot run here: {status.describe()}. "
                                 "Choose sandbox='full' to run commands unsandboxed.")
    roots = list(write_roots) if policy.mode == "workspace-write" else []
    write = sorted({*roots, temp_dir})
    for part, path in (("interpreter", os.path.realpath(sys.executable)),
                       ("standard library", os.path.realpath(os.path.dirname(os.__file__)))):
        root = beneath(path, write)
        if root is not None:  # a command could replace what the next command's launcher runs
            raise SandboxUnavailable(f"the {policy.mode} sandbox cannot be kept: the launcher's Python {part} "
                                     f"({path}) lies inside the writable directory {root}")
    protected = PROTECTED_NAMES if policy.git_writable else (".git", *PROTECTED_NAMES)
    readonly = [os.path.join(root, name) for root in write if root != temp_dir for name in protected]
    readonly += [path for path in host_code() if beneath(path, write) is not None]
    items = [*(f"write={path}" for path in write), *(f"readonly={path}" for path in readonly),
             *(f"file={path}" for path in DEVICE_FILES), f"net={int(policy.network)}", *status.layers()]
    for item in items:
        if _SEPARATOR in item:
            raise ConfigError(f"cannot sandbox with a write root whose name holds \\x1f: {item!r}")
    return _SEPARATOR.join(items)


__all__ = ["ProtectedPathError", "SandboxMode", "SandboxPolicy", "SandboxSetting", "SandboxStatus",
           "SandboxUnavailable", "SANDBOX_MODES", "as_policy", "beneath", "describe_protection", "host_code", "sandbox_status", "start_probe",
           "launcher_spec"]
