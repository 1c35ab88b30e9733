"""SPEC §16 — session export: a recorded session as one self-contained HTML page.

- :mod:`.html` — the page (EXPORT-1..3); :mod:`.assets` — its inline style and script.
- :mod:`.tree` — the session and every sub-agent session it reaches; :mod:`.diff` — edits as diffs.
- secrets are replaced on the page by :mod:`phi.tools.redact` (EXPORT-4).
- :mod:`.command` — ``phi export SESSION_ID --html FILE`` (EXPORT-5).

A leaf: nothing else in phi imports it; a vendored copy may delete the folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .html import export_session_html, render_html

__all__ = ["export_session_html", "render_html"]

if not TYPE_CHECKING:  # checkers see the imports above, so a misspelt name stays an error for them
    from ..lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
