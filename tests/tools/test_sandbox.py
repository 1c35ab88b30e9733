"""The command sandbox against real escape attempts (SPEC §9.1 "Sandbox"; issue 34).

Every attempt is a real command run by :class:`LocalExecutionEnvironment` under a sandboxed policy
on this kernel; the proof is the file system and the sockets outside, not the command's own report:
the outside directory is snapshotted before and compared after, the outside servers count what
reached them. Tests skip, saying which layer is missing, where the kernel lacks it.
"""

from __future__ import annotations

import os
import shlex
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from phi.tools.environment import ExecResult, LocalExecutionEnvironment
from phi.tools.sandbox import SandboxPolicy, SandboxStatus, SandboxUnavailable, launcher_spec, sandbox_status

STATUS = sandbox_status()
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=f"no sandbox here: {STATUS.describe()}")
needs_namespaces = pytest.mark.skipif(not STATUS.namespaces, reason="no unprivileged user/mount/network namespaces")
needs_landlock6 = pytest.mark.skipif(STATUS.landlock_abi < 6, reason=f"Landlock ABI {STATUS.landlock_abi} < 6 (no signal scoping)")

PY = shlex.quote(sys.executable)


def snapshot(root: Path) -> dict[str, tuple[int, int, int, bytes]]:
    """Every entry beneath ``root``: (mode, size, mtime_ns, content of regular files)."""
    found: dict[str, tuple[int, int, int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            content = path.read_bytes() if stat.S_ISREG(info.st_mode) else b""
            found[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns, content)
    info = root.lstat()
    found["."] = (info.st_mode, 0, info.st_mtime_ns, b"")
    return found


class Box:
    """A workspace, an outside directory with a victim file, and a sandboxed environment."""

    def __init__(self, base: Path, policy: SandboxPolicy) -> None:
        self.ws = base / "workspace"
        self.out = base / "outside"
        self.ws.mkdir()
        self.out.mkdir()
        (self.out / "victim").write_text("precious\n")
        (self.out / "sub").mkdir()
        self.env = LocalExecutionEnvironment(str(self.ws), sandbox=policy)
        self.before = snapshot(self.out)

    def run(self, command: str, timeout_ms: int = 60_000) -> ExecResult:
        return self.env.exec_command(f"OUT={shlex.quote(str(self.out))}\n{command}", timeout_ms)

    def outside_unchanged(self) -> bool:
        return snapshot(self.out) == self.before


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    yield made
    made.env.cleanup()


ESCAPES = {
    "absolute path": 'echo x > "$OUT/new"; echo x >> "$OUT/victim"',
    "dot-dot": 'echo x > ../outside/new; echo x > ../outside/victim',
    "symlink planted": 'ln -s "$OUT/victim" link; echo x > link; ln -s "$OUT" dirlink; echo x > dirlink/new',
    "hardlink planted": 'ln "$OUT/victim" hard; echo x > hard',
    "/proc/self/root": 'echo x > "/proc/self/root$OUT/new"; echo x > "/proc/self/cwd/../outside/victim"',
    "rename out": 'echo x > mine; mv mine "$OUT/moved"; ' + PY + ' -c "import os; os.rename(\'mine\', \'../outside/m2\')"',
    "rename in": 'mv "$OUT/victim" stolen; ' + PY + ' -c "import os,sys; os.rename(sys.argv[1], \'s2\')" "$OUT/victim"',
    "link out": 'echo x > mine; ln mine "$OUT/linked"; ln -s /etc/passwd "$OUT/sym"',
    "mkfifo and mknod": 'mkfifo "$OUT/fifo"; mknod "$OUT/node" p; mkdir "$OUT/dir"',
    "chmod chown utime xattr": ('chmod 777 "$OUT/victim" "$OUT"; chown 1:1 "$OUT/victim"; touch -d 2001-01-01 "$OUT/victim"; '
                                + PY + ' -c "import os,sys; os.setxattr(sys.argv[1], \'user.x\', b\'1\')" "$OUT/victim"'),
    "truncate and delete": 'truncate -s 0 "$OUT/victim"; : > "$OUT/victim"; rm -f "$OUT/victim"; rmdir "$OUT/sub"; '
                           'find "$OUT" -type f -exec shred -u {} +; unlink "$OUT/victim"',
    "rsync and cp": 'mkdir -p empty; rsync -a --delete ./empty/ "$OUT/" 2>/dev/null; cp /etc/hostname "$OUT/"',
    "python open": PY + ' -c "import sys; open(sys.argv[1] + \'/py\', \'w\').write(\'x\')" "$OUT"',
    "fd passed through /proc": 'exec 3<"$OUT/victim"; echo x > /proc/self/fd/3; echo y > /dev/fd/3',
}


@needs_sandbox
@pytest.mark.parametrize("attempt", sorted(ESCAPES))
def test_a_write_outside_the_workspace_is_refused(box: Box, attempt: str) -> None:
    result = box.run(ESCAPES[attempt])
    assert box.outside_unchanged(), f"{attempt}: outside changed; output: {result.output}"
    assert (box.out / "victim").read_text() == "precious\n"


#: Kernels with one layer only: each alone still confines writes (Landlock alone does not cover
#: chmod/chown/utime/xattr — SandboxStatus.gaps says so) and, with seccomp, the network.
PARTIAL = {
    "landlock only": SandboxStatus(landlock_abi=STATUS.landlock_abi, seccomp=STATUS.seccomp),
    "namespaces only": SandboxStatus(namespaces=STATUS.namespaces, seccomp=STATUS.seccomp),
}


@pytest.mark.parametrize("kernel", sorted(PARTIAL))
@pytest.mark.parametrize("attempt", sorted(ESCAPES))
def test_one_layer_alone_still_refuses_writes_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      kernel: str, attempt: str) -> None:
    status = PARTIAL[kernel]
    if not status.available:
        pytest.skip(f"{kernel}: this kernel lacks that layer")
    if kernel == "landlock only" and attempt == "chmod chown utime xattr":
        assert any("chmod" in gap for gap in status.gaps)  # said, not kept
        return
    import phi.tools.environment as environment

    monkeypatch.setattr(environment, "launcher_spec",
                        lambda policy, roots, temp: launcher_spec(policy, roots, temp, status))
    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    try:
        result = made.run(ESCAPES[attempt])
        assert made.outside_unchanged(), f"{kernel}, {attempt}: outside changed; output: {result.output}"
        listener = Listener(tmp_path)
        try:
            made.run(_connect_command(listener))
            assert listener.arrived() == [] or not status.seccomp
        finally:
            listener.close()
    finally:
        made.env.cleanup()


@needs_sandbox
def test_the_workspace_and_private_temp_stay_writable(box: Box) -> None:
    result = box.run('echo made > made.txt && mkdir -p d/e && mv made.txt d/e/ && cat d/e/made.txt && '
                     'echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && chmod +x d/e/made.txt && '
                     'ln -s d/e/made.txt ok && cat ok && echo gone > /dev/null && echo end')
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["made", "t", "made", "end"]
    assert box.outside_unchanged()


@needs_sandbox
def test_a_pre_existing_symlink_out_of_the_workspace_does_not_lead_out(box: Box) -> None:
    (box.ws / "planted").symlink_to(box.out / "victim")
    (box.ws / "planted_dir").symlink_to(box.out)
    box.run('echo x > planted; echo x >> planted; echo x > planted_dir/new; rm -rf planted_dir/')
    assert box.outside_unchanged()


@needs_sandbox
def test_a_detached_descendant_writing_after_the_command_returned_is_refused(tmp_path: Path) -> None:
    """A background command (kept running after its call) detaches with setsid, nohup and a double
    fork; after the call returned, each tries to write outside when the test says go."""
    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    go = made.ws / "go"
    script = (f'while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.05; done; '
              'echo late > "$OUT/$1" 2>/dev/null; echo "$1 $?" > "done-$1"')
    body = shlex.quote(script)
    command = (f'OUT={shlex.quote(str(made.out))}; export OUT; '
               f'setsid bash -c {body} _ setsid & nohup bash -c {body} _ nohup >/dev/null 2>&1 & '
               f'( ( bash -c {body} _ double & ) & ) ; exit 0')
    log = os.open(tmp_path / "bg.log", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        proc = made.env.start_background(command, None, None, log)
    finally:
        os.close(log)
    try:
        go.write_text("go")
        deadline = time.monotonic() + 60
        names = ("setsid", "nohup", "double")
        while not all((made.ws / f"done-{n}").exists() for n in names) and time.monotonic() < deadline:
            time.sleep(0.05)
        for name in names:
            status = (made.ws / f"done-{name}").read_text().split()
            assert status[0] == name and status[1] != "0", status
        assert made.outside_unchanged()
    finally:
        from phi.tools.process import stop_background

        stop_background([proc])
        made.env.cleanup()


class Listener:
    """A TCP, UDP and Unix (path and abstract) listener outside the sandbox, counting what arrives."""

    def __init__(self, directory: Path) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.setblocking(False)
        self.unix_path = str(directory / "outside.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.unix_path)
        self.unix.listen()
        self.abstract_name = f"\0phi-sandbox-test-{os.getpid()}-{id(self)}"
        self.abstract = socket.socket(socket.AF_UNIX)
        self.abstract.bind(self.abstract_name)
        self.abstract.listen()
        for sock in (self.tcp, self.unix, self.abstract):
            sock.setblocking(False)

    def arrived(self) -> list[str]:
        seen = []
        for name, sock in (("tcp", self.tcp), ("unix", self.unix), ("abstract", self.abstract)):
            try:
                conn, _ = sock.accept()
                conn.close()
                seen.append(name)
            except BlockingIOError:
                pass
        try:
            self.udp.recv(100)
            seen.append("udp")
        except BlockingIOError:
            pass
        return seen

    def close(self) -> None:
        for sock in (self.tcp, self.udp, self.unix, self.abstract):
            sock.close()


CONNECT = r'''
import socket, sys
tcp, udp, path, abstract = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
def attempt(name, make, addr, dgram=False):
    try:
        s = make()
        s.settimeout(5)
        if dgram:
            s.sendto(b"x", addr)
        else:
            s.connect(addr)
        print(name, "reached")
    except OSError as exc:
        print(name, "refused", type(exc).__name__)
attempt("tcp", lambda: socket.socket(), ("127.0.0.1", tcp))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM), ("127.0.0.1", udp), True)
attempt("unix", lambda: socket.socket(socket.AF_UNIX), path)
attempt("abstract", lambda: socket.socket(socket.AF_UNIX), "\0" + abstract)
attempt("internet", lambda: socket.socket(), ("192.0.2.1", 80))
'''


def _connect_command(listener: Listener) -> str:
    return " ".join([PY, "-c", shlex.quote(CONNECT), str(listener.tcp.getsockname()[1]),
                     str(listener.udp.getsockname()[1]), shlex.quote(listener.unix_path),
                     shlex.quote(listener.abstract_name[1:])])


@needs_sandbox
@pytest.mark.skipif(not (STATUS.namespaces or STATUS.seccomp), reason="neither network namespaces nor seccomp here")
def test_the_network_is_off_tcp_udp_and_unix_sockets_to_outside_listeners_fail(box: Box, tmp_path: Path) -> None:
    listener = Listener(tmp_path)
    try:
        result = box.run(_connect_command(listener))
        lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
        assert set(lines) == {"tcp", "udp", "unix", "abstract", "internet"}, result.output
        assert not any(value.startswith("reached") for name, value in lines.items() if name != "udp"), lines
        assert listener.arrived() == [], result.output
    finally:
        listener.close()


@needs_sandbox
def test_with_the_network_allowed_the_outside_listeners_are_reached(tmp_path: Path) -> None:
    made = Box(tmp_path, SandboxPolicy("workspace-write", network=True))
    listener = Listener(tmp_path)
    try:
        result = made.run(_connect_command(listener))
        assert "tcp reached" in result.stdout and "udp reached" in result.stdout, result.output
        # other programs' Unix sockets (docker, tmux, D-Bus...) run commands outside: still closed
        assert "unix refused" in result.stdout and "abstract refused" in result.stdout, result.output
        assert sorted(listener.arrived()) == ["tcp", "udp"]
    finally:
        listener.close()
        made.env.cleanup()


@needs_namespaces
def test_a_server_the_command_starts_on_loopback_still_works(box: Box) -> None:
    """Tests that start their own server on 127.0.0.1 run unchanged: the namespace has loopback."""
    script = ("import socket; s = socket.create_server(('127.0.0.1', 0)); c = socket.create_connection(s.getsockname()); "
              "a, _ = s.accept(); c.sendall(b'pong'); print(a.recv(4).decode())")
    result = box.run(f"{PY} -c {shlex.quote(script)}")
    assert result.stdout.strip() == "pong", result.output


@needs_sandbox
def test_git_and_pytest_work_inside_the_workspace(box: Box) -> None:
    (box.ws / "test_one.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    result = box.run("git init -q . && git add -A && git -c user.name=t -c user.email=t@e commit -qm one && "
                     "git log --oneline | wc -l && git status --short | wc -l && "
                     f"{PY} -m pytest -q -p no:cacheprovider test_one.py 2>&1 | tail -1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")
    assert lines[0].strip() == "1" and lines[1].strip() == "0", result.output
    assert "1 passed" in result.stdout, result.output
    assert box.outside_unchanged()


@needs_namespaces
def test_an_existing_git_directory_is_read_only_unless_allowed(tmp_path: Path) -> None:
    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    subprocess.run(["git", "init", "-q", str(made.ws)], check=True)
    (made.ws / "f.txt").write_text("x\n")
    hooks = made.ws / ".git" / "hooks"
    result = made.run('git status --short; echo evil > .git/hooks/pre-commit; echo "[core]" >> .git/config; '
                      'git add f.txt; echo "add $?"; mkdir -p .phi; echo "{}" > .phi/settings.json; mv .git .git-old')
    assert "?? f.txt" in result.stdout, result.output
    assert "add 0" not in result.stdout, result.output
    assert not (hooks / "pre-commit").exists() and (made.ws / ".git").is_dir()
    made.env.cleanup()

    writable = LocalExecutionEnvironment(str(made.ws), sandbox=SandboxPolicy("workspace-write", git_writable=True))
    try:
        done = writable.exec_command("git add f.txt && git -c user.name=t -c user.email=t@e commit -qm one && "
                                     "git log --oneline | wc -l", 60_000)
        assert done.exit_code == 0 and done.stdout.strip() == "1", done.output
    finally:
        writable.cleanup()


@needs_namespaces
def test_the_phi_settings_directory_in_the_workspace_is_read_only(tmp_path: Path) -> None:
    made = Box(tmp_path, SandboxPolicy("workspace-write", git_writable=True))
    (made.ws / ".phi").mkdir()
    (made.ws / ".phi" / "settings.json").write_text("{}")
    made.run('echo \'{"permissions": {"allow": ["shell"]}}\' > .phi/settings.json; rm -rf .phi; mv .phi x')
    assert (made.ws / ".phi" / "settings.json").read_text() == "{}"
    made.env.cleanup()


@needs_sandbox
def test_read_only_mode_writes_only_its_private_temp(tmp_path: Path) -> None:
    made = Box(tmp_path, SandboxPolicy("read-only"))
    (made.ws / "mine").write_text("keep\n")
    try:
        result = made.run('cat mine; echo x > mine; echo new > new; echo t > "$TMPDIR/t" && cat "$TMPDIR/t"; '
                          'echo x > "$OUT/new"; echo z > /dev/null && echo null-ok')
        assert result.stdout.split() == ["keep", "t", "null-ok"], result.output
        assert (made.ws / "mine").read_text() == "keep\n" and not (made.ws / "new").exists()
        assert made.outside_unchanged()
    finally:
        made.env.cleanup()


@needs_namespaces
def test_dev_shm_is_private(box: Box) -> None:
    name = f"phi-sandbox-shm-{os.getpid()}"
    result = box.run(f"echo x > /dev/shm/{name} && ls /dev/shm")
    assert result.exit_code == 0, result.output
    assert not os.path.exists(f"/dev/shm/{name}")


@needs_landlock6
def test_a_sandboxed_command_cannot_signal_processes_outside(box: Box) -> None:
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        result = box.run(f"kill -TERM {victim.pid}; echo $?; kill -0 {os.getpid()}; echo $?")
        assert result.stdout.split() == ["1", "1"], result.output
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


@needs_sandbox
def test_the_private_temp_is_removed_at_cleanup(tmp_path: Path) -> None:
    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    temp = made.run('echo "$TMPDIR"').stdout.strip()
    assert os.path.isdir(temp) and stat.S_IMODE(os.stat(temp).st_mode) == 0o700
    made.env.cleanup()
    assert not os.path.exists(temp)


@needs_sandbox
def test_the_launcher_refuses_to_run_a_command_it_cannot_confine(tmp_path: Path) -> None:
    """A policy the kernel rejects (a layer it lacks, claimed present) is not run unconfined."""
    from phi.tools.process import run_process

    fake = SandboxStatus(landlock_abi=99, namespaces=STATUS.namespaces, seccomp=STATUS.seccomp)
    spec = launcher_spec(SandboxPolicy("workspace-write"), [str(tmp_path)], str(tmp_path), fake)
    marker = tmp_path.parent / f"ran-{os.getpid()}"
    outcome = run_process(["/bin/sh", "-c", f"echo ran > {shlex.quote(str(marker))}"], cwd=str(tmp_path), env=None,
                          timeout_ms=30_000, sandbox=spec)
    assert outcome.exit_code == 126, outcome.stderr
    assert "phi sandbox: cannot confine" in outcome.stderr
    assert not marker.exists()


def test_without_a_sandbox_a_sandboxed_policy_is_refused_not_run(tmp_path: Path) -> None:
    """Where the kernel offers nothing (here: PHI_NO_SANDBOX), a sandboxed command raises."""
    script = ("import sys; from phi.tools.environment import LocalExecutionEnvironment\n"
              "from phi.tools.sandbox import sandbox_status, SandboxUnavailable\n"
              "print(sandbox_status().available, sandbox_status().describe())\n"
              "env = LocalExecutionEnvironment(sys.argv[1], sandbox='workspace-write')\n"
              "try:\n    env.exec_command('echo ran > ran', 10000)\nexcept SandboxUnavailable as e:\n    print('refused', e)\n"
              "print(LocalExecutionEnvironment(sys.argv[1], sandbox='full').exec_command('echo full', 10000).stdout)")
    env = {**os.environ, "PHI_NO_SANDBOX": "1"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("False no sandbox on this machine (disabled by PHI_NO_SANDBOX)"), done.stdout + done.stderr
    assert lines[1].startswith("refused the workspace-write sandbox cannot run here"), lines
    assert lines[2] == "full"
    assert not (tmp_path / "ran").exists()


def test_policies_and_settings_are_checked() -> None:
    from phi.errors import ConfigError
    from phi.tools.sandbox import as_policy

    assert as_policy(None).mode == "full" and not as_policy("full").sandboxed
    assert as_policy("read-only").mode == "read-only"
    assert as_policy("workspace-write").describe() == "workspace-write, network off, .git read-only"
    with pytest.raises(ConfigError, match="unknown sandbox mode 'workspace'"):
        as_policy("workspace")
    with pytest.raises(ConfigError, match="unknown sandbox mode"):
        SandboxPolicy("everything")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="sandbox must be"):
        as_policy(3)  # type: ignore[arg-type]
    with pytest.raises(SandboxUnavailable, match="cannot run here"):
        launcher_spec(SandboxPolicy(), ["/x"], "/tmp", SandboxStatus(reason="test"))



@needs_namespaces
def test_system_v_ipc_keyrings_and_terminals_of_the_host_are_out_of_reach(box: Box) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x5A000000 + os.getpid() % 0xFFFFFF
    segment = libc.shmget(key, 4096, 0o1600)  # IPC_CREAT | 0600
    assert segment >= 0
    host_pty, _ = os.openpty()
    pts = os.ttyname(_)
    try:
        script = ("import ctypes, os, socket, sys\n"
                  "libc = ctypes.CDLL(None, use_errno=True)\n"
                  f"print('shm', libc.shmget({key}, 0, 0) >= 0)\n"
                  "print('keyctl', libc.syscall(250 if os.uname().machine == 'x86_64' else 219, 0, -3, 0) >= 0)\n"
                  f"print('pts', os.path.exists({pts!r}))\n"
                  "try:\n    socket.socket(40, socket.SOCK_STREAM); print('vsock', True)\n"
                  "except OSError:\n    print('vsock', False)\n"
                  "try:\n    socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); print('dgram-pair', True)\n"
                  "except OSError:\n    print('dgram-pair', False)\n"
                  "a, b = socket.socketpair(); a.sendall(b'ok'); print('stream-pair', b.recv(2) == b'ok')\n"
                  "m, s = os.openpty(); print('own-pty', os.isatty(s))\n")
        result = box.run(f"{PY} -c {shlex.quote(script)}")
        assert result.stdout.split("\n")[:7] == ["shm False", "keyctl False", "pts False", "vsock False",
                                                 "dgram-pair False", "stream-pair True", "own-pty True"], result.output
    finally:
        libc.shmctl(segment, 0, None)  # IPC_RMID
        os.close(host_pty)
        os.close(_)


@needs_sandbox
def test_a_write_root_turned_into_a_symlink_by_a_command_does_not_lead_out(tmp_path: Path) -> None:
    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    (made.ws / "sub").mkdir()
    made.env = LocalExecutionEnvironment(str(made.ws), sandbox="workspace-write",
                                         allowed_write_roots=[str(made.ws), str(made.ws / "sub"), str(made.ws / "later")])
    try:
        made.run('mv sub sub_old && ln -s "$OUT" sub && ln -s "$OUT" later && echo swapped')
        result = made.run('echo x > sub/pwned; echo y > later/pwned; echo z > "$OUT/pwned"')
        assert made.outside_unchanged(), result.output  # the roots that lead elsewhere now are not writable
    finally:
        made.env.cleanup()


@needs_sandbox
def test_the_launcher_runs_nothing_a_command_could_change_phi_vendored_in_the_workspace(tmp_path: Path) -> None:
    """phi copied into the project under another name: a command rewrites the copy's launcher files;
    the next command's launcher still runs the code read before, and stays confined."""
    import shutil

    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    vendor = made.ws / "app" / "_vendor"
    shutil.copytree(Path(__file__).resolve().parents[2] / "phi", vendor / "phi2",
                    ignore=shutil.ignore_patterns("__pycache__"))
    script = f"""
import sys
sys.path.insert(0, {str(made.ws / 'app' / '_vendor')!r})
from phi2.tools import LocalExecutionEnvironment
env = LocalExecutionEnvironment({str(made.ws)!r}, sandbox="workspace-write")
evil = "\\nimport os\\nopen({str(made.out / 'pwned')!r}, 'w').write('x')\\n"
for name in ("_sandbox.py", "_reaper.py"):
    print(env.exec_command(f"echo {{evil!r}} >> app/_vendor/phi2/tools/{{name}}; echo $?", 30000).stdout.strip())
print(env.exec_command("echo second > second.txt; cat second.txt", 30000).output.strip())
env.cleanup()
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    codes = done.stdout.split()
    # phi's own package lies inside the workspace: read-only for commands (the host imports from it later)
    assert codes[:2] != ["0", "0"] and codes[2:] == ["second"], done.stdout + done.stderr
    assert "open(" not in (vendor / "phi2" / "tools" / "_sandbox.py").read_text().splitlines()[-1]
    assert made.outside_unchanged()
    made.env.cleanup()


@needs_namespaces
def test_a_git_symlink_or_gitdir_file_protects_what_it_leads_to(tmp_path: Path) -> None:
    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    subprocess.run(["git", "init", "-q", "--separate-git-dir", str(made.ws / "store"), str(made.ws)], check=True)
    pointer = (made.ws / ".git").read_text()
    try:
        made.run('echo evil > store/hooks/pre-commit; echo "[core]" >> store/config; echo "gitdir: /tmp" > .git')
        assert not (made.ws / "store" / "hooks" / "pre-commit").exists()
        assert (made.ws / ".git").read_text() == pointer
    finally:
        made.env.cleanup()


@needs_namespaces
def test_an_existing_mcp_json_in_the_workspace_is_read_only(box: Box) -> None:
    (box.ws / ".mcp.json").write_text("{}")
    box.run('echo \'{"mcpServers": {"x": {"command": "touch"}}}\' > .mcp.json; rm -f .mcp.json')
    assert (box.ws / ".mcp.json").read_text() == "{}"


def test_the_launcher_keeps_the_loader_variables_aside_for_the_command() -> None:
    from phi.tools.process import launcher_env

    env = launcher_env({"LD_LIBRARY_PATH": "/ws/lib", "LD_PRELOAD": "/ws/x.so", "PATH": "/bin"}, "spec")
    assert env == {"PHI_LAUNCHER_KEPT_LD_LIBRARY_PATH": "/ws/lib", "PHI_LAUNCHER_KEPT_LD_PRELOAD": "/ws/x.so",
                   "PATH": "/bin"}
    assert launcher_env({"LD_PRELOAD": "x"}, None) == {"LD_PRELOAD": "x"}


@needs_sandbox
def test_the_command_gets_its_loader_variables_back(tmp_path: Path) -> None:
    env = LocalExecutionEnvironment(str(tmp_path), sandbox="workspace-write",
                                    base_env={"PATH": os.environ["PATH"], "LD_LIBRARY_PATH": "/nowhere/lib"})
    try:
        assert env.exec_command('echo "$LD_LIBRARY_PATH"', 30_000).stdout.strip() == "/nowhere/lib"
    finally:
        env.cleanup()


@needs_sandbox
def test_the_file_tools_keep_to_what_sandboxed_commands_may_change(tmp_path: Path) -> None:
    from phi.tools.sandbox import ProtectedPathError

    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    (made.ws / ".git").mkdir()
    (made.ws / "link").symlink_to(made.ws / ".git")
    try:
        for path in (".git/config", "link/hooks/pre-commit", ".phi/settings.json", ".mcp.json", "sub/.git/config"):
            with pytest.raises(ProtectedPathError, match="is protected by the sandbox"):
                made.env.write_file(path, "x", roots=[str(made.ws)])
        made.env.write_file(".gitignore", "x\n", roots=[str(made.ws)])
        made.env.write_file("sub/.mcp.json", "{}", roots=[str(made.ws)])
        assert (made.ws / ".gitignore").exists() and not (made.ws / ".git" / "config").exists()
        read_only = LocalExecutionEnvironment(str(made.ws), sandbox="read-only")
        with pytest.raises(ProtectedPathError, match="read-only sandbox allows no writes"):
            read_only.write_file("new.txt", "x", roots=[str(made.ws)])
        full = LocalExecutionEnvironment(str(made.ws), sandbox="full")
        full.write_file(".git/config", "[core]\n", roots=[str(made.ws)])
    finally:
        made.env.cleanup()


@needs_sandbox
def test_phis_own_git_runs_the_repositorys_filters_inside_the_sandbox(tmp_path: Path) -> None:
    """A command may write the repository's config (a new .git, a filter); phi's git snapshot for the
    next prompt runs git, which runs that filter: read-only and confined, not with the user's rights."""
    from phi.coding.git_context import git_snapshot

    made = Box(tmp_path, SandboxPolicy("workspace-write", git_writable=True))
    pwned = made.out / "pwned"
    try:
        made.run("git init -q . && echo '*.txt filter=evil' > .gitattributes && echo a > f.txt && "
                 "git add -A && git -c user.name=t -c user.email=t@e commit -qm one && echo b > f.txt && "
                 f"git config filter.evil.clean 'sh -c \"touch {pwned}; cat\"' && git config core.fsmonitor "
                 f"'touch {pwned}.fsmonitor; true'")
        snapshot = git_snapshot(str(made.ws), sandbox=made.env.helper_sandbox())
        assert snapshot is not None and snapshot.modified == 1
        assert made.outside_unchanged()
        git_snapshot(str(made.ws))  # the same snapshot unsandboxed runs the filter: the test can fail
        assert pwned.exists()
    finally:
        made.env.cleanup()



@needs_sandbox
def test_a_phi_settings_or_mcp_json_a_command_creates_is_set_aside(box: Box) -> None:
    """No mount can protect a name that does not exist yet: what a command creates there is renamed
    once it returns (phi would trust or start it at its next start, outside the sandbox)."""
    result = box.run('mkdir -p .phi && echo \'{"permissions": {"allow": ["shell"]}}\' > .phi/settings.json; '
                     'echo \'{"mcpServers": {"x": {"command": "touch"}}}\' > .mcp.json; echo done')
    assert not (box.ws / ".phi").exists() and not (box.ws / ".mcp.json").exists()
    assert (box.ws / ".phi.phi-set-aside-1" / "settings.json").exists()
    assert (box.ws / ".mcp.json.phi-set-aside-1").exists()
    assert "created .mcp.json, which phi would read or run outside the sandbox" in result.stderr


@needs_sandbox
def test_the_file_tools_check_protected_names_on_the_walk_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A symlink swapped in after the path was checked (a second actor racing the write) cannot lead
    the write into .git: the walk refuses the name as it passes it."""
    from phi.tools import environment
    from phi.tools.sandbox import ProtectedPathError

    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    (made.ws / ".git").mkdir()
    (made.ws / ".git" / "config").write_text("[core]\n")
    monkeypatch.setattr(environment.LocalExecutionEnvironment, "_refuse_protected", lambda *args: None)
    (made.ws / "hk").symlink_to(made.ws / ".git" / "config")  # as if swapped in right after the check
    try:
        with pytest.raises(ProtectedPathError, match=r"\.git is protected"):
            made.env.write_file("hk", "[core]\nfsmonitor = touch /tmp/x\n", roots=[str(made.ws)])
        assert (made.ws / ".git" / "config").read_text() == "[core]\n"
    finally:
        made.env.cleanup()


def test_the_interpreters_packages_and_scripts_count_as_phis_own_code() -> None:
    from phi.tools.sandbox import host_code

    code = host_code()
    assert os.path.realpath(os.path.join(sys.prefix, "bin")) in code
    assert any(os.path.basename(path) == "site-packages" for path in code)
    assert os.path.realpath(os.path.dirname(os.path.dirname(__import__("phi").tools.__file__))) in code


@needs_namespaces
def test_a_virtual_environment_phi_runs_from_cannot_be_renamed_away_or_rewritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """phi's venv inside the workspace is read-only as a whole: renaming it (or a directory in it)
    to plant another in its place, or rewriting pyvenv.cfg, fails."""
    import phi.tools.sandbox as sandbox

    made = Box(tmp_path, SandboxPolicy("workspace-write"))
    venv = made.ws / ".venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setattr(sandbox, "_host_code", (str(venv),))
    try:
        made.run('mv .venv .venv-old; mv .venv/lib .venv/lib-old; echo "home = /tmp" > .venv/pyvenv.cfg')
        assert (venv / "lib").is_dir() and not (made.ws / ".venv-old").exists()
        assert (venv / "pyvenv.cfg").read_text() == "home = /usr/bin\n"
    finally:
        made.env.cleanup()
