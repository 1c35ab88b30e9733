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


def test_dir_shows_the_public_names_submodules_and_dunders_not_helpers() -> None:
    import importlib

    names = dir(phi)
    assert set(phi.__all__) <= set(names)
    assert {"__version__", "__file__", "__path__", "__doc__", "tools", "mcp", "loop"} <= set(names)  # completion
    assert not {"TYPE_CHECKING", "annotations", "install_finder", "PACKAGE_NAMES", "removed_attribute"} & set(names)
    loop = importlib.import_module("phi.loop")
    assert set(loop.__all__) <= set(dir(loop)) and not {"lazy_exports", "TYPE_CHECKING"} & set(dir(loop))


def test_a_submodule_is_there_after_a_bare_import_as_type_checkers_say() -> None:
    result = run_python("""
        import phi
        print(phi.tools.ShellTool.__name__, phi.mcp.__name__, hasattr(phi, "nothing_here"))
    """)
    assert result.stdout.split() == ["ShellTool", "phi.mcp", "False"], result.stderr


def test_a_misspelt_name_gets_pythons_suggestion_from_the_public_names() -> None:
    result = run_python("""
        import phi
        phi.Agnet
    """)
    assert result.stderr.strip().splitlines()[-1] == \
        "AttributeError: module 'phi' has no attribute 'Agnet'. Did you mean: 'Agent'?"


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


def test_asking_whether_a_removed_module_exists_is_told_no() -> None:
    import importlib.util

    assert importlib.util.find_spec("phi.loop_config") is None  # code probing the old layout goes on


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
    assert name not in dir(agent)
    with pytest.raises(AttributeError, match=r"^'Agent' object has no attribute 'toolz'$"):
        agent.toolz  # type: ignore[attr-defined]  # the point of the test
    with pytest.raises(AttributeError, match=r"^'Agent' object has no attribute 'with_foo'$"):
        agent.with_foo  # type: ignore[attr-defined]  # never a method: no hint


def test_an_attribute_error_inside_a_subclass_property_is_not_hidden() -> None:
    class Budgeted(phi.Agent):
        @property
        def budget(self) -> object:
            return self.config.max_budget  # type: ignore[attr-defined]  # the bug the user must see

    with pytest.raises(AttributeError, match="'AgentLoopConfig' object has no attribute 'max_budget'"):
        Budgeted(provider=phi.ScriptedProvider([])).budget


def test_a_removed_sub_agent_builder_says_clone() -> None:
    child = phi.SubAgentTool(name="helper", provider=phi.ScriptedProvider([]))
    with pytest.raises(AttributeError, match=r"^SubAgentTool\.with_max_turns was removed: use tool\.clone\(max_turns"):
        child.with_max_turns  # type: ignore[attr-defined]  # the point of the test
    with pytest.raises(AttributeError, match=r"^'SubAgentTool' object has no attribute 'with_model'$"):
        child.with_model  # type: ignore[attr-defined]  # it never had one


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


def test_names_load_through_a_loader_that_keeps_neither_source_nor_bytecode() -> None:
    """Compilers to native code (Nuitka, Cython) load modules that have no source or code to read the
    imports from: the package's modules are searched instead."""
    result = run_python("""
        import importlib.abc, sys

        class Opaque(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] != "phi":
                    return None
                for finder in sys.meta_path:
                    spec = None if finder is self else finder.find_spec(name, path, target)
                    if spec is not None:
                        real = spec.loader

                        class Loader(importlib.abc.Loader):
                            def create_module(self, spec):
                                return None

                            def exec_module(self, module):
                                real.exec_module(module)

                        spec.loader = Loader()
                        return spec

        sys.meta_path.insert(0, Opaque())
        import importlib
        import phi
        assert not hasattr(phi.__spec__.loader, "get_source")
        for package in PACKAGES:
            module = importlib.import_module(package)
            for name in sorted(module.__all__):
                value = getattr(module, name)
                print(package, name, getattr(value, "__module__", "-"), getattr(value, "__qualname__", "-"))
    """.replace("PACKAGES", repr(LAZY)))
    import importlib

    expected = []
    for package in LAZY:
        module = importlib.import_module(package)
        for name in sorted(module.__all__):
            value = getattr(module, name)
            expected.append(f"{package} {name} {getattr(value, '__module__', '-')} {getattr(value, '__qualname__', '-')}")
    assert result.stdout.splitlines() == expected, result.stderr


def test_the_level_of_a_relative_import_is_read_as_python_3_14_loads_it() -> None:
    from types import SimpleNamespace

    from phi.lazy_exports import _level_before

    for opname in ("LOAD_CONST", "LOAD_SMALL_INT"):
        instructions = [SimpleNamespace(opname=opname, argval=2), SimpleNamespace(opname="LOAD_CONST", argval=("a",)),
                        SimpleNamespace(opname="IMPORT_NAME", argval="x")]
        assert _level_before(instructions, 2) == 2
