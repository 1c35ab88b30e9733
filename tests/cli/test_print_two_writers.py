"""``phi -p --resume ID`` beside another phi continuing the same session (issue 31 item 1; SPEC CLI-4,
SESS-7): the run that became a branch says so on stderr; ``phi -c`` afterwards finds the session."""

from __future__ import annotations

import os
import subprocess
import sys

from cli.terminal_helpers import REPO


def phi(args: list[str], cwd, home) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PHI_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "phi.cli", "--offline", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_print_run_that_became_a_branch_says_so_and_c_finds_the_session(project, phi_home):
    from phi.session import JsonDirStore, LoopRecord, LoopStatus
    from phi.session.model import replace_loops
    from phi.session.store import claimant

    seed = phi(["-p", "the seed question"], project, phi_home)
    assert seed.returncode == 0, seed.stderr
    store = JsonDirStore(phi_home / "sessions")
    (session_id,) = store.list_ids()
    session = store.load(session_id)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # another phi, mid-turn
    try:
        record = LoopRecord(f"{session.loops[0].loop_id[:-2]}.2", session_id, session.agent_id,
                            session.loops[0].loop_id, status=LoopStatus.PENDING,
                            started_at=session.loops[0].ended_at + 1)
        record.extra["claimed_by"] = {**claimant(), "pid": other.pid, "start": 0}
        store.claim(replace_loops(session, [record]))
        done = phi(["--resume", session_id, "-p", "from phi -p"], project, phi_home)
    finally:
        other.kill()
        other.wait()
    assert done.returncode == 0, done.stderr
    assert "another phi continued this session from the same point; this run continues as branch" in done.stderr
    stored = JsonDirStore(phi_home / "sessions").load(session_id)
    conversation = [m.text for m in stored.conversation()]
    assert conversation[0] == "the seed question" and conversation.count("from phi -p") == 1
    again = phi(["-c", "-p", "and on"], project, phi_home)  # -c finds the session the -p runs saved
    assert again.returncode == 0, again.stderr
    assert "and on" in [m.text for r in JsonDirStore(phi_home / "sessions").load(session_id).loops for m in r.messages]
