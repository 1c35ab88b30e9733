"""Loggers that load ``logging`` only when something is logged (DESIGN §1: ``import phi`` stays fast).

``log = get_logger(__name__)`` behaves like ``logging.getLogger(__name__)`` — same name, same
methods, same handlers and levels — but the ``logging`` package (several milliseconds of imports)
is loaded the first time a method is used, which a run that logs nothing never does. Loggers are
named after their modules, so a vendored copy (``myapp._vendor.phi``) logs under its own name;
:data:`ROOT` is the name of the package's top logger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging

ROOT = __name__.rpartition(".")[0]  # "phi", or the name the package was vendored under


class LazyLogger:
    __slots__ = ("name", "_logger")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Any = None

    def __getattr__(self, attribute: str) -> Any:  # debug, info, warning, exception, isEnabledFor, ...
        logger = self._logger
        if logger is None:
            import logging

            logger = self._logger = logging.getLogger(self.name)
        return getattr(logger, attribute)

    def __repr__(self) -> str:
        return f"<LazyLogger {self.name}>"


def get_logger(name: str) -> logging.Logger:
    """A logger named ``name`` (pass ``__name__``) that imports ``logging`` on first use."""
    return cast("logging.Logger", LazyLogger(name))
