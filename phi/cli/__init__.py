"""SPEC §15 — the ``phi`` command: a coding assistant in the terminal, and its script modes.

- :mod:`.main` — ``main(argv)``: the subcommands and the choice between the modes below.
- :mod:`.options` — options, and the coding profile they choose; :mod:`.offline` — ``--offline``.
- :mod:`.repl` — the interactive session; :mod:`.render` — what it shows; :mod:`.commands` — slash
  commands, typed against :mod:`.repl_state` (what they may use of the REPL, which imports them);
  :mod:`.approval` — approval modes.
- :mod:`.batch` — ``phi -p``; :mod:`.json_mode` — ``phi --json``; :mod:`.sessions` — saving and resuming.
- :mod:`.demo` — ``phi demo`` (``scripts/demo``).

A leaf: nothing else in phi imports it; a vendored copy may delete the folder.
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
