"""Built-in tools (SPEC §9)."""
