"""Process-tree keeper for one command (SPEC §9.1 "Command execution"; Linux only).

Run as ``python -I -S _reaper.py GRACE_SECONDS LC_CTYPE PROGRAM [ARGS...]``; standard library only,
never imports phi. ``LC_CTYPE`` is ``-`` when the program's environment has no ``LC_CTYPE``, else
``=`` followed by its value: Python's start-up locale coercion (PEP 538) may have set or changed it
in this process's environment, and the program must get the environment it was given. It marks itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``), so every
process the command starts stays inside its tree even after ``setsid``, ``nohup ... &``, a double
fork or ``start_new_session=True``: when such a process's parent exits it is re-parented here rather
than to init. Then it spawns the program and waits:

* the program exits → exit with its status at once (background processes are left running, as a
  shell would leave them);
* SIGTERM/SIGINT/SIGHUP (timeout or cancellation in the parent) → SIGTERM to every descendant,
  up to GRACE_SECONDS for them to exit, then SIGKILL to every descendant until none is left
  (descendants are found by walking ``/proc``), then exit.

Keeping this in a separate process leaves the host program's own children and signal handling alone.
"""

import ctypes
import os
import sys
import time

# The C core of the signal module: ``import signal`` also builds its enums, which is a third of
# this process's start-up time.
import _signal as signal

_PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_WAIT_SIGNALS = {signal.SIGCHLD, *_STOP_SIGNALS}
_KILL_ROUNDS = 200
# Waits between two looks at the tree while it shuts down: SIGCHLD ends a wait early, but only for
# direct children, so a grandchild's exit is seen on the next look. Short first, then longer.
_FIRST_LOOK_SECONDS = 0.002
_LAST_LOOK_SECONDS = 0.05


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def parent_map() -> dict:
    """pid -> parent pid for every process visible in /proc."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            parents[int(name)] = int(fields[1])
    return parents


def descendants(root: int) -> list:
    children: dict = {}
    for pid, parent in parent_map().items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def signal_all(pids: list, sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def reap(statuses: dict) -> None:
    """Collect every exited child without blocking; remember the statuses."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = status


def _looks(until: float):
    """Seconds to wait before each next look at the tree, growing, until ``until`` (monotonic)."""
    wait = _FIRST_LOOK_SECONDS
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return
        yield min(wait, left)
        wait = min(wait * 2, _LAST_LOOK_SECONDS)


def stop_tree(grace: float, statuses: dict) -> None:
    me = os.getpid()
    signal_all(descendants(me), signal.SIGTERM)
    for wait in _looks(time.monotonic() + grace):
        reap(statuses)
        if not descendants(me):
            return
        signal.sigtimedwait({signal.SIGCHLD}, wait)
    for _ in range(_KILL_ROUNDS):  # children forked meanwhile are re-parented here and found next round
        reap(statuses)
        pids = descendants(me)
        if not pids:
            return
        signal_all(pids, signal.SIGKILL)
        signal.sigtimedwait({signal.SIGCHLD}, 0.02)


def exit_code(status) -> int:
    if status is None:
        return 128 + signal.SIGTERM
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def program_env(lc_ctype: str) -> dict:
    env = dict(os.environ)
    if lc_ctype == "-":
        env.pop("LC_CTYPE", None)
    else:
        env["LC_CTYPE"] = lc_ctype[1:]
    return env


def main(argv: list) -> int:
    grace, env, program = float(argv[1]), program_env(argv[2]), argv[3:]
    become_subreaper()
    signal.pthread_sigmask(signal.SIG_BLOCK, _WAIT_SIGNALS)
    try:
        child = os.posix_spawnp(program[0], program, env, setsigmask=())
    except OSError as exc:
        os.write(2, f"cannot run {program[0]}: {exc.strerror}\n".encode())
        return 127
    statuses: dict = {}
    while child not in statuses:
        info = signal.sigwaitinfo(_WAIT_SIGNALS)
        if info.si_signo == signal.SIGCHLD:
            reap(statuses)
            continue
        stop_tree(grace, statuses)
        reap(statuses)
        break
    return exit_code(statuses.get(child))


def run() -> None:
    os._exit(main(sys.argv))


if __name__ == "__main__":
    run()
