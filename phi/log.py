"""Loggers that load ``logging`` only when something is logged (DESIGN §1: ``import phi`` stays fast).

``log = get_logger("phi.loop")`` behaves like ``logging.getLogger("phi.loop")`` — same name, same
methods, same handlers and levels — but the ``logging`` package (several milliseconds of imports)
is loaded the first time a method is used, which a run that logs nothing never does.
"""

from __future__ import annotations

from typing import Any


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


def get_logger(name: str) -> LazyLogger:
    return LazyLogger(name)
