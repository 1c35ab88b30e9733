import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from export_helpers import SECRET, record_session  # noqa: E402


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One real recorded session shared by a module's tests (recording takes a moment)."""
    return record_session(tmp_path_factory.mktemp("export"))


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return SECRET
