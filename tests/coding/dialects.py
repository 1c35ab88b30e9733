"""How each profile's model calls the tools (the reference agents' parameter names), and a session
wired to a :class:`~wire.ScriptedModelServer` over that profile's real protocol."""

from __future__ import annotations

from typing import Any

from phi.coding import Session, SessionConfig, create_profile
from phi.tools import LocalExecutionEnvironment

from .wire import Call

PROFILES = ("openai", "anthropic", "gemini")
BASE_PATHS = {"openai": "/v1", "anthropic": "", "gemini": "/v1beta"}
MODELS = {"openai": "gpt-5.2-codex", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-pro"}


def session_for(profile_id: str, server: Any, workdir: str, config: SessionConfig | None = None,
                **profile_kwargs: Any) -> Session:
    profile = create_profile(profile_id, MODELS[profile_id], api_key=f"test-key-{profile_id}",
                             base_url=server.url + BASE_PATHS[profile_id], **profile_kwargs)
    return Session(profile, LocalExecutionEnvironment(workdir), config or SessionConfig())


class Dialect:
    """Tool calls as a model of ``profile_id`` writes them."""

    def __init__(self, profile_id: str) -> None:
        self.id = profile_id

    def create(self, path: str, content: str) -> Call:
        if self.id == "openai":  # codex creates files with apply_patch
            body = "".join(f"+{line}\n" for line in content.splitlines())
            return Call("apply_patch", {"input": f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch"})
        return Call("write_file", {"file_path": path, "content": content})

    def read(self, path: str, **extra: Any) -> Call:
        return Call("read_file", {"file_path": path, **extra})

    def edit(self, path: str, old: str, new: str) -> Call:
        """The profile's native edit format."""
        if self.id == "openai":
            removed = "".join(f"-{line}\n" for line in old.splitlines())
            added = "".join(f"+{line}\n" for line in new.splitlines())
            patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n{removed}{added}*** End Patch"
            return Call("apply_patch", {"input": patch})
        return Call("edit_file", {"file_path": path, "old_string": old, "new_string": new})

    def shell(self, command: str, timeout_ms: int | None = None) -> Call:
        if self.id == "openai":
            args: dict[str, Any] = {"command": ["bash", "-lc", command]}
            if timeout_ms:
                args["timeout_ms"] = timeout_ms
        elif self.id == "anthropic":
            args = {"command": command, "description": "run a command"}
            if timeout_ms:
                args["timeout"] = timeout_ms
        else:
            args = {"command": command, "description": "run a command"}
            if timeout_ms:
                args["timeout_ms"] = timeout_ms
        return Call("shell", args)

    def grep(self, pattern: str) -> Call:
        if self.id == "openai":
            return Call("grep", {"pattern": pattern, "include": "*.py"})
        if self.id == "anthropic":
            return Call("grep", {"pattern": pattern, "glob": "*.py", "output_mode": "content"})
        return Call("grep", {"pattern": pattern, "include": "*.py"})

    def glob(self, pattern: str) -> Call:
        return Call("glob", {"pattern": pattern})

    def spawn(self, task: str, working_dir: str | None = None) -> Call:
        args = {"task": task}
        if working_dir:
            args["working_dir"] = working_dir
        return Call("spawn_agent", args)
