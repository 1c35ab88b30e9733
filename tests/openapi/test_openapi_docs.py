"""docs/openapi.md's getting-started example works when copied: it is run as written, with the
public Petstore's address pointed at the local server (which serves the real Petstore 3.0 document
and answers its calls)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

from openapi_helpers import FIXTURES, Reply

DOC = Path(__file__).resolve().parents[2] / "docs" / "openapi.md"
PETSTORE = "https://petstore3.swagger.io/api/v3"


def getting_started_code() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Getting started", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_getting_started_runs_as_written(api):
    code = getting_started_code()
    assert PETSTORE in code
    spec = (FIXTURES / "swagger-petstore-3.0.yaml").read_bytes()
    pets = [{"id": 1, "name": "rex", "photoUrls": [], "status": "available"}]

    def reply(request):
        if request.path == "/api/v3/openapi.json":
            return Reply(body=spec, content_type="application/yaml")
        if request.path == "/api/v3/pet/findByStatus":
            return Reply(body=json.dumps(pets).encode())
        return Reply(status=404, body=b"{}")

    api.reply = reply
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace(PETSTORE, api.url + "/api/v3"), str(DOC), "exec"), {"__name__": "__doc__"})
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("['updatePet', 'addPet', 'findPetsByStatus',")
    assert lines[1] == f"GET {api.url}/api/v3/pet/findByStatus?status=available → 200"
    assert lines[3] == json.dumps(pets)
    assert lines[-1] == "Here are the available pets."
    assert [r.target for r in api.requests] == ["/api/v3/openapi.json", "/api/v3/pet/findByStatus?status=available"]
