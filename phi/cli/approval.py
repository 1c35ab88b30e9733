"""Approval modes and permission rules of the ``phi`` command (SPEC §15 CLI-5, CLI-9; seed 002
§16.11; ``/approve``).

``on`` asks before every tool call, ``smart`` (the interactive default) lets reads and sub-agent
control pass and asks before writes and commands, ``off`` asks nothing. The permission rules
(:mod:`phi.coding.permissions`) come first, in every mode: a deny rule refuses the call, an ask
rule asks (even with ``off``), an allow rule lets it run; the mode decides the rest. The rules come
from the project's ``.phi/settings.json`` and the user's ``$PHI_HOME/settings.json``
(:func:`load_rules`), and from the answers: "always" adds an allow rule for the rest of the process
(:func:`phi.coding.permissions.suggest_rule`: for a command, its prefix — ``shell "npm test *"``,
a later ``rm`` is still asked about; for any other call, its tool).

Where commands cannot be sandboxed (``unconfined``: the machine offers no sandbox, SPEC §14
CODE-11), every command is asked whatever the mode — ``off`` too — unless a deny rule refuses it or
an "always" answer of this session or a rule of the user's own file allows it (a project file's
allow rules came with the repository, so they do not count then); without anyone to ask it is
refused.

The gate is the session's ``SessionConfig.approval`` callback: it runs on a tool's worker thread
and waits there for the answer, which the terminal's main thread gives (:meth:`ApprovalGate.pending`
/ :meth:`ApprovalGate.answer`). Without anyone to ask (``phi -p``), a call that would be asked is
denied, saying why.

Nothing of the coding layer is imported before the first prompt unless a settings file exists
(SPEC CLI-12): the rules are then read at start, so that a broken file stops ``phi`` before it does
anything.
"""

from __future__ import annotations

import os
import queue
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from ..coding import ApprovalDecision, ApprovalRequest
    from ..coding.permissions import PermissionRule, Verdict
    from .options import CliOptions

#: where the session's own rules (the "always" answers) come from
SESSION = "session"


def _decision(allowed: bool, reason: str = "") -> ApprovalDecision:
    from ..coding import ApprovalDecision

    return ApprovalDecision(allowed, reason)


@dataclass
class Question:
    """One tool call's approval question: asked on the main thread, waited for on the tool's.
    ``asked_by``: the ask rule that made phi ask (then "always" allows this call only)."""

    request: ApprovalRequest
    asked_by: PermissionRule | None = None
    done: threading.Event = field(default_factory=threading.Event)
    decision: ApprovalDecision = field(default_factory=lambda: _decision(False, "no answer"))


class ApprovalGate:
    """``SessionConfig.approval`` for the terminal (see the module docstring). ``rules``: the
    permission rules, first to last (``/approve`` numbers them so); relative globs are rooted at
    ``root``, the workspace."""

    def __init__(self, mode: str = "smart", interactive: bool = True, rules: Sequence[PermissionRule] = (),
                 root: str = ".") -> None:
        self.mode = mode
        self.interactive = interactive
        self.rules: list[PermissionRule] = list(rules)
        self.root = os.path.abspath(root)
        #: commands run unconfined (no sandbox on this machine): every one is asked (module docstring)
        self.unconfined = False
        self._questions: queue.SimpleQueue[Question] = queue.SimpleQueue()

    def verdict(self, request: ApprovalRequest) -> Verdict:
        """What the rules say about ``request`` (deny beats ask beats allow)."""
        from ..coding.permissions import PermissionRules

        return PermissionRules(self.rules, self.root).evaluate(request)

    def _mode_asks(self, request: ApprovalRequest) -> bool:
        return self.mode == "on" or (self.mode == "smart" and request.kind not in ("read", "agent"))

    def _unconfined_asks(self, request: ApprovalRequest, verdict: Verdict) -> bool:
        """An unconfined command the rules do not let through on the person's own word."""
        if not self.unconfined or request.kind != "execute" or verdict.effect == "deny":
            return False
        trusted = verdict.rule is not None and (verdict.rule.source == SESSION or verdict.rule.source.startswith("user"))
        return not (verdict.effect == "allow" and trusted)

    def needs_asking(self, request: ApprovalRequest) -> bool:
        """Whether the call would be asked about (a denied call is not: it is refused outright)."""
        verdict = self.verdict(request)
        if self._unconfined_asks(request, verdict):
            return True
        return verdict.effect == "ask" or (verdict.effect is None and self._mode_asks(request))

    def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        from ..coding.permissions import denial_reason

        verdict = self.verdict(request)
        if verdict.effect == "deny" and verdict.rule is not None:
            return _decision(False, denial_reason(verdict.rule))
        unconfined = self._unconfined_asks(request, verdict)
        if not unconfined and (verdict.effect == "allow" or (verdict.effect is None and not self._mode_asks(request))):
            return _decision(True)
        if unconfined and not self.interactive:
            return _decision(False, "commands cannot be sandboxed on this machine and nobody is here to approve "
                                    "this one (non-interactive run); run with --sandbox full to allow commands "
                                    "unconfined")
        if not self.interactive:
            why = (f"the rule {verdict.rule} asks first" if verdict.rule is not None
                   else f"approval mode {self.mode!r}")
            return _decision(False, f"{why}, and nobody to ask (non-interactive run); "
                                    + ("change the rule to allow it" if verdict.rule is not None
                                       else "run with --approve off to allow it"))
        question = Question(request, verdict.rule if verdict.effect == "ask" else None)
        self._questions.put(question)
        question.done.wait()
        return question.decision

    def pending(self) -> Question | None:
        """The next question waiting for the person, if any (main thread)."""
        try:
            return self._questions.get_nowait()
        except queue.Empty:
            return None

    def always_rule(self, question: Question) -> PermissionRule | None:
        """The rule an "always" answer to ``question`` adds; None when "always" allows this call only:
        an ask rule made phi ask (an allow rule would not outweigh it), or no rule can name the exact
        command (:func:`~phi.coding.permissions.suggest_rule`)."""
        if question.asked_by is not None:
            return None
        from ..coding.permissions import suggest_rule

        return suggest_rule(question.request, SESSION)

    def answer(self, question: Question, reply: str) -> ApprovalDecision:
        """``y``/``yes``, ``a``/``always`` (add :meth:`always_rule`, for this process), else no."""
        reply = reply.strip().lower()
        if reply in ("a", "always"):
            rule = self.always_rule(question)
            if rule is not None:
                self.add(rule)
        allowed = reply in ("y", "yes", "a", "always")
        self._settle(question, _decision(allowed, "" if allowed else "the user said no"))
        return question.decision

    def add(self, rule: PermissionRule) -> bool:
        """Add ``rule`` unless the same rule is there already; whether it was added."""
        if any((r.effect, r.tool, r.pattern) == (rule.effect, rule.tool, rule.pattern) for r in self.rules):
            return False
        self.rules = [*self.rules, rule]  # a new list: a tool thread may be reading the old one
        return True

    def remove(self, number: int) -> PermissionRule:
        """Remove rule ``number`` (1-based, as ``/approve`` lists them); IndexError when there is none."""
        if not 1 <= number <= len(self.rules):
            raise IndexError(number)
        removed = self.rules[number - 1]
        self.rules = [rule for index, rule in enumerate(self.rules) if index != number - 1]
        return removed

    def forget_session_rules(self) -> int:
        """Drop the rules the "always" answers added; how many there were."""
        kept = [rule for rule in self.rules if rule.source != SESSION]
        dropped = len(self.rules) - len(kept)
        self.rules = kept
        return dropped

    def session_rules(self) -> list[PermissionRule]:
        return [rule for rule in self.rules if rule.source == SESSION]

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


