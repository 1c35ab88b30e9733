"""Process-tree keeper for one command (SPEC §9.1 "Command execution"; Linux only).

Run as ``python -I -S _reaper.py GRACE_SECONDS MODE LC_CTYPE SANDBOX PROGRAM [ARGS...]`` (phi imports it
with ``-c`` instead, so its compiled code is cached, and calls :func:`run`); standard library only,
never imports phi. ``MODE`` is ``end`` (a command: what it leaves behind is ended when it returns),
``leave`` (what it leaves behind keeps running, re-parented to init once the reaper exits) or
``keep`` (a background command: the reaper stays until its last process exits or it is told to
stop). ``LC_CTYPE`` is ``-`` when the program's environment has no ``LC_CTYPE``, else ``=``
followed by its value: Python's start-up locale coercion (PEP 538) may have set or changed it in
this process's environment, and the program must get the environment it was given. ``SANDBOX`` is
``-``, or the JSON policy :mod:`_sandbox` applies to this process before the program starts (so the
program and all it starts inherit it); when that fails the program is not run (exit status 126).

It marks itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``), so every process the
command starts stays inside its tree even after ``setsid``, ``nohup ... &``, a double fork or
``start_new_session=True``: when such a process's parent exits it is re-parented here rather than
to init. It keeps the tree from two processes, both subreapers: this one (the outer keeper) forks
:func:`relay`, which applies the sandbox, spawns the program and exits with its status when it
exits. A detached process is re-parented to the relay first, so a daemon that kills its parent
(``kill -9 $PPID`` once its shell is gone) kills the relay and lands here, still inside the tree;
the relay's death counts as the program's end. (A process that walks up and kills both keepers
does escape: this is a guardrail, not a sandbox; under a sandbox with Landlock signal scoping the
outer keeper, which is not confined, is out of its reach.) Then it waits:

* the program (the relay) exits → in ``end`` mode, every descendant still running (a ``cmd &``, a ``nohup``, a
  ``setsid`` or double-forked daemon: all are re-parented here) gets SIGTERM, up to GRACE_SECONDS to
  exit, then SIGKILL — the same sequence as a stop — and the reaper exits with the program's status;
  when nothing is left it exits at once. In ``leave`` mode it exits at once; in ``keep`` mode it
  waits until no descendant is left;
* SIGTERM/SIGINT/SIGHUP (timeout or cancellation in the parent) → SIGTERM to every descendant
  (found by walking ``/proc``), up to GRACE_SECONDS for them to exit, then SIGKILL to every
  descendant until none is left, then exit. The wait ends the moment the last one is gone (see
  :func:`stop_tree`).

Keeping this in a separate process leaves the host program's own children and signal handling alone.
"""

import ctypes
import os
import sys
import time

# Type checkers read this name as True (and see ``signal``'s stubs); at run time it is False, so
# ``typing`` is not imported either.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
else:
    # The C core of the signal module: ``import signal`` also builds its enums, which is a third of
    # this process's start-up time.
    import _signal as signal

_PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_WAIT_SIGNALS = {signal.SIGCHLD, *_STOP_SIGNALS}
_KILL_ROUNDS = 200


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def parent_map() -> dict[int, int]:
    """pid -> parent pid for every process visible in /proc."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:  # os-level I/O: file objects would double the cost of this walk
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
            try:
                stat = os.read(fd, 512)  # pid, (comm) and state fit with room to spare; ppid follows
            finally:
                os.close(fd)
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split(None, 2)
        if len(fields) > 1:
            parents[int(name)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, parent in parent_map().items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def reap(statuses: dict[int, int]) -> bool:
    """Collect every exited child without blocking, remembering the statuses; whether any child
    is left."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        statuses[pid] = status


def stop_tree(grace: float, statuses: dict[int, int]) -> None:
    """SIGTERM to every descendant, up to ``grace`` seconds for the tree to empty, then SIGKILL.

    As a subreaper this process is the parent of the topmost living process of every branch (an
    orphan is re-parented here), so the tree is empty exactly when no child is left, and every
    change towards that sends SIGCHLD: the wait needs neither polling nor walks of /proc.
    """
    me = os.getpid()
    signal_all(descendants(me), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while reap(statuses):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        signal.sigtimedwait({signal.SIGCHLD}, left)
    for _ in range(_KILL_ROUNDS):  # children forked meanwhile are re-parented here and found next round
        if not reap(statuses):
            return
        signal_all(descendants(me), signal.SIGKILL)
        signal.sigtimedwait({signal.SIGCHLD}, 0.02)


def exit_code(status: int | None) -> int:
    if status is None:
        return 128 + signal.SIGTERM
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


_KEPT_PREFIX = "PHI_LAUNCHER_KEPT_"  # phi.tools.process.KEPT_PREFIX: the loader's variables, kept aside


def program_env(lc_ctype: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in [name for name in env if name.startswith(_KEPT_PREFIX)]:
        env[name[len(_KEPT_PREFIX):]] = env.pop(name)
    if lc_ctype == "-":
        env.pop("LC_CTYPE", None)
    else:
        env["LC_CTYPE"] = lc_ctype[1:]
    return env


def main(argv: list[str]) -> int:
    grace, mode, env, sandbox, program = float(argv[1]), argv[2], program_env(argv[3]), argv[4], argv[5:]
    become_subreaper()
    # blocked before the fork, so no SIGCHLD of the relay is lost before the wait below
    signal.pthread_sigmask(signal.SIG_BLOCK, _WAIT_SIGNALS)
    child = os.fork()
    if child == 0:
        os._exit(relay(env, sandbox, program))
    statuses: dict[int, int] = {}
    while True:
        info = signal.sigwaitinfo(_WAIT_SIGNALS)
        if info.si_signo != signal.SIGCHLD:
            stop_tree(grace, statuses)
            reap(statuses)
            break
        left = reap(statuses)
        if child not in statuses or (mode == "keep" and left):
            continue
        if left and mode == "end":  # the command returned and left processes behind: they end with it
            stop_tree(grace, statuses)
            reap(statuses)
        break
    return exit_code(statuses.get(child))


def relay(env: dict[str, str], sandbox: str, program: list[str]) -> int:
    """The inner keeper: confined by ``sandbox`` (when given), a subreaper of its own, it starts the
    program, reaps what is re-parented to it and exits with the program's status (a signal as
    128 + its number, as a shell reports it) the moment the program exits.

    It is what a detached process finds as its parent (``$PPID``) once the program's shell is gone;
    killing it only moves that process one level up, to the outer keeper, which ends it with the
    rest of the tree (SPEC §9.1). Its signals are the default ones, so a stop reaches it as it
    reaches the program."""
    for number in _STOP_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    become_subreaper()  # not inherited through fork
    if sandbox != "-":
        try:
            # a sibling module, imported by name: this file runs as a top-level module, not in phi
            __import__("_sandbox").apply(sandbox)
        except Exception as exc:  # never run the program with less confinement than it was promised
            os.write(2, f"phi sandbox: cannot confine the command, not running it: {exc}\n".encode())
            return 126
    try:
        program_pid = os.posix_spawnp(program[0], program, env, setsigmask=())
    except OSError as exc:
        os.write(2, f"cannot run {program[0]}: {exc.strerror}\n".encode())
        return 127
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == program_pid:
            return exit_code(status)


def run() -> None:
    os._exit(main(sys.argv))


if __name__ == "__main__":
    run()
