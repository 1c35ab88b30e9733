"""The child side of the command sandbox (SPEC §9.1 "Sandbox"; Linux only).

Imported by :mod:`phi.tools._reaper` (run as ``python -I -S``, so standard library only and never
phi itself: it works the same when phi is vendored under another name) and applied to the reaper
process *before* it starts the command, so the command and everything it starts inherit it; no
``preexec_fn`` runs in the threaded host. The policy arrives as one argument of ``key=value``
items separated by ``\x1f`` (see :func:`phi.tools.sandbox.launcher_spec`; no ``json``, whose import
would double the launcher's start-up)::

    write=DIR  readonly=DIR  file=DEVICE  net=0|1  userns=0|1  landlock=ABI  seccomp=0|1

Layers, each applied when the kernel offers it (the parent learned that from :func:`probe`):

1. **Namespaces** (unprivileged user namespace): a mount namespace in which every mount is made
   read-only (``mount_setattr``), the writable directories are bind-mounted back read-write and the
   protected ones inside them (``.git``, ``.phi``) read-only again, ``/dev/shm`` is a private tmpfs;
   and, with the network off, a network namespace with only loopback (up). Read-only mounts refuse
   what Landlock does not cover (``chmod``, ``chown``, ``utime``, extended attributes). Then every
   capability is dropped, so the command cannot undo the mounts.
2. **seccomp**, with the network off: ``socket(AF_UNIX, ...)`` is refused (an outside listener's
   Unix socket is reachable from any network namespace; ``socketpair`` still works), and without a
   network namespace every ``socket`` call; ``io_uring_setup`` too (it can open sockets past the
   filter).
3. **Landlock**: reads and execution anywhere, every write right only beneath the writable
   directories (and the device files listed); without a network namespace TCP bind and connect are
   refused (ABI 4); signals and abstract Unix sockets are scoped to the sandbox (ABI 6), so a command
   cannot signal the host or its editor.

Any failure raises :class:`SandboxError`; the reaper then refuses to run the command — a command is
never run with less confinement than it was promised.
"""

import _socket
import ctypes
import os
import struct

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

# Landlock (include/uapi/linux/landlock.h); the system call numbers are the same on every
# architecture that has them.
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_SYS_MOUNT_SETATTR = 442
_LANDLOCK_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
_NET_BIND_TCP = 1  # ABI 4
_NET_CONNECT_TCP = 2
_SCOPE_ABSTRACT_UNIX = 1  # ABI 6
_SCOPE_SIGNAL = 2
_READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | _FS_TRUNCATE

# Namespaces and mounts (include/uapi/linux/sched.h, mount.h)
_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_MOUNT_ATTR_RDONLY = 1
_AT_RECURSIVE = 0x8000
_AT_EMPTY_PATH = 0x1000
_AT_FDCWD = -100
_MS_NOSUID = 2
_MS_NOEXEC = 8

# prctl, capabilities, seccomp
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_EPERM = 1
# per machine: audit arch; socket, socketpair; refused outright: io_uring_setup (its requests can
# open sockets past the filter), add_key, request_key, keyctl (the host's session keyring)
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 41, 53, (425, 248, 249, 250)),
                 "aarch64": (0xC00000B7, 198, 199, (425, 217, 218, 219))}
# Address families a sandboxed command may open: the ones a network namespace confines (netlink
# reads addresses for getaddrinfo). Unix (reaches any outside listener by path), vsock (the host's
# port space), packet, bluetooth... are refused.
_NAMESPACED_FAMILIES = (_socket.AF_INET, _socket.AF_INET6, 16)  # 16: AF_NETLINK
_SOCK_TYPE_MASK = 0xF
_SOCK_DGRAM = 2
_X32_BIT = 0x40000000

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 1


