#!/usr/bin/env python3
"""Issue 34 item 3: what sandboxing costs a command.

Runs ``true`` ``--runs`` times (default 100) through :class:`LocalExecutionEnvironment` in each mode
— ``full`` (no sandbox: the launcher only), ``read-only`` and ``workspace-write`` with the network
off (namespaces, read-only mounts, seccomp, Landlock), ``workspace-write`` with the network on —
interleaved so machine load hits every mode alike, and prints the median and 90th percentile per
command and each mode's ratio to ``full``. Ends with one JSON line of those figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from phi.tools.environment import LocalExecutionEnvironment  # noqa: E402
from phi.tools.sandbox import SandboxPolicy, sandbox_status  # noqa: E402

MODES = {
    "full": SandboxPolicy("full"),
    "read_only": SandboxPolicy("read-only"),
    "workspace_write": SandboxPolicy("workspace-write"),
    "workspace_write_network": SandboxPolicy("workspace-write", network=True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    options = parser.parse_args()
    status = sandbox_status()
    print(f"sandbox here: {status.describe()}")
    root = tempfile.mkdtemp(prefix="phi-bench-sandbox-")
    figures: dict[str, object] = {"runs": options.runs, "landlock_abi": status.landlock_abi,
                                  "namespaces": status.namespaces}
    try:
        modes = MODES if status.available else {"full": MODES["full"]}
        envs = {name: LocalExecutionEnvironment(root, sandbox=policy) for name, policy in modes.items()}
        times: dict[str, list[float]] = {name: [] for name in envs}
        for env in envs.values():  # warm: the probe, the private temp, the launcher's bytecode
            env.exec_command("true", 30_000)
        for _ in range(options.runs):
            for name, env in envs.items():
                started = time.perf_counter()
                result = env.exec_command("true", 30_000)
                times[name].append(time.perf_counter() - started)
                if result.exit_code != 0:
                    raise SystemExit(f"{name}: `true` failed: {result.output}")
        base = statistics.median(times["full"])
        for name, samples in times.items():
            median = statistics.median(samples)
            p90 = sorted(samples)[int(len(samples) * 0.9) - 1]
            figures[f"{name}_median_ms"] = round(median * 1000, 2)
            figures[f"{name}_p90_ms"] = round(p90 * 1000, 2)
            figures[f"{name}_ratio"] = round(median / base, 3)
            print(f"{name:24} median {median * 1000:7.2f} ms   p90 {p90 * 1000:7.2f} ms   x{median / base:.2f} of full")
        for env in envs.values():
            env.cleanup()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