def settings_paths(options: CliOptions) -> list[tuple[str, str]]:
    """``(label, path)`` of the settings files the command reads: the project's, then the user's."""
    from .options import home_dir

    project = os.path.join(os.path.abspath(options.cwd), ".phi", "settings.json")
    user = os.path.join(home_dir(), "settings.json")
    shown_user = "~" + user[len(os.path.expanduser("~")):] if user.startswith(os.path.expanduser("~") + os.sep) \
        else user
    files = [(f"project file {os.path.join('.phi', 'settings.json')}", project)]
    if os.path.realpath(user) != os.path.realpath(project):
        files.append((f"user file {shown_user}", user))
    return files


def load_rules(options: CliOptions) -> list[PermissionRule]:
    """The rules of the settings files (:func:`settings_paths`), project first; none, and nothing of the
    coding layer loaded, when neither exists. A broken file raises
    :class:`~phi.coding.permissions.PermissionRuleError` (``phi`` exits 2 with its one line)."""
    present = [(label, path) for label, path in settings_paths(options) if os.path.lexists(path)]
    if not present:
        return []
    from ..coding.permission_settings import read_settings_rules

    from ..coding.permissions import PermissionRuleError
    from ..errors import ConfigError
    from .options import home_dir
    from .trust import is_trusted_content, read_project_file, say_untrusted

    rules: list[PermissionRule] = []
    for label, path in present:
        try:
            content = read_project_file(path)  # read once: what is parsed is what is checked
        except ConfigError as error:
            raise PermissionRuleError(str(error), path) from None
        if content is None:
            continue
        found = read_settings_rules(path, label, content)
        if label.startswith("project") and not is_trusted_content(path, content, home_dir()):
            held_back = [rule for rule in found if rule.effect == "allow"]
            if held_back:  # deny and ask rules only hold back: they apply whatever wrote them
                say_untrusted(os.path.join(".phi", "settings.json"), f"its {len(held_back)} allow rule(s) are not applied")
                found = [rule for rule in found if rule.effect != "allow"]
        rules += found
    return rules


def make_gate(options: CliOptions, mode: str, interactive: bool = True) -> ApprovalGate:
    """The gate for ``options``: ``mode`` and the settings files' rules, rooted at the working directory."""
    return ApprovalGate(mode, interactive, load_rules(options), options.cwd)


def summary(gate: ApprovalGate) -> str:
    """One line: the approval mode and how many rules of each effect, from where (the banner)."""
    if not gate.rules:
        return f"approval {gate.mode} · no permission rules (.phi/settings.json, $PHI_HOME/settings.json)"
    counts = ", ".join(f"{n} {effect}" for effect in ("deny", "ask", "allow")
                       if (n := sum(rule.effect == effect for rule in gate.rules)))
    sources = ", ".join(dict.fromkeys(rule.source.replace(" file ", " ") for rule in gate.rules))
    return f"approval {gate.mode} · permission rules: {counts} ({sources}) · /approve lists them"


def describe(request: ApprovalRequest) -> str:
    """One line saying what a call wants to do."""
    from .render import visible

    command = request.command
    if command:
        return visible(f"{request.tool_name}: {command}")
    from .render import short_arguments

    return f"{request.tool_name}({short_arguments(request.arguments, 100)})"


__all__ = ["ApprovalGate", "Question", "describe", "load_rules", "make_gate", "settings_paths", "summary", "SESSION"]
