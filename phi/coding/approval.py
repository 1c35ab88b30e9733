"""The approval gate (SPEC §14 CODE-8; seed 004 §8 "Approval / Permission System", made real; §3.8 between VALIDATE
and EXECUTE).

``SessionConfig.approval`` is a callback that receives an :class:`ApprovalRequest` for every tool
call whose arguments passed validation, just before it runs, and returns ``True``/``False`` or an
:class:`ApprovalDecision` (with a reason the model will read). It runs on the tool's worker thread,
so it may block while a person decides; an abort of the session cancels the call meanwhile.

Ready policies:

* :class:`SmartApproval` — calls that only read (``kind == "read"``) and sub-agent control run
  without asking; writes and commands go to ``ask(request)``.
* plan mode (``SessionConfig(plan_mode=True)``): the session offers only ``read`` tools and its
  environment refuses writes and commands, so nothing can change.
* :func:`allow_all`; :func:`deny_changes` (reads pass, everything else is refused).

A denial becomes the error result ``The <tool> call was denied by the user: <reason> ...``; a
callback that raises, or answers something else than a bool or a decision, denies the call with
the exception as the reason (and is logged).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Union

from ..json_values import is_array
from ..log import get_logger

log = get_logger(__name__)


@dataclass(frozen=True)
class ApprovalRequest:
    """A tool call waiting for approval."""

    session_id: str
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    kind: str  # read | write | execute | agent (phi.coding.registry.TOOL_KINDS)
    #: the directory the call's relative paths are taken from (a sub-agent's may be a subdirectory;
    #: "" when not known): where the permission rules resolve them (phi.coding.permissions)
    working_dir: str = ""

    @property
    def command(self) -> str | None:
        """The command line of a shell call (argv lists joined), else None."""
        command = self.arguments.get("command")
        if is_array(command):
            import shlex

            return shlex.join(str(part) for part in command)
        return command if isinstance(command, str) else None


@dataclass(frozen=True)
class ApprovalDecision:
    """An approval callback's answer with a reason (SPEC CODE-8): ``allowed``, and for a denial the
    ``reason`` the model reads in the call's error result."""

    allowed: bool
    reason: str = ""


#: What an approval callback answers: allowed or not, or a decision with the reason for a denial.
ApprovalAnswer = Union[bool, ApprovalDecision]
#: ``SessionConfig.approval``: called with each validated tool call just before it runs.
ApprovalPolicy = Callable[[ApprovalRequest], ApprovalAnswer]


def decide(policy: ApprovalPolicy, request: ApprovalRequest) -> tuple[bool, str]:
    """Ask ``policy``; returns (allowed, reason)."""
    try:
        # typed as object: a callback written without type checking may answer anything at all
        answer: object = policy(request)
        if isinstance(answer, ApprovalDecision):
            return answer.allowed, answer.reason
        if isinstance(answer, bool):  # pyright: ignore[reportUnnecessaryIsInstance]  # callbacks without a type checker
            return answer, ""
        raise TypeError(f"an approval callback must return a bool or an ApprovalDecision, "
                        f"got {type(answer).__name__}")
    except Exception as error:  # a broken policy must fail closed, and visibly (not as a failed tool)
        log.exception("approval callback failed for %s", request.tool_name)
        return False, f"the approval check failed ({type(error).__name__}: {error})"


@dataclass
class SmartApproval:
    """Reads and sub-agent control pass; writes and commands are asked with ``ask(request)``.

    ``allowed_commands`` lists command lines (exact, after joining argv) that run without asking.
    """

    ask: ApprovalPolicy
    allowed_commands: tuple[str, ...] = field(default=())

    def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        if request.kind in ("read", "agent"):
            return True
        if request.kind == "execute" and request.command is not None and request.command in self.allowed_commands:
            return True
        return self.ask(request)


def allow_all(request: ApprovalRequest) -> bool:
    """The approval policy that lets every call run."""
    return True


def deny_changes(request: ApprovalRequest) -> ApprovalDecision:
    """Reads pass; everything else is refused (plan mode's rule, with every tool still offered)."""
    return ApprovalDecision(request.kind == "read", "" if request.kind == "read" else "no changes are allowed")


__all__ = ["ApprovalRequest", "ApprovalDecision", "ApprovalAnswer", "ApprovalPolicy", "SmartApproval", "allow_all",
           "deny_changes", "decide"]
