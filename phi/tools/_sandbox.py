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
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_MOUNT_ATTR_RDONLY = 1
_AT_RECURSIVE = 0x8000
_AT_FDCWD = -100

# prctl, capabilities, seccomp
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_EPERM = 1
# (audit arch, socket, io_uring_setup) per machine; elsewhere there is no seccomp layer
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425)}
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
    flags = _CLONE_NEWUSER | (_CLONE_NEWNS if mounts else 0) | (0 if network else _CLONE_NEWNET)
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


def _mount(source: str | None, target: str, fstype: str | None, flags: int, what: str) -> None:
    _check(_libc.mount(None if source is None else source.encode(), target.encode(),
                       None if fstype is None else fstype.encode(), ctypes.c_ulong(flags), None),
           f"{what} {target}")


def _set_readonly(path: str, readonly: bool, recursive: bool) -> None:
    attr = struct.pack("=QQQQ", _MOUNT_ATTR_RDONLY if readonly else 0, 0 if readonly else _MOUNT_ATTR_RDONLY, 0, 0)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    _check(_libc.syscall(_SYS_MOUNT_SETATTR, ctypes.c_int(_AT_FDCWD), path.encode(),
                         ctypes.c_uint(_AT_RECURSIVE if recursive else 0), buffer, ctypes.c_size_t(len(attr))),
           f"mount_setattr {path}")


def _read_only_world(write: list[str], readonly: list[str]) -> None:
    """Every mount read-only except ``write`` (bind-mounted back) minus ``readonly`` inside them."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, "make private")
    writable = [path for path in write if os.path.isdir(path)]
    for path in writable:
        _mount(path, path, None, _MS_BIND | _MS_REC, "bind")
    shm = os.path.isdir("/dev/shm")
    if shm:
        _mount("tmpfs", "/dev/shm", "tmpfs", 0, "private tmpfs on")
    _set_readonly("/", True, recursive=True)
    for path in writable + (["/dev/shm"] if shm else []):
        try:
            _set_readonly(path, False, recursive=False)
        except SandboxError as exc:
            if exc.errno != 1:  # EPERM: a mount read-only before the sandbox stays so; nothing is lost
                raise
    for path in readonly:
        if os.path.lexists(path) and not os.path.islink(path):
            _mount(path, path, None, _MS_BIND | _MS_REC, "bind")
            _set_readonly(path, True, recursive=True)
    # The working directory still points into the mount beneath the new ones: walk to it again.
    os.chdir(os.getcwd())


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


def _install_socket_filter(every_family: bool) -> bool:
    machine = os.uname().machine
    if machine not in _SECCOMP_ARCH:
        return False
    arch, nr_socket, nr_io_uring = _SECCOMP_ARCH[machine]
    ld_w_abs, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    deny = _SECCOMP_RET_ERRNO | _EPERM
    program = [
        _bpf(ld_w_abs, 4),  # seccomp_data.arch
        _bpf(jeq, arch, 1, 0),
        _bpf(ret, deny),  # another ABI (e.g. 32-bit compat) could reach socketcall: refused
        _bpf(ld_w_abs, 0),  # seccomp_data.nr
        _bpf(jge, _X32_BIT, 0, 1),
        _bpf(ret, deny),
        _bpf(jeq, nr_io_uring, 0, 1),
        _bpf(ret, deny),
        _bpf(jeq, nr_socket, 0, 3 if not every_family else 1),
    ]
    if every_family:
        program += [_bpf(ret, deny), _bpf(ret, _SECCOMP_RET_ALLOW)]
    else:
        program += [
            _bpf(ld_w_abs, 16),  # seccomp_data.args[0] (low half): the address family
            _bpf(jeq, _socket.AF_UNIX, 0, 1),
            _bpf(ret, deny),
            _bpf(ret, _SECCOMP_RET_ALLOW),
        ]
    code = b"".join(program)
    filters = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.create_string_buffer(fprog, len(fprog)), 0, 0),
           "seccomp")
    return True


# -- Landlock --------------------------------------------------------------------------------------

def _add_path_rule(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a directory or device file that does not exist needs no rule
    try:
        attr = struct.pack("=Qi", rights, fd)
        _check(_libc.syscall(_SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                             ctypes.create_string_buffer(attr, len(attr)), ctypes.c_uint32(0)),
               f"landlock rule for {path}")
    finally:
        os.close(fd)


def _landlock(abi: int, write: list[str], files: list[str], network: bool, net_namespace: bool) -> None:
    handled = _fs_rights(abi)
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 and not network and not net_namespace else 0
    scoped = (_SCOPE_SIGNAL | (0 if network else _SCOPE_ABSTRACT_UNIX)) if abi >= 6 else 0
    attr = struct.pack("=QQQ", handled, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _check(_libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.create_string_buffer(attr[:size], size),
                                   ctypes.c_size_t(size), ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        _add_path_rule(ruleset, "/", _READ_RIGHTS)
        for path in write:
            _add_path_rule(ruleset, path, handled)
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
        _read_only_world(write, spec["readonly"])
        _drop_capabilities()
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if not network and _flag(spec, "seccomp") and not _install_socket_filter(every_family=not userns):
        raise SandboxError(38, f"no seccomp filter for {os.uname().machine}")
    abi = int((spec["landlock"] or ["0"])[0])
    if abi > landlock_abi():  # the parent was promised more than this kernel has
        raise SandboxError(95, f"Landlock ABI {abi} asked for, the kernel has {landlock_abi()}")
    if abi:
        shm = ["/dev/shm"] if userns and os.path.isdir("/dev/shm") else []  # the private tmpfs
        _landlock(abi, write + shm, spec["file"], network, net_namespace=userns)


def probe() -> dict[str, object]:
    """What this kernel offers, found by trying each layer in this (throw-away) process."""
    found: dict[str, object] = {"landlock": landlock_abi(), "userns": False, "seccomp": False, "errors": []}
    errors: list[str] = []
    try:
        _enter_namespaces(network=False, mounts=True)
        _loopback_up()
        _read_only_world([], [])
        found["userns"] = True
    except Exception as exc:  # whatever fails, the layer is reported missing, with why
        errors.append(f"namespaces: {exc}")
    try:
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        found["seccomp"] = _install_socket_filter(every_family=False)
    except Exception as exc:
        errors.append(f"seccomp: {exc}")
    found["errors"] = errors
    return found


def run_probe() -> None:
    """Entry point of ``python -I -S -c "... _sandbox.run_probe()"``: the probe's findings as JSON."""
    import json

    os.write(1, json.dumps(probe()).encode())
