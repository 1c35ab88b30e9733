#!/usr/bin/env python3
"""Extract the request-body types of the official Anthropic and Google Gen AI Python SDKs as JSON
Schemas, into tests/fixtures/sdk-schemas/ (see PROVENANCE.md there), so the request bodies phi
builds for those services are checked against the services' own published types, as the OpenAI
bodies are against the OpenAI OpenAPI document.

Run it with a Python that has the SDKs (never phi dependencies), e.g.::

    python3 -m venv /tmp/sdk && /tmp/sdk/bin/pip install anthropic google-genai
    /tmp/sdk/bin/python scripts/tools/extract_sdk_schemas.py

* ``anthropic-messages.schema.json``: ``anthropic.types.MessageCreateParamsStreaming`` (the body of
  ``POST /v1/messages`` with ``stream: true``), by pydantic's ``TypeAdapter(...).json_schema()``.
  One change: every object gets ``additionalProperties: false``, because the SDK's ``TypedDict``s
  are closed (a type checker refuses an unknown key; the API answers 400 "Extra inputs are not
  permitted"). Added under ``$defs``: ``BetaCompactionBlockParam`` (``anthropic.types.beta``), the
  compaction block a reply may carry and the next request must send back.
* ``gemini-request.schema.json``: the REST field names (camelCase, ``by_alias``) of
  ``google.genai.types`` ``Content``, ``Tool``, ``ToolConfig`` and ``GenerationConfig`` (the parts
  of ``GenerateContentRequest``: ``contents``, ``tools``, ``toolConfig``, ``generationConfig``) and
  ``Content`` again for ``systemInstruction``. The SDK's models already forbid unknown fields.

Documentation keywords (``description``, ``title``, ``default``) are dropped from both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "sdk-schemas"
_DOCS = {"description", "title", "default"}


def constraints_only(node: Any, in_properties: bool = False) -> Any:
    """The schema without documentation keywords (property *names* are kept, even "title")."""
    if isinstance(node, dict):
        return {k: constraints_only(v, k == "properties" and not in_properties) for k, v in node.items()
                if in_properties or k not in _DOCS}
    if isinstance(node, list):
        return [constraints_only(v) for v in node]
    return node


def closed(node: Any) -> Any:
    """Every object schema with properties gets ``additionalProperties: false`` (TypedDicts are closed)."""
    if isinstance(node, dict):
        out = {k: closed(v) for k, v in node.items()}
        if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [closed(v) for v in node]
    return node


def anthropic_schema() -> dict[str, Any]:
    import anthropic
    from anthropic.types import message_create_params
    from pydantic import TypeAdapter

    schema = TypeAdapter(message_create_params.MessageCreateParamsStreaming).json_schema()
    # The beta compaction block (context management) that replies may carry and requests must
    # send back verbatim: its type, under $defs, for the opaque-block tests.
    from anthropic.types.beta import BetaCompactionBlockParam

    beta = TypeAdapter(BetaCompactionBlockParam).json_schema(ref_template="#/$defs/{model}")
    schema["$defs"].update(beta.pop("$defs", {}))
    schema["$defs"]["BetaCompactionBlockParam"] = beta
    schema = closed(constraints_only(schema))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$comment": f"anthropic {anthropic.__version__}: MessageCreateParamsStreaming (scripts/tools/"
                        "extract_sdk_schemas.py)", **schema}


def gemini_schema() -> dict[str, Any]:
    from google.genai import types, version
    from pydantic.json_schema import models_json_schema

    models = [(types.Content, "validation"), (types.Tool, "validation"), (types.ToolConfig, "validation"),
              (types.GenerationConfig, "validation")]
    _, top = models_json_schema(models, by_alias=True, ref_template="#/$defs/{model}")
    defs = constraints_only(top["$defs"])
    content = {"$ref": "#/$defs/Content"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": f"google-genai {version.__version__}: the GenerateContentRequest parts "
                    "(scripts/tools/extract_sdk_schemas.py)",
        "type": "object",
        "properties": {"contents": {"type": "array", "items": content}, "systemInstruction": content,
                       "tools": {"type": "array", "items": {"$ref": "#/$defs/Tool"}},
                       "toolConfig": {"$ref": "#/$defs/ToolConfig"},
                       "generationConfig": {"$ref": "#/$defs/GenerationConfig"}},
        "required": ["contents"],
        "additionalProperties": False,
        "$defs": defs,
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, schema in (("anthropic-messages.schema.json", anthropic_schema()),
                         ("gemini-request.schema.json", gemini_schema())):
        (OUT / name).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
