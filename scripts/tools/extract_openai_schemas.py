#!/usr/bin/env python3
"""Extract the request-body schemas phi's OpenAI providers must satisfy from the official OpenAI
OpenAPI document, into tests/fixtures/openapi/openai-requests.schema.json (see PROVENANCE.md there).

Usage: python3 scripts/tools/extract_openai_schemas.py path/to/openapi.json [commit]

Keeps ``CreateResponse`` and ``CreateChatCompletionRequest`` with every schema they reference, as
one JSON Schema (draft 2020-12) whose ``$defs`` are the spec's ``components/schemas``. One change:
``oneOf`` becomes ``anyOf``. The spec's unions overlap (a user message matches both
``EasyInputMessage`` and ``InputMessage``) and rely on OpenAPI discriminators, which JSON Schema
validators do not apply; the SDKs (and servers built on their types, like vLLM) accept a value
that matches any member, which is what ``anyOf`` checks. Documentation keywords (``description``,
``title``, examples, ``x-…`` vendor extensions) are dropped: only the constraints are kept.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOTS = ("CreateResponse", "CreateChatCompletionRequest")
OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "openapi" / "openai-requests.schema.json"


def closure(schemas: dict, roots: tuple[str, ...]) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        pending = [schemas[name]]
        while pending:
            node = pending.pop()
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                    stack.append(ref.rsplit("/", 1)[1])
                pending.extend(node.values())
            elif isinstance(node, list):
                pending.extend(node)
    return seen


_DOCS = {"description", "title", "example", "examples", "externalDocs"}


def constraints_only(node: object, in_properties: bool = False) -> object:
    """The schema without documentation keywords (property *names* are kept, even "description")."""
    if isinstance(node, dict):
        return {k: constraints_only(v, k == "properties" and not in_properties) for k, v in node.items()
                if in_properties or not (k in _DOCS or k.startswith("x-"))}
    if isinstance(node, list):
        return [constraints_only(v) for v in node]
    return node


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    schemas = spec["components"]["schemas"]
    keep = {name: constraints_only(schemas[name]) for name in sorted(closure(schemas, ROOTS))}
    text = json.dumps(keep, sort_keys=True).replace('"#/components/schemas/', '"#/$defs/').replace('"oneOf":', '"anyOf":')
    document = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                "$comment": f"extracted from openai/openai-openapi openapi.json (info.version "
                            f"{spec['info']['version']}{', commit ' + sys.argv[2] if len(sys.argv) > 2 else ''}); "
                            "oneOf relaxed to anyOf; see PROVENANCE.md",
                "$defs": json.loads(text)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(keep)} schemas -> {OUT}")


if __name__ == "__main__":
    main()