class SandboxError(OSError):
    """A layer of the sandbox could not be applied."""


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise SandboxError(errno, f"{what}: {os.strerror(errno)}")
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or it is disabled)."""
    try:
        version = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                                ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    except (AttributeError, OSError):
        return 0
    return max(0, int(version))


def _fs_rights(abi: int) -> int:
    rights = _FS_ABI1
    if abi >= 2:
        rights |= _FS_REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    return rights  # IOCTL_DEV (ABI 5) is not handled: ioctls on terminals and pipes stay as they are


# -- namespaces -------------------------------------------------------------------------------------

def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _enter_namespaces(network: bool, mounts: bool) -> None:
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWUSER | _CLONE_NEWIPC | (_CLONE_NEWNS if mounts else 0) | (0 if network else _CLONE_NEWNET)
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _loopback_up() -> None:
    import fcntl

    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock.fileno(), _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))
    finally:
        sock.close()


def _mount(source: str | None, target: str, fstype: str | None, flags: int, what: str, data: str | None = None) -> None:
    _check(_libc.mount(None if source is None else os.fsencode(source), os.fsencode(target),
                       None if fstype is None else fstype.encode(), ctypes.c_ulong(flags),
                       None if data is None else data.encode()),
           f"{what} {target}")


def _set_readonly(fd: int, path: str, readonly: bool, recursive: bool) -> None:
    """Set or clear read-only on the mount ``fd`` (or, with ``fd`` -100, ``path``) is on."""
    attr = struct.pack("=QQQQ", _MOUNT_ATTR_RDONLY if readonly else 0, 0 if readonly else _MOUNT_ATTR_RDONLY, 0, 0)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    flags = (_AT_RECURSIVE if recursive else 0) | (_AT_EMPTY_PATH if fd != _AT_FDCWD else 0)
    _check(_libc.syscall(_SYS_MOUNT_SETATTR, ctypes.c_int(fd), os.fsencode(path) if fd == _AT_FDCWD else b"",
                         ctypes.c_uint(flags), buffer, ctypes.c_size_t(len(attr))),
           f"mount_setattr {path}")


def pin(path: str, directory: bool = True) -> int | None:
    """An ``O_PATH`` descriptor of ``path`` as it is now, checked to be that very path (no symlink on
    the way, so a command cannot redirect the next command's write root); None when it is not there
    (or, with ``directory``, not a directory)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW | (os.O_DIRECTORY if directory else 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last component is a symlink
            raise SandboxError(40, f"{path} is a symlink now; it is not made writable") from None
        raise
    if os.readlink(f"/proc/self/fd/{fd}") != path:
        os.close(fd)
        raise SandboxError(40, f"{path} leads elsewhere now (a symlink on the way); it is not made writable")
    return fd


def _bind_self(path: str, directory: bool = True) -> int | None:
    """Bind-mount ``path`` onto itself; a descriptor of the new mount (None: ``path`` is not there)."""
    fd = pin(path, directory)
    if fd is None:
        return None
    try:
        _mount(f"/proc/self/fd/{fd}", f"/proc/self/fd/{fd}", None, _MS_BIND | _MS_REC, "bind")
    finally:
        os.close(fd)
    return pin(path, directory)  # opened again: through the new mount, and checked again


def _protected_targets(path: str, write: list[str]) -> list[str]:
    """What to keep read-only for the protected name ``path`` (``ws/.git``): itself, and what a
    ``.git`` symlink or ``gitdir:`` file leads to when that lies inside a writable directory."""
    targets = [path] if os.path.lexists(path) and not os.path.islink(path) else []
    lead = None
    if os.path.islink(path):
        lead = os.path.realpath(path)
    elif os.path.isfile(path):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                first = handle.readline().strip()
        except OSError:
            first = ""
        if first.startswith("gitdir:"):
            lead = os.path.realpath(os.path.join(os.path.dirname(path), first[7:].strip()))
    if lead and any(lead == root or lead.startswith(root.rstrip("/") + "/") for root in write):
        targets.append(lead)
    return targets


def _private_devices() -> None:
    """A private ``/dev/shm`` and a fresh ``devpts`` (the user's other terminals out of reach)."""
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID, "private tmpfs on")
    if os.path.isdir("/dev/pts"):
        try:
            _mount("devpts", "/dev/pts", "devpts", _MS_NOSUID | _MS_NOEXEC, "devpts on",
                   "newinstance,ptmxmode=0666,mode=0620")
            if os.path.exists("/dev/ptmx"):
                _mount("/dev/pts/ptmx", "/dev/ptmx", None, _MS_BIND, "bind ptmx")
        except SandboxError:
            _mount("tmpfs", "/dev/pts", "tmpfs", _MS_NOSUID | _MS_NOEXEC, "hide terminals with tmpfs on")


def _read_only_world(write: list[str], readonly: list[str]) -> list[int]:
    """Every mount read-only except ``write`` (bind-mounted back) minus ``readonly`` inside them;
    descriptors of the writable directories (for Landlock's rules)."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, "make private")
    binds = [(path, _bind_self(path)) for path in write]
    _set_readonly(_AT_FDCWD, "/", True, recursive=True)
    pinned: list[int] = []
    for path, fd in binds:
        if fd is None:
            continue
        pinned.append(fd)
        try:
            _set_readonly(fd, path, False, recursive=False)
        except SandboxError as exc:
            if exc.errno != 1:  # EPERM: a mount read-only before the sandbox stays so; nothing is lost
                raise
    _private_devices()
    for name in readonly:
        for target in _protected_targets(name, write):
            fd = _bind_self(target, directory=os.path.isdir(target))
            if fd is not None:
                _set_readonly(fd, target, True, recursive=True)
                os.close(fd)
    # The working directory still points into the mount beneath the new ones: walk to it again.
    os.chdir(os.getcwd())
    return pinned


def _drop_capabilities() -> None:
    """Empty the bounding set (an ``exec`` as uid 0 regains nothing) and every capability set."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = struct.pack("=Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = ctypes.create_string_buffer(24)  # two zeroed {effective, permitted, inheritable}
    _check(_libc.capset(ctypes.create_string_buffer(header, 8), data), "capset")


# -- seccomp ---------------------------------------------------------------------------------------

def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _install_filter(every_family: bool) -> bool:
    """Refuse the system calls and socket kinds the module docstring lists (``every_family``: every
    ``socket``, where no network namespace confines even TCP). False on a machine it does not know."""
    machine = os.uname().machine
    if machine not in _SECCOMP_ARCH:
        return False
    arch, nr_socket, nr_socketpair, refused = _SECCOMP_ARCH[machine]
    ld_w_abs, jeq, jge, alu_and, ret = 0x20, 0x15, 0x35, 0x54, 0x06
    deny, allow = _SECCOMP_RET_ERRNO | _EPERM, _SECCOMP_RET_ALLOW
    families = () if every_family else _NAMESPACED_FAMILIES
    program = [
        _bpf(ld_w_abs, 4),  # seccomp_data.arch
        _bpf(jeq, arch, 1, 0),
        _bpf(ret, deny),  # another ABI (e.g. 32-bit compat) could reach socketcall: refused
        _bpf(ld_w_abs, 0),  # seccomp_data.nr
        _bpf(jge, _X32_BIT, 0, 1),
        _bpf(ret, deny),
    ]
    for nr in refused:
        program += [_bpf(jeq, nr, 0, 1), _bpf(ret, deny)]
    # socketpair(AF_UNIX, SOCK_DGRAM): its sockets can still sendto() an outside listener's path
    program += [_bpf(jeq, nr_socketpair, 0, 4), _bpf(ld_w_abs, 24), _bpf(alu_and, _SOCK_TYPE_MASK),
                _bpf(jeq, _SOCK_DGRAM, 0, 1), _bpf(ret, deny)]
    program += [_bpf(jeq, nr_socket, 0, len(families) + 2), _bpf(ld_w_abs, 16)]  # args[0]: the family
    for index, family in enumerate(families):
        program.append(_bpf(jeq, family, len(families) - index, 0))  # to the final allow
    program += [_bpf(ret, deny), _bpf(ret, allow)]
    code = b"".join(program)
    filters = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.create_string_buffer(fprog, len(fprog)), 0, 0),
           "seccomp")
    return True


