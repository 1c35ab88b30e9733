"""The coding layer's command sandbox (SPEC §14 CODE-11, over §9.1 "Sandbox").

A session that owns a :class:`~phi.tools.environment.LocalExecutionEnvironment` which did not choose
a sandbox gives it ``SessionConfig.sandbox`` (``workspace-write`` by default). Where this machine
cannot keep a sandboxed policy (:func:`~phi.tools.sandbox.sandbox_status`), the environment runs
commands unconfined instead and every command must be approved: the session's approval callback is
asked (whatever it answers for other calls), and without one commands are refused, saying why. This
is logged once and shown by :meth:`CommandSandbox.describe` (``phi`` puts it in its banner).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..log import get_logger
from ..tools.environment import ExecutionEnvironment, LocalExecutionEnvironment
from ..tools.sandbox import SandboxPolicy, SandboxStatus, as_policy, sandbox_status

log = get_logger(__name__)


@dataclass(frozen=True)
class CommandSandbox:
    """What protects a session's commands: the ``policy`` asked for and, for a local environment, the
    machine's ``status`` (None: the environment runs commands elsewhere and sandboxes them itself, or
    not)."""

    policy: SandboxPolicy
    status: SandboxStatus | None

    @property
    def unconfined(self) -> bool:
        """A sandbox was asked for and this machine cannot keep it: every command needs approval."""
        return self.policy.sandboxed and self.status is not None and not self.status.available

    def describe(self) -> str:
        """One line for a banner or ``/status``."""
        if self.status is None:
            return "not managed by phi (the environment runs commands itself)"
        if self.unconfined:
            return (f"{self.policy.mode} asked for, but {self.status.describe()}: "
                    "commands run unconfined and every one is asked")
        if not self.policy.sandboxed:
            return self.policy.describe()
        return f"{self.policy.describe()} ({self.status.describe()})"


def choose_sandbox(env: ExecutionEnvironment, setting: SandboxPolicy | str | None) -> CommandSandbox:
    """Give ``env`` the session's sandbox unless it chose its own, and fall back as the module says."""
    if not isinstance(env, LocalExecutionEnvironment):
        return CommandSandbox(as_policy(None), None)
    if not env.sandbox_chosen:
        env.sandbox = as_policy(setting)
    policy = env.sandbox
    if not policy.sandboxed:
        return CommandSandbox(policy, sandbox_status())
    status = sandbox_status()
    if not status.available:  # sandbox_status() has warned, once per process
        log.info("%s sandbox asked for but %s: commands run unconfined and each needs approval",
                 policy.mode, status.describe())
        env.sandbox = SandboxPolicy("full")  # each command is approved instead (see the pipeline)
    return CommandSandbox(policy, status)


__all__ = ["CommandSandbox", "choose_sandbox"]
