"""Fixtures of the OpenAPI adapter tests (helpers live in openapi_helpers.py)."""

from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from openapi_helpers import ApiServer  # noqa: E402


@pytest.fixture
def api() -> Iterator[ApiServer]:
    server = ApiServer()
    yield server
    server.close()
