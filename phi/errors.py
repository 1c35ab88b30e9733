"""Typed errors raised by phi (SPEC §2 DATA-7 for decoding; DESIGN §8: bad input gets a clear, typed error).

Every error phi raises on purpose derives from :class:`PhiError`, names what was wrong and, where
it can, says what to do instead. Provider failures are :class:`phi.providers.base.ProviderError` (the
loop turns them into a failed reply, SPEC ERR-3); tool failures that a tool reports on purpose are
:class:`ToolError` (the model sees them as the call's result, SPEC TOOL-7).

Every public exception class of phi, the module that defines it and when it is raised; a name in
brackets is a second base, so ``except ValueError`` catches ``DecodeError`` too:

    PhiError                                  phi.errors                ``except PhiError`` catches all of these
    ├── AlreadyRunning                        phi.errors                a second run on a busy Agent
    ├── ConfigError [ValueError]              phi.errors                a setting phi cannot work with
    │   ├── UnsupportedAnnotation [TypeError] phi.tools.schema          @tool on a type JSON Schema cannot describe
    │   ├── PermissionRuleError               phi.coding.permissions    a permission rule or settings file phi cannot read
    │   └── NoModel                           phi.cli.options           the phi command: no model, no key, no --offline
    ├── DecodeError [ValueError]              phi.errors                JSON not in the shape of §2; names the field
    ├── InvalidPrompt [ValueError]            phi.errors                agent_loop without prompts (LOOP-20)
    ├── InvalidContinue                       phi.errors                a context that cannot be continued (LOOP-3)
    ├── RunTimeout [TimeoutError]             phi.errors                run(timeout=): app code outlived the bound
    ├── StructuredOutputFailed                phi.errors                run_structured: no valid answer in its retries
    ├── ToolError                             phi.errors                a tool's failure, the model's result (TOOL-7)
    │   ├── ToolNotFound                      phi.errors                for a tool's own use (a call of a missing tool is an error result)
    │   ├── InvalidArgs                       phi.errors                arguments that fail the tool's schema (TOOL-2)
    │   ├── ToolCancelled                     phi.errors                the call's cancellation token fired
    │   ├── SandboxUnavailable                phi.tools.sandbox         a sandboxed command the kernel cannot confine
    │   └── PatchError                        phi.tools.patch_parser    apply_patch failed
    │       ├── PatchParseError [ValueError]  phi.tools.patch_parser    the text is not a v4a patch
    │       └── PatchApplyError               phi.tools.patch_contents  the patch does not fit the files
    ├── ProviderError                         phi.providers.base        a failed model call; ``kind`` says how (ERR-1)
    ├── EventStreamError [ValueError]         phi.providers.eventstream a corrupt AWS event-stream frame (Bedrock)
    ├── PoolExhausted                         phi.concurrency.workers   no thread for a tool call can ever come free
    ├── SessionError                          phi.session.errors        a session could not be saved, loaded or listed
    │   ├── NotFound                          phi.session.errors        no session with this id is stored
    │   ├── CorruptSession                    phi.session.errors        a stored file or row is not a readable session
    │   ├── UnencodableSession                phi.session.errors        a value in the session is not JSON data
    │   ├── InvalidSessionId [ValueError]     phi.session.errors        an id that cannot be a file name
    │   └── SessionConflict                   phi.session.errors        another writer stored these loops first
    ├── EvaluationError                       phi.evaluation.model      a strategy raised or chose no branch
    ├── RemoteBranchError                     phi.evaluation.model      a branch elsewhere could not run or report
    │   └── WorkerLost                        phi.evaluation.model      its worker process died before the branch ended
    ├── McpError                              phi.mcp.errors            an MCP session failed (MCP-9)
    │   ├── McpConnectionError                phi.mcp.errors            the server could not be reached
    │   │   └── McpConnectionClosed           phi.mcp.errors            the server exited or closed the connection
    │   ├── McpTimeout                        phi.mcp.errors            a request got no response in time
    │   ├── McpCancelled                      phi.mcp.errors            a request was cancelled
    │   ├── McpProtocolError                  phi.mcp.errors            the server broke the protocol
    │   ├── McpHttpError                      phi.mcp.errors            an HTTP error status
    │   └── McpRpcError                       phi.mcp.errors            a JSON-RPC error object from the server
    ├── OpenApiError                          phi.openapi.config        a document phi cannot turn into tools
    ├── SkillError                            phi.skills.errors         a skill could not be loaded or read
    │   ├── InvalidFrontmatter [ValueError]   phi.skills.errors         no frontmatter, or it is malformed
    │   └── MissingField [ValueError]         phi.skills.errors         name or description is missing
    ├── SessionClosed                         phi.coding.config         input to a closed coding session
    └── StartupFailed                         phi.cli.startup           the phi command could not load what it needs

Beside that tree, the classes on a standard base alone: what the tools' file access raises is an
``OSError`` like any other, and the test utilities and the commands keep their own:

    PermissionError
    ├── ConfinementError                      phi.tools.fs_safe         a write that would leave its allowed root
    └── ProtectedPathError                    phi.tools.sandbox         a file tool's write a sandbox keeps read-only
    OSError
    ├── SandboxError                          phi.tools._sandbox        the launcher could not apply a layer
    ├── FileTooLargeError                     phi.tools.fs_safe         a read or write past its size limit
    ├── NotRegularFileError                   phi.tools.fs_safe         a FIFO, socket or device, not a file
    └── GlobLimitError                        phi.tools.globbing        a glob that matched more than max_entries
    ValueError
    ├── SearchError                           phi.tools.search_backend  rg or grep failed (a bad regex, a timeout)
    ├── ConversionError                       phi.tools.schema          a JSON value that does not fit its type
    └── SchemaError                           phi.conformance.jsoncheck a suite schema the runner cannot check
    ConnectionError
    └── RelayRefused                          phi.evaluation.relay      a remote branch's relay closed the greeting
    Exception
    ├── DriverStartError                      phi.conformance.process   a conformance driver that could not start
    ├── ScriptedFailure                       phi.conformance.scripted  what a fixture's hooks throw when told to
    └── SimulationFailure                     phi.concurrency.simulator a failed simulation: deadlock, crash, ...
    BaseException
    └── SimulationKilled                      phi.concurrency.simulator unwinds a simulated thread once one failed
    KeyboardInterrupt
    ├── Terminated                            phi.cli.batch             SIGTERM as Ctrl-C; the command catches it
    └── Terminated                            phi.conformance.__main__  SIGTERM or SIGHUP as Ctrl-C; caught too

``tests/test_docs_errors.py`` keeps both drawings true: every public exception class phi defines is
drawn, in the module it names, under its first base, with its other bases in brackets.
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
    """For tools and applications to raise: something a tool looks up is not there. phi itself answers
    a call of a tool that is not registered with an error tool result (SPEC TOOL-7), not this."""


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
