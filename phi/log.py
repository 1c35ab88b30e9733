"""Loggers that load ``logging`` only when something is logged (DESIGN §1: ``import phi`` stays fast),
and whose records carry no secret (SPEC §17 OTEL-11).

``log = get_logger(__name__)`` behaves like ``logging.getLogger(__name__)`` — same name, same
methods, same handlers and levels — but the ``logging`` package (several milliseconds of imports)
is loaded the first time a method is used, which a run that logs nothing never does. Loggers are
named after their modules, so a vendored copy (``myapp._vendor.phi``) logs under its own name;
:data:`ROOT` is the name of the package's top logger.

Each logger made here gets one filter, :func:`redact_record`: before any handler sees a record, the
secrets phi knows of are replaced in its message (arguments merged in), its traceback and its stack.
A filter on each logger rather than on the handlers because the handlers are the application's; and
on the logger that makes the record because a logger's filters do not run for records that
propagate to it from its children. The filter only does work for records that pass the level check,
and changes a record only when a secret is in it. What counts as a secret is
:mod:`phi.providers.secret_registry`'s business: it installs its redaction here when it is imported
(:func:`redact_records_with`), so this bottom module imports nothing of phi.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, cast

if TYPE_CHECKING:
    import logging

ROOT = __name__.rpartition(".")[0]  # "phi", or the name the package was vendored under

_redaction: Callable[[str], str] | None = None


def redact_records_with(redact: Callable[[str], str] | None) -> None:
    """Make every record of phi's loggers pass through ``redact`` (``None``: leave records alone)."""
    global _redaction
    _redaction = redact


def redact_record(record: logging.LogRecord) -> bool:
    """The filter of phi's loggers: ``record`` with the secrets phi knows of replaced; never drops one.
    Never raises either (a filter's exception would reach the code that logs): should redacting fail,
    the record keeps only its level and place, with a note saying so."""
    redact = _redaction
    if redact is None:
        return True
    try:
        _redact(record, redact)
    except Exception as error:  # a bug here must neither break the caller nor let the text through
        record.msg, record.args = f"(message withheld: redacting it failed with {type(error).__name__})", None
        record.exc_info = record.exc_text = record.stack_info = None
    return True


def _redact(record: logging.LogRecord, redact: Callable[[str], str]) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a bad format call, which logging reports with its arguments: clean those
        record.msg = redact(str(record.msg))
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(redact(str(arg)) for arg in args)
        elif args:
            record.args = {key: redact(str(value)) for key, value in args.items()}
        return
    cleaned = redact(message)
    if cleaned != message:
        record.msg, record.args = cleaned, None
    if record.exc_info:
        import logging

        text = record.exc_text or logging.Formatter().formatException(record.exc_info)
        cleaned = redact(text)
        if cleaned != text:  # the exception object itself would tell a handler the secret again
            record.exc_text, record.exc_info = cleaned, None
    elif record.exc_text:
        record.exc_text = redact(record.exc_text)
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


class LazyLogger:
    __slots__ = ("name", "_logger")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Any = None

    def __getattr__(self, attribute: str) -> Any:  # debug, info, warning, exception, isEnabledFor, ...
        logger = self._logger
        if logger is None:
            import logging

            logger = logging.getLogger(self.name)
            logger.addFilter(redact_record)  # once per logger: addFilter skips a filter it holds
            self._logger = logger
        return getattr(logger, attribute)

    def __repr__(self) -> str:
        return f"<LazyLogger {self.name}>"


def get_logger(name: str) -> logging.Logger:
    """A logger named ``name`` (pass ``__name__``) that imports ``logging`` on first use."""
    return cast("logging.Logger", LazyLogger(name))
