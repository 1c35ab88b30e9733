"""Driving phi from another program through ``phi -p TASK --json``: start it, read one JSON event per
line as it arrives (the conformance JSON shapes: AgentStart ... AgentEnd), react, and continue the
same conversation in a second run with ``--resume SESSION_ID``.

    python examples/json_driver.py "list the Python files here"     # a real model (its API key set)
    python examples/json_driver.py --offline                        # phi's scripted model: no key

Offline (``--offline``, or ``PHI_OFFLINE=1``) both runs use ``phi --offline``, whose scripted model
looks at the working directory with a tool and answers; sessions go to a temporary directory. What
this prints is built only from the events, as a CI job or an editor plugin would do it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Iterator


def phi_events(task: str, extra: list[str]) -> Iterator[dict[str, Any]]:
    """Run ``phi -p TASK --json`` and yield its events as they come; raise if it failed."""
    command = [sys.executable, "-m", "phi.cli", "-p", task, "--json", *extra]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as phi:
        assert phi.stdout is not None
        for line in phi.stdout:
            yield json.loads(line)
    if phi.returncode not in (0, 1):  # 1: the run itself failed, which AgentEnd already said
        raise SystemExit(f"phi exited with {phi.returncode}")


def watch(task: str, extra: list[str]) -> tuple[str, str]:
    """Print a compact live view of one run; returns (session id, outcome)."""
    session_id, outcome = "", ""
    text: list[str] = []
    for event in phi_events(task, extra):
        kind = event["type"]
        if kind == "AgentStart":
            session_id = event["session_id"]
            print(f"run {event['loop_id']}")
        elif kind == "ToolExecutionStart":
            print(f"  tool {event['tool_name']}({json.dumps(event['args'])})")
        elif kind == "ToolExecutionEnd":
            first = (event["result"]["content"] or [{"text": ""}])[0].get("text", "").splitlines()[:1]
            print(f"    {'error' if event['is_error'] else 'ok'}: {first[0] if first else ''}")
        elif kind == "MessageUpdate" and event["delta"]["type"] == "text":
            text.append(event["delta"]["delta"])
        elif kind == "TurnEnd":
            usage = event["usage"]
            print(f"  turn: {usage['input']} tokens in, {usage['output']} out")
        elif kind == "AgentEnd":
            outcome = event["outcome"]
    print(f"answer: {''.join(text).strip()}")
    print(f"outcome: {outcome}")
    return session_id, outcome


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("task", nargs="?", default="What is in this directory?")
    parser.add_argument("--offline", action="store_true")
    args = parser.parse_args(argv)
    offline = args.offline or os.environ.get("PHI_OFFLINE") == "1"
    with tempfile.TemporaryDirectory(prefix="phi-driver-") as sessions:
        extra = ["--sessions-dir", sessions] + (["--offline"] if offline else [])
        session_id, outcome = watch(args.task, extra)
        if outcome != "completed":
            return 1
        print(f"continuing session {session_id}")
        _, outcome = watch("Thanks. Anything else worth knowing?", [*extra, "--resume", session_id])
    return 0 if outcome == "completed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
