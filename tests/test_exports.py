"""What a user meets at phi's names (issue 33): lazy packages load each name from the import type checkers
read, also with no source at all; ``dir()`` shows the public names; a name removed when the tree was
reshaped says what replaced it; a missing optional extra names the extra to install."""

from __future__ import annotations

import compileall
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import phi
from phi.removed import MODULES, PACKAGE_NAMES

ROOT = Path(__file__).resolve().parents[1]
LAZY = ["phi", "phi.agent", "phi.coding", "phi.concurrency", "phi.evaluation", "phi.export", "phi.loop", "phi.tools"]


def run_python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_dir_shows_the_public_names_only() -> None:
    import importlib

    assert dir(phi) == sorted({*phi.__all__, "__version__"})
    loop = importlib.import_module("phi.loop")
    assert dir(loop) == sorted(loop.__all__)


def test_a_misspelt_name_is_the_usual_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"^module 'phi' has no attribute 'Agnet'$"):
        phi.Agnet  # type: ignore[attr-defined]  # the point of the test
    assert not hasattr(phi, "Agnet")


@pytest.mark.parametrize("name", sorted(PACKAGE_NAMES))
def test_a_removed_name_of_phi_says_what_replaced_it(name: str) -> None:
    with pytest.raises(AttributeError, match=rf"^phi\.{name} was removed: use phi\.") as caught:
        getattr(phi, name)
    replacement = caught.value.args[0].split("use ", 1)[1].split(" ")[0]
    if name not in MODULES:  # a name: the replacement is importable and is that name
        module, _, attribute = replacement.rpartition(".")
        __import__(module)
        assert getattr(sys.modules[module], attribute) is not None


@pytest.mark.parametrize("old", sorted(MODULES))
def test_importing_a_removed_module_says_where_it_went(old: str) -> None:
    with pytest.raises(ModuleNotFoundError, match=rf"^phi\.{old} was removed: use phi\.") as caught:
        __import__(f"phi.{old}")
    new = caught.value.args[0].split("use ", 1)[1].split(" ")[0]
    __import__(new)  # the module it names exists


def test_from_import_of_a_removed_module_says_where_it_went_too() -> None:
    result = run_python("""
        try:
            from phi import tool_exec
        except ImportError as exc:
            print(type(exc).__name__, exc)
    """)
    assert result.stdout.strip() == "ModuleNotFoundError phi.tool_exec was removed: use phi.loop.tool_execution"


def test_a_module_that_never_existed_is_the_usual_error() -> None:
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'phi\.nothing_here'$"):
        __import__("phi.nothing_here")


@pytest.mark.parametrize("name, says", [
    ("with_tools", "Agent.with_tools was removed: use Agent(tools=[...])"),
    ("with_max_tokens", "Agent.with_max_tokens was removed: use Agent(max_tokens=...), agent.clone(max_tokens=...) "
                        "or agent.config.max_tokens = ..."),
    ("clear_steering", "Agent.clear_steering was removed: use agent.steering_queue.clear()"),
    ("prompt_with_sender", "Agent.prompt_with_sender was removed: use agent.prompt(text, sender=...)"),
    ("session_recorder", "Agent.session_recorder was removed: use agent.recorder"),
])
def test_a_removed_agent_method_says_what_replaced_it(name: str, says: str) -> None:
    agent = phi.Agent(provider=phi.ScriptedProvider([]))
    with pytest.raises(AttributeError) as caught:
        getattr(agent, name)
    assert str(caught.value).startswith(says)
    assert not hasattr(agent, name)
    with pytest.raises(AttributeError, match=r"^'Agent' object has no attribute 'toolz'$"):
        agent.toolz  # type: ignore[attr-defined]  # the point of the test


def test_a_removed_sub_agent_builder_says_clone() -> None:
    child = phi.SubAgentTool(name="helper", provider=phi.ScriptedProvider([]))
    with pytest.raises(AttributeError, match=r"^SubAgentTool\.with_model was removed: use tool\.clone\(model=\.\.\.\)"):
        child.with_model  # type: ignore[attr-defined]  # the point of the test


def test_names_load_from_bytecode_when_there_is_no_source(tmp_path: Path) -> None:
    """A frozen or bytecode-only install (PyInstaller, a stripped image) has no source to read the imports
    for type checkers from: the compiled code gives the same table."""
    copy = tmp_path / "site" / "phi"
    shutil.copytree(ROOT / "phi", copy, ignore=shutil.ignore_patterns("__pycache__", "conformance"))
    assert compileall.compile_dir(str(copy), legacy=True, quiet=1)
    for source in copy.rglob("*.py"):
        source.unlink()
    result = run_python(f"""
        import importlib, sys
        sys.path.insert(0, {str(copy.parent)!r})
        import phi
        assert phi.__file__.endswith(".pyc"), phi.__file__
        assert phi.__spec__.loader.get_source("phi") is None
        for package in {[p for p in LAZY]!r}:
            module = importlib.import_module(package)
            for name in module.__all__:
                assert getattr(module, name) is not None, (package, name)
        print(phi.Agent.__module__, phi.tool.__module__, phi.tools.apply_patch.__module__)
    """, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["phi.agent.agent", "phi.tools.function_tool", "phi.tools.apply_patch"]


def test_observability_without_its_extra_names_the_extra() -> None:
    result = run_python("""
        import sys

        class NoOpenTelemetry:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] == "opentelemetry":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)

        sys.meta_path.insert(0, NoOpenTelemetry())
        try:
            import phi.observability
        except ModuleNotFoundError as exc:
            print(exc)
    """)
    assert "pip install 'phi-agent[otel]'" in result.stdout, result.stdout + result.stderr
    assert "phi.observability needs OpenTelemetry" in result.stdout


def test_many_threads_asking_for_names_first_at_once_all_get_them() -> None:
    result = run_python("""
        import threading
        import phi, phi.tools, phi.loop

        names = [(phi, n) for n in phi.__all__] + [(phi.tools, n) for n in phi.tools.__all__] \\
            + [(phi.loop, n) for n in phi.loop.__all__]
        start, failures = threading.Barrier(16), []

        def ask(offset):
            start.wait()
            for module, name in names[offset:] + names[:offset]:
                try:
                    if getattr(module, name) is None:
                        failures.append(name)
                except Exception as exc:
                    failures.append(f"{name}: {exc!r}")

        threads = [threading.Thread(target=ask, args=(i * 7,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(failures, callable(phi.tools.apply_patch))
    """)
    assert result.stdout.strip() == "[] True", result.stdout + result.stderr
