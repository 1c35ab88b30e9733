"""The interactive ``phi`` sandboxes the model's commands (issue 34): ``workspace-write`` by
default, the banner says what protects them, ``--sandbox full`` and ``--network`` choose, and where
the machine cannot sandbox every command is asked — even with ``--approve off``."""

from __future__ import annotations

from pathlib import Path

import pytest
from coding.wire import Call, Turn

from phi.tools import sandbox_status

STATUS = sandbox_status()
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=f"no sandbox here: {STATUS.describe()}")


def _script(model, outside: Path) -> None:
    model.script("Write things",
                 Turn("", [Call("shell", {"command": f"echo in > in.txt; echo out > {outside}/x.txt; echo done $?"})]),
                 Turn("finished"))


@needs_sandbox
def test_by_default_commands_write_the_project_only_and_the_banner_says_so(launch, model, project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    _script(model, outside)
    phi = launch("--approve", "off")
    phi.expect(r"sandbox: workspace-write, network off, \.git read-only \(Landlock ABI \d")
    phi.prompt()
    phi.send_line("Write things")
    phi.expect("finished")
    phi.prompt()
    assert (project / "in.txt").read_text() == "in\n"
    assert not (outside / "x.txt").exists()


def test_sandbox_full_lets_commands_write_anywhere(launch, model, project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    _script(model, outside)
    phi = launch("--approve", "off", "--sandbox", "full")
    phi.expect(r"sandbox: full \(no sandbox\)")
    phi.prompt()
    phi.send_line("Write things")
    phi.expect("finished")
    phi.prompt()
    assert (outside / "x.txt").read_text() == "out\n"
