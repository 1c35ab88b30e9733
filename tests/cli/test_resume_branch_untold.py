"""A branch the user asked for is no news (issue 31 item 1; SPEC CLI-4): after ``/resume ID LOOP`` of
an earlier loop of the session, the reply does not say "another phi continued this session", while
a session another phi continued meanwhile still does (tests/cli/test_tmux_two_writers.py)."""

from __future__ import annotations

from pathlib import Path

from cli.terminal_helpers import PtyPhi


def test_resuming_an_earlier_loop_and_going_on_is_not_announced_as_another_phi(tmp_path: Path):
    from phi.session import JsonDirStore

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    phi = PtyPhi(["--offline"], work, {"PHI_HOME": str(home)})
    try:
        phi.prompt()
        phi.send_line("the first question")
        phi.prompt()
        phi.send_line("the second question")
        phi.prompt()
        (session_id,) = JsonDirStore(home / "sessions").list_ids()
        first = JsonDirStore(home / "sessions").load(session_id).loops[0].loop_id
        phi.send_line(f"/resume {session_id} {first}")
        phi.expect(f"resumed session {session_id}")
        phi.prompt()
        phi.send_line("a question on a branch of my own")
        phi.prompt()
    finally:
        assert phi.close() == 0
    assert "another phi continued" not in phi.text
    stored = JsonDirStore(home / "sessions").load(session_id)
    branch = stored.loops[-1]
    assert branch.history is not None and branch.history.after_loop_id == first  # it is a branch, beside the second
