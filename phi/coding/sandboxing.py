"""The coding layer's command sandbox (SPEC §14 CODE-11, over §9.1 "Sandbox").

A session whose environment is (or wraps) a :class:`~phi.tools.environment.LocalExecutionEnvironment`
which did not choose a sandbox gives it ``SessionConfig.sandbox`` (``workspace-write`` by default).
Where this machine cannot keep a sandboxed policy (:func:`~phi.tools.sandbox.sandbox_status`), such
an environment runs commands unconfined instead and every command must be approved (one that chose
its sandbox itself keeps it, and its commands fail with ``SandboxUnavailable``): the session's approval callback is
asked (whatever it answers for other calls), and without one commands are refused, saying why. This
is logged once and shown by :meth:`CommandSandbox.describe` (``phi`` puts it in its banner).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..log import get_logger
from ..tools.environment import ExecutionEnvironment, LocalExecutionEnvironment
from ..tools.sandbox import (
    SandboxPolicy, SandboxStatus, SandboxUnavailable, as_policy, describe_protection, sandbox_status,
)

log = get_logger(__name__)


@dataclass(frozen=True)
class CommandSandbox:
    """What protects a session's commands: the ``policy`` asked for and, for a local environment, the
    machine's ``status`` (None: the environment runs commands elsewhere and sandboxes them itself, or
    not)."""

    policy: SandboxPolicy
    status: SandboxStatus | None
    reason: str = ""  # why the policy cannot be kept here although the kernel could (see choose_sandbox)

    @property
    def unconfined(self) -> bool:
        """A sandbox was asked for and this machine cannot keep it: every command needs approval."""
        return self.policy.sandboxed and self.status is not None and (not self.status.available or bool(self.reason))

    def describe(self) -> str:
        """One line for a banner or ``/status``."""
        if self.status is None:
            return "not managed by phi (the environment runs commands itself)"
        if self.reason:
            return f"{self.policy.mode} asked for, but {self.reason}: commands run unconfined and every one is asked"
        return describe_protection(self.policy, self.status)


def local_environment(env: ExecutionEnvironment) -> LocalExecutionEnvironment | None:
    """The :class:`LocalExecutionEnvironment` ``env`` is or wraps (``ScopedEnvironment``,
    ``ReadOnlyEnvironment``, ``LoggingEnvironment``... all keep it as ``inner``), if any."""
    seen = 0
    current: object = env
    while not isinstance(current, LocalExecutionEnvironment) and seen < 16:
        current = getattr(current, "inner", None)
        seen += 1
    return current if isinstance(current, LocalExecutionEnvironment) else None


def helper_sandbox(env: ExecutionEnvironment) -> str | None:
    """Where phi's own commands (``git`` for the prompt) run for ``env``: the launcher's read-only
    instructions, or None (no sandbox asked for); raises ``SandboxUnavailable`` when one was asked
    for and cannot be kept."""
    local = local_environment(env)
    return local.helper_sandbox() if local is not None else None


def choose_sandbox(env: ExecutionEnvironment, setting: SandboxPolicy | str | None) -> CommandSandbox:
    """Give ``env`` the session's sandbox unless it chose its own, and fall back as the module says."""
    local = local_environment(env)
    if local is None:
        return CommandSandbox(as_policy(None), None)
    chosen = local.sandbox_chosen
    if not chosen:
        local.sandbox = as_policy(setting)
        # the first session decides: a second one sharing the environment must not loosen it
        local.sandbox_chosen = True
    policy = local.sandbox
    if not policy.sandboxed:
        return CommandSandbox(policy, sandbox_status())
    status = sandbox_status()
    reason = ""
    if status.available:
        try:
            local.sandbox_spec()  # e.g. the interpreter lies inside the workspace: no policy can be kept
        except SandboxUnavailable as exc:
            reason = str(exc)
            log.warning("%s; commands run unconfined and each needs approval", reason)
    sandbox = CommandSandbox(policy, status, reason)
    if sandbox.unconfined and not chosen:  # sandbox_status() or the line above has warned
        log.info("%s sandbox asked for but not kept here: commands run unconfined and each needs approval",
                 policy.mode)
        local.sandbox = SandboxPolicy("full")  # each command is approved instead (see the pipeline)
    return sandbox


__all__ = ["CommandSandbox", "choose_sandbox", "helper_sandbox", "local_environment"]
