"""phi/errors.py opens with a drawing of every exception class phi defines (issue 33): the tree under
PhiError and, beside it, the classes on a standard base alone. The drawing stays true: each class it
draws is defined in the module it names, under its first base, with its other bases in brackets, and
every public exception class of ``phi/`` is drawn (the subclasses of PhiError under PhiError)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCSTRING = ast.get_docstring(ast.parse((ROOT / "phi" / "errors.py").read_text(encoding="utf-8"))) or ""
INDENT = "    "  # the drawings are the docstring's indented lines
LINE = re.compile(r"(?P<prefix>(?:[│ ]   )*(?:[├└]── )?)(?P<name>\w+)(?: \[(?P<extras>\w+(?:, \w+)*)\])?"
                  r"(?: +(?P<module>phi(?:\.\w+)+)(?: .*)?)?")

# Run in a fresh interpreter: importing every module of phi here would change what later tests see.
WALK = r'''
import ast, importlib, json, pathlib, sys

phi = pathlib.Path(sys.argv[1])
found = []
for file in sorted(phi.rglob("*.py")):
    parts = file.relative_to(phi.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[-1] == "__main__" and not any(isinstance(node, ast.ClassDef)
                                           for node in ast.parse(file.read_text(encoding="utf-8")).body):
        continue  # an entry point that only runs the command: importing it would run it
    module = importlib.import_module(".".join(parts))
    for name, value in vars(module).items():
        if (isinstance(value, type) and issubclass(value, BaseException) and not name.startswith("_")
                and value.__module__ == module.__name__):
            found.append([module.__name__, name, [[base.__module__, base.__name__] for base in value.__bases__]])


def below(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from below(sub)


from phi.errors import PhiError

print(json.dumps({"found": found, "phi_tree": sorted({(c.__module__, c.__name__) for c in below(PhiError)})}))
'''


@dataclass(frozen=True)
class Drawn:
    """One class of the drawing: where it says the class is, and its bases as ``(module, name)``."""

    module: str
    name: str
    bases: tuple[tuple[str, str], ...]
    under_phi_error: bool


def drawn(docstring: str) -> list[Drawn]:
    """Every class line of the drawings in ``docstring``; a root without a module is a standard class."""
    classes: list[Drawn] = []
    parents: list[tuple[str, str]] = []  # the line at each depth above this one
    for line in docstring.splitlines():
        if not line.startswith(INDENT):
            parents = []  # prose between two drawings: the next one starts from its own root
            continue
        match = LINE.fullmatch(line[len(INDENT):].rstrip())
        assert match, f"phi/errors.py: a line of the drawing that does not read as one: {line!r}"
        depth = len(match["prefix"]) // 4
        assert depth <= len(parents), f"phi/errors.py: {match['name']} is drawn under no parent"
        place = (match["module"] or "builtins", match["name"])
        del parents[depth:]
        if parents:
            extras = tuple(("builtins", name) for name in (match["extras"] or "").split(", ") if name)
            classes.append(Drawn(place[0], place[1], (parents[-1], *extras), parents[0] == ("phi.errors", "PhiError")))
        elif match["module"]:  # a root of phi's own: PhiError, whose base is drawn in the sentence above it
            classes.append(Drawn(place[0], place[1], (("builtins", "Exception"),), False))
        parents.append(place)
    return classes


def walk() -> dict[str, list]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", WALK, str(ROOT / "phi")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, list] = json.loads(done.stdout.splitlines()[-1])
    return result


def problems(classes: list[Drawn], found: list, phi_tree: list) -> list[str]:
    """What the drawing gets wrong about the classes phi defines."""
    real = {(module, name): tuple(tuple(base) for base in bases) for module, name, bases in found}
    shown = {(c.module, c.name): c for c in classes}
    wrong = [f"{module}.{name} is not drawn" for module, name in sorted(set(real) - set(shown))]
    wrong += [f"{module}.{name} is drawn but not defined there" for module, name in sorted(set(shown) - set(real))]
    for key in sorted(set(real) & set(shown)):
        if shown[key].bases != real[key]:
            wrong.append(f"{key[0]}.{key[1]}: drawn with bases {shown[key].bases}, defined with {real[key]}")
    under = {(c.module, c.name) for c in classes if c.under_phi_error}
    tree = {tuple(item) for item in phi_tree}
    wrong += [f"{m}.{n} is a PhiError but drawn outside its tree" for m, n in sorted(tree - under)]
    wrong += [f"{m}.{n} is drawn under PhiError but is none" for m, n in sorted(under - tree)]
    return wrong


def test_the_drawing_in_phi_errors_is_every_exception_class_of_phi() -> None:
    classes = drawn(DOCSTRING)
    assert len(classes) >= 40
    result = walk()
    assert not problems(classes, result["found"], result["phi_tree"])


def test_a_wrong_drawing_is_found() -> None:
    found = [["phi.errors", "PhiError", [["builtins", "Exception"]]],
             ["phi.errors", "ToolError", [["phi.errors", "PhiError"]]],
             ["phi.tools.x", "PatchError", [["phi.errors", "ToolError"], ["builtins", "ValueError"]]],
             ["phi.tools.y", "Confined", [["builtins", "PermissionError"]]]]
    tree = [["phi.errors", "ToolError"], ["phi.tools.x", "PatchError"]]
    right = ("PhiError   phi.errors   the base\n"
             "└── ToolError   phi.errors\n"
             "    └── PatchError [ValueError]   phi.tools.x   when\n")
    beside = "PermissionError\n└── Confined   phi.tools.y   a write\n"

    def doc(*drawings: str) -> str:
        return "Prose.\n\n" + "\n\nMore prose.\n\n".join(
            "\n".join(INDENT + line for line in drawing.splitlines()) for drawing in drawings)

    def wrong(*drawings: str) -> list[str]:
        return problems(drawn(doc(*drawings)), found, tree)

    assert wrong(right, beside) == []
    assert wrong(right + "└── Other   phi.errors\n", beside) == ["phi.errors.Other is drawn but not defined there",
                                                                "phi.errors.Other is drawn under PhiError but is none"]
    assert wrong(right.replace("    └── PatchError", "└── PatchError"), beside) == [
        "phi.tools.x.PatchError: drawn with bases (('phi.errors', 'PhiError'), ('builtins', 'ValueError')), "
        "defined with (('phi.errors', 'ToolError'), ('builtins', 'ValueError'))"]
    assert wrong(right.replace(" [ValueError]", ""), beside)[0].startswith("phi.tools.x.PatchError: drawn with bases")
    assert wrong(right) == ["phi.tools.y.Confined is not drawn"]
    assert wrong(right, beside.replace("Confined   phi.tools.y", "Confined   phi.tools.z")) == [
        "phi.tools.y.Confined is not drawn", "phi.tools.z.Confined is drawn but not defined there"]
    assert wrong(beside, right) == []  # the order of the drawings does not matter
