"""Package namespaces that load their names on first use (PEP 562), so importing a package is cheap.

A package lists its public names by the module that defines them, relative to the package, and
repeats the same imports under ``if TYPE_CHECKING:`` so type checkers see every name with its real
type (``tests/test_layout.py`` keeps the two equal)::

    _EXPORTS = {".run": ("agent_loop", "agent_loop_continue")}
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
    __all__ = export_names(_EXPORTS)

Modules are resolved against the package's own ``__name__``, so a package copied under another name
(``myapp._vendor.phi``) loads from its copy.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping, MutableMapping, Sequence

Exports = Mapping[str, Sequence[str]]


def export_names(exports: Exports) -> list[str]:
    """Every exported name, sorted (a package's ``__all__``)."""
    return sorted(name for names in exports.values() for name in names)


def lazy_exports(package: str, exports: Exports,
                 namespace: MutableMapping[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for ``exports`` (module -> names)."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
