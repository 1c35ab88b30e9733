"""The tree is SPEC.md's table of contents (issue 21): the SPEC ↔ tree table in README.md is true both
ways, package docstrings name their section, docs/architecture.md's tree names every module of phi/
under its package (and nothing that is not one), imports only go down the layers of
docs/architecture.md and never run in a circle inside a folder, every package's ``__all__`` is a literal,
and every lazy package shows type checkers exactly the names it exports, each imported once."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import itertools
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PHI = ROOT / "phi"
SPEC = (ROOT / "SPEC.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")

# docs/architecture.md "Which way imports go": a place imports only from lower levels (or itself)
LEVELS: dict[str, int] = {
    "errors": 0, "ids": 0, "log": 0, "lazy_exports": 0, "json_values": 0, "removed": 0, "types": 1, "events": 2,
    "concurrency": 3, "providers": 4, "context": 5, "loop": 6, "tools": 7,
    "session": 8, "subagent": 8, "evaluation": 8, "agent": 9,
    "mcp": 10, "openapi": 10, "skills": 10, "observability": 10, "conformance": 11, "coding": 12, "export": 13, "cli": 14,
}
LEAF_LEVEL = LEVELS["mcp"]
SUPPORT = {"__init__", "ids", "log", "lazy_exports", "json_values", "removed"}


def readme_table() -> list[tuple[str, list[str]]]:
    """(section, [paths]) rows of README's SPEC table."""
    rows = []
    for line in README.splitlines():
        match = re.match(r"\| (§[\d.]+[^|]*|support) \| (.+) \|$", line)
        if match:
            rows.append((match.group(1).split()[0], re.findall(r"`(phi/[\w/.]*|conformance/)`", match.group(2))))
    return rows


