"""``phi --json`` without ``-p``: a long-lived session another program drives with JSON commands on
stdin, every event (and every refused command) a JSON line on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

from coding.wire import Call, Turn, user_texts

from cli.terminal_helpers import REPO
from cli.test_print_mode import NO_KEYS, VALIDATOR

from phi.session import JsonDirStore


class Driven:
    def __init__(self, args: list[str], cwd, home) -> None:
        env = {k: v for k, v in os.environ.items() if k not in NO_KEYS}
        env.update(PYTHONPATH=str(REPO), PHI_HOME=str(home), ANTHROPIC_API_KEY="sk-test")
        self.proc = subprocess.Popen([sys.executable, "-m", "phi.cli", "--json", *args], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lines: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def send(self, command) -> None:
        self.proc.stdin.write((command if isinstance(command, str) else json.dumps(command)) + "\n")
        self.proc.stdin.flush()

    def wait_for(self, predicate, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [line for line in list(self.lines) if predicate(line)]
            if found:
                return found[-1]
            time.sleep(0.02)
        raise AssertionError(f"not seen; lines: {[line['type'] for line in self.lines]}")

    def end(self) -> int:
        self.proc.stdin.close()
        return self.proc.wait(30)


def ends(lines: list[dict]) -> list[dict]:
    return [line for line in lines if line["type"] == "AgentEnd"]


def test_prompts_steering_abort_and_errors_over_one_session(model, project, phi_home):
    model.script("First task", Turn("", [Call("shell", {"command": "sleep 1; echo done"})]), Turn("first done"),
                 Turn("second done"), Turn("Once " + "upon " * 2000))
    model.slow("First task", chunk_size=400, delay=0.1)
    phi = Driven(["--provider", "anthropic", "--base-url", model.url], project, phi_home)
    phi.send({"type": "prompt", "text": "First task"})
    phi.wait_for(lambda e: e["type"] == "ToolExecutionStart")
    phi.send({"type": "steer", "text": "and be quick"})
    phi.wait_for(lambda e: e["type"] == "AgentEnd")
    phi.send("Second task, as plain text")
    phi.wait_for(lambda e: len(ends(phi.lines)) == 2)
    phi.send({"type": "prompt", "text": "Third, long"})
    phi.wait_for(lambda e: e["type"] == "MessageUpdate" and "upon" in e["delta"]["delta"])
    phi.send({"type": "abort"})
    phi.wait_for(lambda e: len(ends(phi.lines)) == 3)
    phi.send({"type": "dance"})
    phi.send({"type": "steer"})
    assert phi.end() == 1  # the last run was aborted
    assert [e["outcome"] for e in ends(phi.lines)] == ["completed", "completed", "aborted"]
    errors = [e["message"] for e in phi.lines if e["type"] == "CommandError"]
    assert errors == ["unknown command type 'dance': use prompt, steer, follow_up or abort",
                      "a steer command needs a non-empty text"]
    for event in phi.lines:
        if event["type"] != "CommandError":
            VALIDATOR.validate(event)
    requests = model.requests_of("First task")
    assert "and be quick" in user_texts("anthropic", requests[1])
    assert user_texts("anthropic", requests[2])[-1] == "Second task, as plain text"
    assert len({e["session_id"] for e in phi.lines if e["type"] == "AgentStart"}) == 1


def test_end_of_input_waits_for_the_run_and_exits_0(model, project, phi_home):
    model.script("Only task", Turn("the answer"))
    phi = Driven(["--provider", "anthropic", "--base-url", model.url], project, phi_home)
    phi.send({"type": "prompt", "text": "Only task"})
    assert phi.end() == 0
    (end,) = ends(phi.lines)
    assert end["outcome"] == "completed" and end["messages"][-1]["content"][0]["text"] == "the answer"


def test_abort_stops_the_sub_agents_of_the_run_too(model, project, phi_home):
    model.script("Child task", Turn("", [Call("shell", {"command": "sleep 2; touch child-done.txt"})]), Turn("child ok"))
    model.script("Delegate", Turn("", [Call("spawn_agent", {"task": "Child task: wait and touch a file"})]),
                 Turn("Waiting " + "for the child " * 300))
    model.slow("Delegate", chunk_size=300, delay=0.1)
    phi = Driven(["--provider", "anthropic", "--base-url", model.url], project, phi_home)
    phi.send({"type": "prompt", "text": "Delegate"})
    phi.wait_for(lambda e: e["type"] == "MessageUpdate" and "Waiting" in e["delta"]["delta"])
    deadline = time.monotonic() + 20
    while not model.requests_of("Child task") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # the child's command is running
    phi.send({"type": "abort"})
    phi.wait_for(lambda e: e["type"] == "AgentEnd")
    time.sleep(2.5)
    assert not (project / "child-done.txt").exists(), "the sub-agent went on after the abort"
    assert phi.end() == 1


def test_sigterm_stops_the_run_lets_its_end_out_and_saves_the_session(model, project, phi_home):
    import signal

    model.script("Long one", Turn("Once " + "upon " * 3000)).slow("Long one", chunk_size=300, delay=0.1)
    phi = Driven(["--provider", "anthropic", "--base-url", model.url], project, phi_home)
    phi.send({"type": "prompt", "text": "Long one"})
    phi.wait_for(lambda e: e["type"] == "MessageUpdate")
    phi.proc.send_signal(signal.SIGTERM)
    assert phi.proc.wait(30) == 143
    time.sleep(0.1)  # the reader thread takes the last lines
    (end,) = ends(phi.lines)
    assert end["outcome"] == "aborted"
    (saved,) = (phi_home / "sessions").glob("[!.]*.jsonl")
    assert JsonDirStore(saved.parent).load(saved.stem).loops[0].status.value == "Aborted"