# -- Landlock --------------------------------------------------------------------------------------

def _add_fd_rule(ruleset: int, fd: int, rights: int, what: str) -> None:
    attr = struct.pack("=Qi", rights, fd)
    _check(_libc.syscall(_SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                         ctypes.create_string_buffer(attr, len(attr)), ctypes.c_uint32(0)),
           f"landlock rule for {what}")


def _add_path_rule(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a device file that does not exist needs no rule
    try:
        _add_fd_rule(ruleset, fd, rights, path)
    finally:
        os.close(fd)


def _landlock(abi: int, write: list[int], files: list[str], network: bool, net_namespace: bool) -> None:
    handled = _fs_rights(abi)
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 and not network and not net_namespace else 0
    scoped = _SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX if abi >= 6 else 0
    attr = struct.pack("=QQQ", handled, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _check(_libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.create_string_buffer(attr[:size], size),
                                   ctypes.c_size_t(size), ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        _add_path_rule(ruleset, "/", _READ_RIGHTS)
        for fd in write:
            _add_fd_rule(ruleset, fd, handled, os.readlink(f"/proc/self/fd/{fd}"))
        for path in files:
            _add_path_rule(ruleset, path, _FILE_RIGHTS & handled)
        _check(_libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(ruleset)


SEPARATOR = "\x1f"
_KEYS = ("write", "readonly", "file", "net", "userns", "landlock", "seccomp")


def parse(spec_text: str) -> dict[str, list[str]]:
    """The launcher's argument as key -> values; an unknown key or a missing ``=`` is an error."""
    spec: dict[str, list[str]] = {key: [] for key in _KEYS}
    for item in spec_text.split(SEPARATOR):
        key, equals, value = item.partition("=")
        if not equals or key not in spec:
            raise SandboxError(22, f"bad sandbox item {item!r}")
        spec[key].append(value)
    return spec


def _flag(spec: dict[str, list[str]], key: str) -> bool:
    return spec[key] == ["1"]


def apply(spec_text: str) -> None:
    """Confine this process (and so everything it starts) to the policy ``spec_text`` describes."""
    spec = parse(spec_text)
    write = spec["write"]
    network = _flag(spec, "net")
    userns = _flag(spec, "userns")
    if userns:
        _enter_namespaces(network, mounts=True)
        if not network:
            _loopback_up()
        pinned = _read_only_world(write, spec["readonly"])
        _drop_capabilities()
    else:
        pinned = [fd for fd in (pin(path) for path in write) if fd is not None]
    if userns and os.path.isdir("/dev/shm"):
        pinned.append(os.open("/dev/shm", os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY))  # the private tmpfs
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if _flag(spec, "seccomp") and not _install_filter(every_family=not userns and not network):
        raise SandboxError(38, f"no seccomp filter for {os.uname().machine}")
    abi = int((spec["landlock"] or ["0"])[0])
    if abi > landlock_abi():  # the parent was promised more than this kernel has
        raise SandboxError(95, f"Landlock ABI {abi} asked for, the kernel has {landlock_abi()}")
    if abi:
        ptys = ["/dev/ptmx", "/dev/pts"] if userns else []  # the sandbox's own devpts: its own terminals only
        _landlock(abi, pinned, spec["file"] + ptys, network, net_namespace=userns)
    for fd in pinned:
        os.close(fd)


def probe() -> dict[str, object]:
    """What this kernel offers, found by trying each layer in this (throw-away) process."""
    found: dict[str, object] = {"landlock": landlock_abi(), "userns": False, "seccomp": False, "errors": []}
    errors: list[str] = []
    try:
        _enter_namespaces(network=False, mounts=True)
        _loopback_up()
        for fd in _read_only_world([], []):
            os.close(fd)
        found["userns"] = True
    except Exception as exc:  # whatever fails, the layer is reported missing, with why
        errors.append(f"namespaces: {exc}")
    try:
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        found["seccomp"] = _install_filter(every_family=False)
    except Exception as exc:
        errors.append(f"seccomp: {exc}")
    found["errors"] = errors
    return found


def run_probe() -> None:
    """Entry point of ``python -I -S -c "... _sandbox.run_probe()"``: the probe's findings as JSON."""
    import json

    os.write(1, json.dumps(probe()).encode())
