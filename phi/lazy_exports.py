"""Package namespaces that load their names on first use (PEP 562), so importing a package is cheap.

A lazy package writes each public name once, as an import that only type checkers run, and lists the
names in a literal ``__all__``; at run time the first use of a name runs that import::

    if TYPE_CHECKING:
        from .run import agent_loop, agent_loop_continue

    __all__ = ["agent_loop", "agent_loop_continue"]

    if not TYPE_CHECKING:  # hidden from checkers, so a misspelt name is still an error for them
        __getattr__, __dir__ = lazy_exports(globals())

Which module gives a name is read from the package's own ``if TYPE_CHECKING:`` imports: from its source
when there is one, else from its compiled code (a frozen or bytecode-only install). Modules resolve
against the package's own ``__name__``, so a package copied under another name (``myapp._vendor.phi``)
loads from its copy. ``tests/test_layout.py`` checks that every lazy package's imports and ``__all__``
name the same things.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping, MutableMapping

Origins = dict[str, tuple[str, str]]  # exported name -> (relative module, attribute there)


def lazy_exports(namespace: MutableMapping[str, Any], removed: Callable[[str], AttributeError | None] | None = None
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.

    ``removed(name)`` gives the error for a name the package no longer has (one that says what replaced
    it, :mod:`.removed`), or None for a name it never had.
    """
    package: str = namespace["__name__"]
    exported: list[str] = list(namespace["__all__"])
    table: list[Origins] = []  # read once; two threads reading it at once both read the same, and one wins
    folder: list[set[str]] = []  # the package's submodules, listed once (hasattr() misses may be many)

    def submodules() -> set[str]:
        if not folder:
            folder.append(_submodules(namespace))
        return folder[0]

    def __getattr__(name: str) -> Any:
        if name in exported:
            if not table:
                table.append(imports_for_type_checkers(namespace))
            module, attribute = table[0][name]
            value = getattr(importlib.import_module(module, package), attribute)
            namespace[name] = value  # later lookups are plain attribute reads
            return value
        error = removed(name) if removed is not None else None
        if error is not None:
            raise error
        if not name.startswith("__") and name in submodules():
            # `import phi` then `phi.tools.X`: what type checkers accept works (the import sets the attribute)
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}", name=name, obj=sys.modules.get(package))

    def __dir__() -> list[str]:
        # the public names, the module's own dunders (__file__, __path__, ...) and its submodules, loaded or not
        own = (n for n in namespace if n.startswith("__") and n.endswith("__"))
        return sorted({*exported, *own, *submodules()})

    return __getattr__, __dir__


def _submodules(namespace: Mapping[str, Any]) -> set[str]:
    """The public modules and subpackages of the package, as its folder (or archive) lists them."""
    import pkgutil

    return {m.name for m in pkgutil.iter_modules(namespace.get("__path__", [])) if not m.name.startswith("_")}


def imports_for_type_checkers(namespace: Mapping[str, Any]) -> Origins:
    """``name -> (module, attribute)`` for each name of ``__all__`` imported under ``if TYPE_CHECKING:``
    at the top level of the package whose ``globals()`` is ``namespace``."""
    spec = namespace["__spec__"]
    exported = set(namespace["__all__"])
    source = _ask(spec.loader, "get_source", spec.name)
    if source is not None:
        found = _from_source(source)
    else:  # a bytecode-only install reads the compiled imports; a loader that gives neither is searched
        code = _ask(spec.loader, "get_code", spec.name)
        found = _from_code(code) if code is not None else _by_search(spec.name, namespace, exported)
    origins = {name: origin for name, origin in found.items() if name in exported}
    missing = exported - set(origins) - set(namespace)  # names the package defines itself are no imports
    if missing:
        raise ImportError(f"{spec.name}: __all__ names {sorted(missing)}, which no 'if TYPE_CHECKING:' import gives")
    return origins


def _ask(loader: Any, method: str, name: str) -> Any:
    """``loader.method(name)``, or None where the loader has no such method or cannot answer."""
    ask = getattr(loader, method, None)
    try:
        return ask(name) if callable(ask) else None
    except (ImportError, OSError):
        return None


def _by_search(package: str, namespace: Mapping[str, Any], exported: set[str]) -> Origins:
    """The table found by importing the package's modules in turn (a loader that keeps neither source
    nor bytecode, as compilers to native code do): slow, once, and only there."""
    import pkgutil

    found: Origins = {}
    seen: Origins = {}  # where a name was first met, for values that do not say where they were made
    wanted = exported - set(namespace)
    for info in pkgutil.iter_modules(namespace.get("__path__", []), prefix=package + "."):
        if info.ispkg and not info.name.rpartition(".")[2].startswith("_"):  # a subpackage that exports it
            try:
                child = importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 - a package needing an extra that is not installed
                continue
            for name in sorted(wanted & set(getattr(child, "__all__", ()))):
                found[name] = (info.name, name)
                wanted.discard(name)
    everywhere = pkgutil.walk_packages(namespace.get("__path__", []), prefix=package + ".")
    for info in sorted(everywhere, key=lambda found: found.name.count(".")):  # nearest the package first
        if not wanted:
            break
        if info.name.rpartition(".")[2].startswith("_"):  # never a __main__ (it would run), nor a private module
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a module needing an extra that is not installed: look elsewhere
            continue
        for name in sorted(wanted):
            value = vars(module).get(name, module)
            if value is module or isinstance(value, type(sys)):
                continue
            seen.setdefault(name, (info.name, name))
            if getattr(value, "__module__", info.name) == info.name:  # defined here, not imported
                found[name] = (info.name, name)
                wanted.discard(name)
    return {**{name: seen[name] for name in wanted if name in seen}, **found}


def _from_source(source: str) -> Origins:
    import ast

    found: Origins = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    module = "." * statement.level + (statement.module or "")
                    for alias in statement.names:
                        found[alias.asname or alias.name] = (module, alias.name)
    return found


def _from_code(code: Any) -> Origins:
    """The same table from bytecode: ``from M import a as b`` compiles to ``IMPORT_NAME M`` (its level
    loaded just before it), then ``IMPORT_FROM a`` and a store of ``b`` for each name."""
    import dis

    found: Origins = {}
    module, level = "", 0
    instructions = list(dis.get_instructions(code))
    for at, instruction in enumerate(instructions):
        if instruction.opname == "IMPORT_NAME":
            module = instruction.argval or ""
            level = _level_before(instructions, at)
        elif instruction.opname == "IMPORT_FROM":
            store = instructions[at + 1] if at + 1 < len(instructions) else None
            bound = store.argval if store is not None and store.opname.startswith("STORE_") else instruction.argval
            found[bound] = ("." * level + module, instruction.argval)
    return found


def _level_before(instructions: list[Any], at: int) -> int:
    # IMPORT_NAME pops (level, fromlist): the level is the constant loaded two instructions before it
    candidate = instructions[at - 2] if at >= 2 else None
    # LOAD_SMALL_INT: how Python 3.14 loads it
    if candidate is not None and candidate.opname in ("LOAD_CONST", "LOAD_SMALL_INT") \
            and isinstance(candidate.argval, int):
        return int(candidate.argval)
    return 0
