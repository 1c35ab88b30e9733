"""``phi --otel`` (SPEC §15, §17 OTEL-6): the command's runs arrive at an OTLP/HTTP receiver on
127.0.0.1 named by ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, and the API key in the environment does not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .receiver import Receiver, attributes

ROOT = Path(__file__).resolve().parents[2]
KEY = "phicanary_cli_4Jd8Qw2Zx7Lm"


@pytest.mark.timeout(120)
def test_phi_otel_sends_the_run_over_otlp(tmp_path: Path) -> None:
    with Receiver() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint, "ANTHROPIC_API_KEY": KEY,
               "OTEL_SERVICE_NAME": "phi-test", "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
        done = subprocess.run([sys.executable, "-m", "phi.cli", "--offline", "-p", "hello", "--otel",
                               "--sessions-dir", str(tmp_path / "sessions"), "-C", str(tmp_path)],
                              env=env, capture_output=True, text=True, timeout=100)
        assert done.returncode == 0, done.stderr
    names = [span.name for span in receiver.spans()]
    assert "invoke_agent phi" in names and any(name.startswith("chat ") for name in names)
    root = next(span for span in receiver.spans() if span.name == "invoke_agent phi")
    assert attributes(root)["phi.run.outcome"] == "completed"
    resource = receiver.requests()[0].resource_spans[0].resource
    assert {a.key: a.value.string_value for a in resource.attributes}["service.name"] == "phi-test"
    assert KEY.encode() not in b"".join(receiver.bodies)
