"""Approval modes of the ``phi`` command (SPEC §15 CLI-5; seed 002 §16.11;
``/approve on|smart|off``).

``on`` asks before every tool call, ``smart`` (the interactive default) lets reads and sub-agent
control pass and asks before writes and commands, ``off`` asks nothing. Answering "always" adds a
rule for the rest of the process (:func:`rule_for`): for a command, that command exactly
(``shell "npm test"``: a later ``rm`` is still asked about); for any other call, its tool. The gate
is the session's ``SessionConfig.approval`` callback: it runs on a tool's worker thread and waits
there for the answer, which the terminal's main thread gives (:meth:`ApprovalGate.pending` /
:meth:`ApprovalGate.answer`). Without anyone to ask (``phi -p``), a call that would be asked is
denied, saying why.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..coding import ApprovalDecision, ApprovalRequest


def _decision(allowed: bool, reason: str = "") -> ApprovalDecision:
    from ..coding import ApprovalDecision

    return ApprovalDecision(allowed, reason)


@dataclass
class Question:
    """One tool call's approval question: asked on the main thread, waited for on the tool's."""

    request: ApprovalRequest
    done: threading.Event = field(default_factory=threading.Event)
    decision: ApprovalDecision = field(default_factory=lambda: _decision(False, "no answer"))


class ApprovalGate:
    """``SessionConfig.approval`` for the terminal (see the module docstring)."""

    def __init__(self, mode: str = "smart", interactive: bool = True) -> None:
        self.mode = mode
        self.interactive = interactive
        self.trusted: set[str] = set()  # the "always" rules: rule_for() of the calls answered "a"
        self._questions: queue.SimpleQueue[Question] = queue.SimpleQueue()

    def needs_asking(self, request: ApprovalRequest) -> bool:
        if self.mode == "off" or rule_for(request) in self.trusted:
            return False
        return self.mode == "on" or request.kind not in ("read", "agent")

    def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        if not self.needs_asking(request):
            return _decision(True)
        if not self.interactive:
            return _decision(False, f"approval mode {self.mode!r} and nobody to ask (non-interactive run); "
                                           "run with --approve off to allow it")
        question = Question(request)
        self._questions.put(question)
        question.done.wait()
        return question.decision

    def pending(self) -> Question | None:
        """The next question waiting for the person, if any (main thread)."""
        try:
            return self._questions.get_nowait()
        except queue.Empty:
            return None

    def answer(self, question: Question, reply: str) -> ApprovalDecision:
        """``y``/``yes``, ``a``/``always`` (add :func:`rule_for` the call, for this process), else no."""
        reply = reply.strip().lower()
        if reply in ("a", "always"):
            self.trusted.add(rule_for(question.request))
        allowed = reply in ("y", "yes", "a", "always")
        self._settle(question, _decision(allowed, "" if allowed else "the user said no"))
        return question.decision

    def deny_all(self, reason: str) -> None:
        """Deny every open question (the turn was aborted)."""
        while True:
            question = self.pending()
            if question is None:
                break
            self._settle(question, _decision(False, reason))

    def _settle(self, question: Question, decision: ApprovalDecision) -> None:
        question.decision = decision
        question.done.set()


def rule_for(request: ApprovalRequest) -> str:
    """The "always" rule a call's ``a`` answer adds: ``shell "git status"`` for a command — that exact
    command, spaces evened out, so trusting ``echo hi`` trusts no other command — or the tool's name
    for any other call."""
    command = " ".join(request.command.split()) if request.command else ""
    return f'{request.tool_name} "{command}"' if command else request.tool_name


def describe(request: ApprovalRequest) -> str:
    """One line saying what a call wants to do."""
    command = request.command
    if command:
        return f"{request.tool_name}: {command}"
    from .render import short_arguments

    return f"{request.tool_name}({short_arguments(request.arguments, 100)})"


__all__ = ["ApprovalGate", "Question", "describe", "rule_for"]
