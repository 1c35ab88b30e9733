"""``phi.tools`` exports stay what they are whatever was imported first.

Loading a submodule sets it as an attribute of its package, so ``phi.tools.apply_patch`` (the
module) could shadow the exported function ``apply_patch`` once something imported the module.
Each order runs in a fresh interpreter: the outcome depends on what was imported before.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ORDERS = {
    "export only": "from phi.tools import apply_patch",
    "submodule first": "import phi.tools.apply_patch\nfrom phi.tools import apply_patch",
    "export first": "from phi.tools import apply_patch\nimport phi.tools.apply_patch\n"
                    "from phi.tools import apply_patch",
    "via coding_tools": "import phi.tools\nphi.tools.coding_tools()\nfrom phi.tools import apply_patch",
    "via phi.coding": "import phi.coding.profile_tools\nfrom phi.tools import apply_patch",
}

CHECK = """
import inspect, sys
import phi.tools
assert inspect.isfunction(apply_patch), apply_patch
assert apply_patch is phi.tools.apply_patch is sys.modules["phi.tools.apply_patch"].apply_patch
from phi.tools.apply_patch import ApplyPatchTool
assert phi.tools.ApplyPatchTool is ApplyPatchTool
print("ok")
"""


@pytest.mark.parametrize("order", list(ORDERS))
def test_apply_patch_export_is_the_function_in_any_import_order(order: str) -> None:
    out = subprocess.run([sys.executable, "-c", ORDERS[order] + CHECK], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_apply_patch_still_runs_as_a_module() -> None:
    """``python -m phi.tools.apply_patch`` is not disturbed (no runpy warning about a pre-imported module)."""
    out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "phi.tools.apply_patch", "-"],
                         cwd=ROOT, input="", capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "RuntimeWarning" not in out.stderr, out.stderr
    assert "Invalid patch" in out.stderr
