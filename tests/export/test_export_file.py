"""The exported file: written whole or not at all, readable by its owner only (phi/export/html.py)."""

from __future__ import annotations

import os
import stat

import pytest

from phi.export.html import export_session_html
from phi.session import NotFound


def test_file_is_replaced_atomically_and_private(recorded, tmp_path):
    out = tmp_path / "page.html"
    out.write_text("old page")
    export_session_html(recorded.store, recorded.session_id, out)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]  # no temp file left


def test_a_failed_export_leaves_the_old_file(recorded, tmp_path):
    out = tmp_path / "page.html"
    out.write_text("old page")
    with pytest.raises(NotFound):
        export_session_html(recorded.store, "missing-id", out)
    assert out.read_text() == "old page" and os.listdir(tmp_path) == ["page.html"]
