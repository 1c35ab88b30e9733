"""The interactive ``phi``, in a pty, on a store holding a link that leads nowhere — the sub-agent's
session of a stored run is missing, as a crash between two saves leaves it (SPEC SESS-5; issue 31
item 4): ``/sessions`` lists the session and says what is missing under its row, ``--resume ID``
and ``/resume ID`` resume it with a warning, and the conversation goes on."""

from __future__ import annotations

import re
from pathlib import Path

from dangling_helpers import break_link, expected_sentence, record_linked

from cli.terminal_helpers import PtyPhi


def test_sessions_and_resume_say_what_is_missing_and_go_on(tmp_path: Path):
    home = tmp_path / "home"
    linked = record_linked("json", home)
    break_link("json", home, linked, "child")
    sentence = re.escape(expected_sentence(linked, "child"))  # patterns are regular expressions
    work = tmp_path / "work"
    work.mkdir()

    first = PtyPhi(["--offline", "--resume", linked.parent_id], work, {"PHI_HOME": str(home)})
    try:
        first.prompt()  # the session is restored behind the prompt: what it found is said at the first input
        first.send_line("/sessions")
        first.expect(linked.parent_id + r"  [^\n]*\n\s+! " + sentence)
        first.expect(f"! {sentence}", since_mark=False)
        first.expect(f"resumed session {linked.parent_id}: 4 messages", since_mark=False)
        first.prompt()
        first.send_line("/resume " + linked.parent_id)
        first.expect(f"! {sentence}")
        first.expect(f"resumed session {linked.parent_id}: 4 messages")
        first.prompt()
        first.send_line("still there?")
        first.expect("still there")
        first.prompt()
    finally:
        assert first.close() == 0
    assert "Traceback" not in first.text
