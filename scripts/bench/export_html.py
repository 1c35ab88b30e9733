#!/usr/bin/env python3
"""How long ``phi export`` takes for a large session, and how big the page is (issue 15).

The session is built directly (no model run): one run of N turns, each an assistant reply with a
thinking block, a text block and one ``edit_file`` call whose result carries ``--output-kb`` KiB of
output; every fifth call is a ``write_file``. It is saved to a JsonDirStore in a temp directory and
exported with ``phi.export.command.main`` (load, render, write), best of ``--repeat``. Prints the
figures, then one JSON line.

    .venv/bin/python scripts/bench/export_html.py --turns 2000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from phi.export.command import main  # noqa: E402
from phi.session import FirstLoop, JsonDirStore, LoopRecord, LoopStatus, Session  # noqa: E402
from phi.types import (AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage,  # noqa: E402
                       Usage, UserMessage)


def build(turns: int, output_kb: int) -> Session:
    output = ("x" * 79 + "\n") * (output_kb * 1024 // 80)
    messages: list = [UserMessage.from_text("start")]
    for i in range(turns):
        if i % 5 == 4:
            call = ToolCall(f"c{i}", "write_file", {"path": f"f{i}.py", "content": "line\n" * 40})
        else:
            call = ToolCall(f"c{i}", "edit_file", {"path": "a.py", "old_text": f"v = {i}\n" * 3, "new_text": f"v = {i + 1}\n" * 3})
        messages.append(AssistantMessage([ThinkingContent(f"step {i}"), TextContent(f"turn {i}"), call],
                                         usage=Usage(1000 + i, 50, total_tokens=1050 + i)))
        messages.append(ToolResultMessage(call.id, call.name, [TextContent(output)], details={"first_line": 10}))
    loop = LoopRecord("bench.main.1", "bench", "agent", started_at=1.0, ended_at=2.0, status=LoopStatus.COMPLETED,
                      messages=messages)
    return Session("bench", "agent", 1.0, 2.0, FirstLoop(1.0), loops=[loop])


def run(turns: int, output_kb: int, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store = JsonDirStore(Path(tmp) / "s")
        store.save(build(turns, output_kb))
        out = Path(tmp) / "page.html"
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            assert main(["bench", "--html", str(out), "--store", store.directory]) == 0
            best = min(best, time.perf_counter() - start)
        return {"turns": turns, "output_kb_per_call": output_kb, "export_s": round(best, 3),
                "ms_per_turn": round(best * 1000 / turns, 3), "page_mb": round(out.stat().st_size / 1e6, 2),
                "session_mb": round(Path(store.path_of("bench")).stat().st_size / 1e6, 2)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--output-kb", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    figures = run(options.turns, options.output_kb, options.repeat)
    for key, value in figures.items():
        print(f"{key:>20}: {value}")
    print(json.dumps(figures))