def place_of(path: Path) -> str:
    """The top-level place a file of phi/ belongs to: its package, or its module's name."""
    parts = path.relative_to(PHI).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def test_every_spec_section_has_a_place_and_every_place_a_section() -> None:
    rows = readme_table()
    listed = {section for section, _ in rows}
    sections = re.findall(r"^## (\d+)\. ", SPEC, flags=re.M)
    for number in sections:
        if number == "1":  # Terms: definitions only
            continue
        subsections = re.findall(rf"^### ({number}\.\d+) ", SPEC, flags=re.M)
        assert f"§{number}" in listed or (subsections and all(f"§{s}" in listed for s in subsections)), \
            f"SPEC §{number} has no row in README.md's table"
    for section in listed - {"support"}:
        assert re.search(rf"^##+ {re.escape(section[1:])}\.? ", SPEC, flags=re.M), f"README names {section}, which SPEC lacks"
    places = {p for _, paths in rows for p in paths}
    for path in places:
        assert (ROOT / path).exists(), f"README's table names {path}, which does not exist"
    tops = {place_of(p) for p in PHI.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
    named = {place_of(ROOT / p) if p.startswith("phi/") else p for p in places}
    assert tops - named == set(), f"places of phi/ missing from README's table: {sorted(tops - named)}"


@pytest.mark.parametrize("section, paths", [r for r in readme_table() if r[0] != "support"])
def test_each_place_names_its_section_in_its_docstring(section: str, paths: list[str]) -> None:
    for path in paths:
        if not path.startswith("phi/"):
            continue
        file = ROOT / path / "__init__.py" if (ROOT / path).is_dir() else ROOT / path
        doc = ast.get_docstring(ast.parse(file.read_text(encoding="utf-8"))) or ""
        number = section[1:]
        named = re.findall(r"§(\d+(?:\.\d+)?)(?:[–-](\d+))?", doc)
        covered = any(number == low or number.startswith(low + ".") or
                      (high and number.split(".")[0].isdigit() and int(low.split(".")[0]) <= int(number.split(".")[0]) <= int(high))
                      for low, high in named)
        assert covered, f"{path}: its docstring does not name SPEC {section}"


PLACE = re.compile(r"\w+(?:/|\.py)")  # how an entry of the architecture tree starts: ``loop/``, ``types.py``
MODULE_NAME = re.compile(r"(?<![\w/.-])(\w+(?:/\w+)*\.py)\b")


def architecture_tree() -> dict[str, str]:
    """docs/architecture.md's tree of ``phi/``: the text of each entry (its first line and the lines
    indented under it) by each place its first line starts with (``loop/``, ``types.py``)."""
    section = ARCHITECTURE.split("\n## The tree\n", 1)[1].split("\n## ", 1)[0]
    lines = section.split("```\n", 2)[1].splitlines()
    assert lines[0] == "phi/", "the tree starts at phi/"
    entries: dict[str, str] = {}
    places: list[str] = []
    for line in lines[1:]:
        if not line.startswith("  "):  # back at the repository's root: phi/ has ended
            break
        if not line.startswith("   "):
            places = list(itertools.takewhile(PLACE.fullmatch, line.split()))
            assert places, f"docs/architecture.md: a line of the tree names no place: {line!r}"
        for place in places:
            entries[place] = entries.get(place, "") + line + "\n"
    return entries


def test_the_architecture_tree_names_every_module_under_its_package() -> None:
    tree = architecture_tree()
    missing = []
    for file in sorted(PHI.rglob("*.py")):
        if file.name in ("__init__.py", "__main__.py"):
            continue
        top, *inside = file.relative_to(PHI).parts
        if not inside:
            found = top in tree
        else:
            name = "/".join(inside)
            found = top + "/" in tree and name in MODULE_NAME.findall(tree[top + "/"])
        if not found:
            missing.append(str(file.relative_to(ROOT)))
    assert not missing, f"docs/architecture.md's tree does not name these under their package: {missing}"
    packages = {p.parent.name + "/" for p in PHI.glob("*/__init__.py")}
    assert packages - set(tree) == set(), f"packages without an entry in the tree: {sorted(packages - set(tree))}"
    stale = [f"{place}: {name}" for place, text in tree.items() for name in MODULE_NAME.findall(text)
             if not ((PHI / place / name) if place.endswith("/") else (PHI / name)).is_file()]
    assert not stale, f"docs/architecture.md's tree names modules that do not exist there: {stale}"


def test_the_architecture_tree_is_read_as_written() -> None:
    tree = architecture_tree()
    assert {"__init__.py", "types.py", "ids.py", "log.py", "lazy_exports.py", "loop/", "cli/"} <= set(tree)
    assert "run.py" in MODULE_NAME.findall(tree["loop/"]) and "run.py" not in MODULE_NAME.findall(tree["agent/"])
    assert MODULE_NAME.findall("a.py + b/c.py, not x-y.py") == ["a.py", "b/c.py"]


def imports_of(file: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import inside phi that ``file`` makes, lazy ones included."""
    module = ".".join(file.relative_to(ROOT).with_suffix("").parts)
    package = module.removesuffix(".__init__") if file.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            found += [(node.lineno, target)] if node.module else [(node.lineno, f"{target}.{a.name}") for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "phi":
            found.append((node.lineno, f"ABSOLUTE {node.module}"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"ABSOLUTE {a.name}") for a in node.names if a.name.split(".")[0] == "phi"]
    return found


def test_imports_are_relative_and_only_go_down_the_layers() -> None:
    bad = []
    for file in sorted(PHI.rglob("*.py")):
        here = place_of(file)
        for line, target in imports_of(file):
            where = f"{file.relative_to(ROOT)}:{line}"
            if target.startswith("ABSOLUTE"):
                bad.append(f"{where}: absolute import {target[9:]} (use a relative one)")
                continue
            parts = target.split(".")
            there = parts[1] if len(parts) > 1 else "__init__"
            if there == here:
                continue
            if there not in LEVELS:  # ``from .. import name``: the public façade
                if here not in SUPPORT and LEVELS.get(here, 0) < LEAF_LEVEL:
                    bad.append(f"{where}: the core imports the package root ({target})")
                continue
            if here == "__init__":
                if LEVELS[there] >= LEAF_LEVEL:
                    bad.append(f"{where}: phi/__init__.py imports the leaf {there}")
            elif LEVELS[there] >= LEVELS[here]:
                bad.append(f"{where}: {here} (level {LEVELS[here]}) imports {there} (level {LEVELS[there]})")
    assert not bad, "imports against docs/architecture.md:\n" + "\n".join(bad)


def test_every_place_has_a_level() -> None:
    tops = {place_of(p) for p in PHI.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
    assert tops - {"__init__"} == set(LEVELS)


def lazy_packages() -> list[Path]:
    return sorted(p for p in PHI.rglob("__init__.py") if "lazy_exports(" in p.read_text(encoding="utf-8"))


def literal_all(tree: ast.Module) -> list[str] | None:
    """The package's ``__all__`` when it is a literal list of strings (None when there is none)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            value = ast.literal_eval(node.value)  # raises for anything but a literal
            assert isinstance(value, list) and all(isinstance(n, str) for n in value), "__all__ must list strings"
            return value
    return None


@pytest.mark.parametrize("init", sorted(PHI.rglob("__init__.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_package_writes_its_all_as_a_literal(init: Path) -> None:
    tree = ast.parse(init.read_text(encoding="utf-8"))
    names = literal_all(tree)
    if names is None:  # a package without __all__ exports nothing by name (phi.providers, phi.cli)
        return
    assert len(names) == len(set(names)), f"{init}: a name listed twice in __all__"
    package = importlib.import_module(".".join(init.relative_to(ROOT).parent.parts))
    for name in names:
        assert getattr(package, name) is not None


@pytest.mark.parametrize("init", lazy_packages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_lazy_package_imports_each_name_once_for_type_checkers(init: Path) -> None:
    """Its ``if TYPE_CHECKING:`` imports give exactly the names of ``__all__`` it does not define itself,
    each once, and the loader reads the same table from the source and from bytecode."""
    from phi.lazy_exports import _from_code, _from_source, imports_for_type_checkers

    source = init.read_text(encoding="utf-8")
    tree = ast.parse(source)
    names = literal_all(tree)
    assert names is not None, f"{init}: a lazy package needs a literal __all__"
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    checked = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    assert len(checked) == 1, f"{init}: one `if TYPE_CHECKING:` block holds the imports"
    imported: list[str] = []
    for node in checked[0].body:
        assert isinstance(node, ast.ImportFrom), f"{init}: only `from ... import` under TYPE_CHECKING"
        for alias in node.names:
            assert alias.asname is None, f"{init}: `{alias.name} as {alias.asname}`: __all__ re-exports, no alias needed"
            if node.level == 1:
                imported.append(alias.name)
    assert len(imported) == len(set(imported)), f"{init}: a name imported twice"
    assert set(names) - defined == {n for n in imported if n in names}, \
        f"{init}: __all__ and the imports for type checkers differ"
    visible = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in ast.walk(n) if isinstance(t, ast.Name)}
    assert "__getattr__" not in visible | defined, \
        f"{init}: define __getattr__ under `if not TYPE_CHECKING:`, or checkers accept any misspelt name"
    package = importlib.import_module(".".join(init.relative_to(ROOT).parent.parts))
    by_source = _from_source(source)
    by_code = _from_code(compile(source, str(init), "exec"))
    assert {n: by_code[n] for n in by_source if n in names} == {n: by_source[n] for n in by_source if n in names}
    assert set(imports_for_type_checkers(vars(package))) == set(names) - defined


def test_package_docstrings_name_their_spec_section() -> None:
    for init in sorted(PHI.glob("*/__init__.py")):
        first = (ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "").splitlines()[0]
        assert first.startswith("SPEC §"), f"{init.relative_to(ROOT)}: first line should name its SPEC section"


def test_agent_keywords_are_exactly_the_loop_settings() -> None:
    from phi.loop.config import QUEUE_SOURCES, AgentLoopConfig, LoopSettings

    fields = {f.name for f in dataclasses.fields(AgentLoopConfig)} - set(QUEUE_SOURCES)
    assert set(LoopSettings.__annotations__) == fields


def circles_in(folder: Path) -> list[list[str]]:
    """The import circles among the modules of one folder (lazy imports and imports for type checkers
    count: each is a module needing another), as strongly connected components of two or more."""
    package = ".".join(folder.relative_to(ROOT).parts)
    modules = {f"{package}.{p.stem}" if p.name != "__init__.py" else package: p for p in folder.glob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, file in modules.items():
        for _, target in imports_of(file):
            if target != package and not target.startswith(package + "."):
                continue  # another folder
            head = target[len(package) + 1:].split(".")[0]
            if target == package or (f"{package}.{head}" not in modules and not (folder / head).is_dir()):
                needed = package  # a name the package's __init__ gives
            elif f"{package}.{head}" in modules:
                needed = f"{package}.{head}"  # a module of this folder (or a name from it)
            else:
                continue  # a subfolder: its own test
            if needed != name:
                edges[name].add(needed)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("folder", sorted({p.parent for p in PHI.rglob("*.py") if "__pycache__" not in p.parts}),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_import_circle_inside_a_folder(folder: Path) -> None:
    """docs/architecture.md: inside a folder too, imports go one way (issue 33), so each module can be
    read after the ones it uses."""
    assert circles_in(folder) == []


def test_the_circle_finder_sees_a_circle(tmp_path: Path) -> None:
    folder = ROOT / "phi" / "_circle_probe"
    try:
        folder.mkdir()
        (folder / "__init__.py").write_text("", encoding="utf-8")
        (folder / "a.py").write_text("def f():\n    from .b import g\n", encoding="utf-8")
        (folder / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
                                     encoding="utf-8")
        assert circles_in(folder) == [["phi._circle_probe.a", "phi._circle_probe.b"]]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
