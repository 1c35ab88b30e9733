"""Typed errors raised by phi (SPEC §2 DATA-7 for decoding; DESIGN §8: bad input gets a clear, typed error).

Every error phi raises on bad input derives from :class:`PhiError`, names what was wrong and, where
it can, says what to do instead. Provider failures are :class:`phi.providers.base.ProviderError`;
tool failures that a tool reports on purpose are :class:`ToolError`.
"""

from __future__ import annotations

import reprlib
from typing import Any

_SHOWN = reprlib.Repr()  # bounded in depth and breadth: a huge or deeply nested value is cheap to show
_SHOWN.maxstring = _SHOWN.maxother = _SHOWN.maxlong = 80


class PhiError(Exception):
    """Base class of every error phi raises on purpose."""


class DecodeError(PhiError, ValueError):
    """JSON (or a decoded mapping) does not have the shape SPEC §2 describes.

    ``field`` is a dotted path to the offending value, ``value`` a short repr of what was found.
    """

    def __init__(self, field: str, value: Any, expected: str) -> None:
        self.field = field
        self.value = value
        self.expected = expected
        shown = _SHOWN.repr(value)  # never repr(): a value nested 10,000 deep would raise RecursionError
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"cannot decode {field}: expected {expected}, got {shown}")


class InvalidContinue(PhiError):
    """``agent_loop_continue`` was called on a context it cannot continue (SPEC LOOP-3)."""


class InvalidPrompt(PhiError, ValueError):
    """``agent_loop`` was called without prompts (SPEC LOOP-20)."""


class AlreadyRunning(PhiError):
    """A second run was started on an Agent that is still running."""


class RunTimeout(PhiError, TimeoutError):
    """``Agent.run(timeout=)`` came back without a result: the run, aborted at its deadline, was still
    inside application code when the tool grace period ended (SPEC AGENT-2). It ends in the background."""


class ConfigError(PhiError, ValueError):
    """A setting has a value phi cannot work with."""


class ToolError(PhiError):
    """Raised by a tool to report a failure the model should see.

    The loop turns it into an error tool result whose text is ``str(error)`` (SPEC TOOL-7).
    """


class ToolNotFound(ToolError):
    """The model called a tool that is not registered."""


class InvalidArgs(ToolError):
    """Tool arguments did not validate against the tool's JSON Schema."""


class ToolCancelled(ToolError):
    """The tool stopped because its cancellation token fired."""

    def __init__(self, message: str = "Tool execution aborted.") -> None:
        super().__init__(message)


class StructuredOutputFailed(PhiError):
    """The model did not produce a valid structured answer within the allowed attempts."""

    def __init__(self, attempts: int, last_error: str) -> None:
        self.attempts = attempts
        self.last_error = last_error
        super().__init__(f"no valid structured output after {attempts} attempts: {last_error}")
