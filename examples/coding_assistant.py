"""A coding assistant with all of phi's built-in coding tools (phi.coding): it reads, writes and
edits files, searches, and runs commands in a working directory, asking before it changes anything.

    python examples/coding_assistant.py "add a --verbose flag to cli.py"     # a real model, in .
    python examples/coding_assistant.py --cwd ~/src/app "run the tests"      # elsewhere
    python examples/coding_assistant.py --offline                            # no key, no network

Online it picks the profile from the first API key it finds (ANTHROPIC_API_KEY, OPENAI_API_KEY,
GEMINI_API_KEY) and asks on the terminal before each write or command (reads pass: SmartApproval).
Offline (``--offline``, or ``PHI_OFFLINE=1``) a scripted model does a small job in a fresh temporary
directory with every kind of tool — write a module, edit it, run it, search, read it back, list
files — so the whole path (tool calls, approval, output, the final answer) runs anywhere. The full
interactive assistant is the ``phi`` command itself; this is the same machinery in ~100 lines.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

from phi.coding import (ApprovalRequest, EventKind, Session, SessionConfig, SessionEvent, SmartApproval, allow_all,
                        create_profile)
from phi.providers.mock import ScriptedProvider
from phi.tools import LocalExecutionEnvironment

KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}
OFFLINE_TASK = "Create hello.py with a greet function, make it friendlier, and show that it works."


def call(name: str, call_id: str, **arguments: object) -> dict[str, Any]:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}]}


def offline_script() -> ScriptedProvider:
    """What a model would do for OFFLINE_TASK, one reply per model call."""
    return ScriptedProvider([
        call("write_file", "c1", file_path="hello.py", content='def greet(name):\n    return "Hello " + name\n'),
        call("edit_file", "c2", file_path="hello.py", old_string='"Hello " + name', new_string='f"Hello, {name}!"'),
        call("shell", "c3", command=f"{sys.executable} -c \"import hello; print(hello.greet('phi'))\""),
        call("grep", "c4", pattern="def ", output_mode="content"),
        call("read_file", "c5", file_path="hello.py"),
        call("glob", "c6", pattern="*.py"),
        "hello.py now greets with `Hello, phi!` — written, edited, run and checked.",
    ])


def ask(request: ApprovalRequest) -> bool:
    answer = input(f"allow {request.tool_name} {request.command or request.arguments}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def make_session(workdir: str, offline: bool) -> Session:
    if offline:
        profile = create_profile("anthropic", provider=offline_script())
        return Session(profile, LocalExecutionEnvironment(workdir), SessionConfig(approval=allow_all))
    found = next((p for p, key in KEYS.items() if os.environ.get(key)), None)
    if found is None:
        sys.exit(f"set one of {', '.join(KEYS.values())}, or run with --offline")
    config = SessionConfig(approval=SmartApproval(ask=ask))
    return Session(create_profile(found), LocalExecutionEnvironment(workdir), config)


def show(event: SessionEvent) -> None:
    data = event.data
    if event.kind == EventKind.ASSISTANT_TEXT_DELTA:
        print(data["delta"], end="", flush=True)
    elif event.kind == EventKind.TOOL_CALL_START:
        print(f"→ {data['tool_name']} {data['arguments']}")
    elif event.kind == EventKind.TOOL_CALL_END:
        first = (data.get("error") or data["output"]).strip().splitlines()[:1]
        print(f"  {'✗' if data['is_error'] else '✓'} {first[0] if first else ''}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("task", nargs="?")
    parser.add_argument("--cwd", default=".")
    parser.add_argument("--offline", action="store_true")
    args = parser.parse_args(argv)
    offline = args.offline or os.environ.get("PHI_OFFLINE") == "1"
    with tempfile.TemporaryDirectory(prefix="phi-assistant-") as scratch:
        workdir = scratch if offline else args.cwd
        task = args.task or (OFFLINE_TASK if offline else input("task: "))
        with make_session(workdir, offline) as session:
            stream = session.submit_stream(task)
            for event in stream:
                show(event)
            result = stream.result()
        print(f"\n[{result.outcome}, {result.rounds} tool rounds, {result.usage.input} tokens in]")
    return 0 if result.outcome in ("completed", "awaiting_input") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
