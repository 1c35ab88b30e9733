"""Make the shared test helpers (``tests/history_checks.py``, ``tests/loop/loop_helpers.py``) importable; fixtures every test may use."""

import os
from typing import Iterator
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.join(HERE, "loop")):
    if path not in sys.path:
        sys.path.insert(0, path)

import pytest  # noqa: E402


@pytest.fixture
def prompt_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``[n]``: how many system prompts were built during the test (each takes a git snapshot)."""
    import phi.coding.prompt as prompt_module

    count = [0]
    real = prompt_module.build_system_prompt

    def counting(*args: object, **kwargs: object) -> str:
        count[0] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(prompt_module, "build_system_prompt", counting)
    return count


@pytest.fixture(params=["caller-thread", "worker-thread"])
def blocking_run_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test twice: blocking runs without a timeout on the caller's thread (phi's way), and
    on a worker thread as ``prompt()`` runs them — the run contract holds on both paths (issue 36)."""
    import phi.agent.agent as agent_module

    path: str = request.param
    monkeypatch.setattr(agent_module, "RUN_ON_CALLER", path == "caller-thread")
    return path


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic garbage collector off for the test: what a reference cycle holds stays alive (issue 36:
    a finished run must be freed by reference counting alone)."""
    import gc

    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
