#!/usr/bin/env python3
"""OpenAPI load time (issue 12): how long ``phi.openapi.from_file`` takes to turn a large real
document into tools (target: under 1 s for the 3.4 MB OpenAI document in
tests/fixtures/openapi/openai-openapi.json, 288 operations, 1,422 component schemas), split into
parsing and building, plus the import of ``phi.openapi`` and the sizes of the tool schemas.

Each figure is the best of ``--repeat`` runs (a fresh process would add the import once).
Prints one line per figure; the last line is one JSON object with all of them.
Benchmarks report, they never judge.

Usage: python3 scripts/bench/openapi_load.py [--spec PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DEFAULT_SPEC = ROOT / "tests" / "fixtures" / "openapi" / "openai-openapi.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    logging.getLogger("phi.openapi").setLevel(logging.ERROR)  # the skipped multipart operations

    started = time.perf_counter()
    from phi.openapi import OpenApiConfig, OperationFilter, from_file
    from phi.openapi.document import parse_document
    from phi.openapi.operations import build_operations
    import_s = time.perf_counter() - started

    text = options.spec.read_text(encoding="utf-8")
    loads, parses, builds = [], [], []
    tools: list = []
    for _ in range(options.repeat):
        t0 = time.perf_counter()
        tools = from_file(options.spec)
        loads.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        document = parse_document(text, str(options.spec))
        parses.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        build_operations(document, OpenApiConfig(), OperationFilter.all(), None)
        builds.append(time.perf_counter() - t0)

    sizes = [len(json.dumps(t.parameters, separators=(",", ":"))) for t in tools]
    figures = {
        "spec": options.spec.name,
        "spec_bytes": options.spec.stat().st_size,
        "tools": len(tools),
        "import_phi_openapi_ms": round(import_s * 1000, 1),
        "load_ms": round(min(loads) * 1000, 1),
        "parse_ms": round(min(parses) * 1000, 1),
        "build_ms": round(min(builds) * 1000, 1),
        "schema_bytes_median": int(statistics.median(sizes)) if sizes else 0,
        "schema_bytes_max": max(sizes, default=0),
        "schema_bytes_total": sum(sizes),
    }
    print(f"{options.spec.name}: {figures['spec_bytes'] / 1e6:.1f} MB, {len(tools)} tools")
    print(f"import phi.openapi: {figures['import_phi_openapi_ms']} ms")
    print(f"from_file (best of {options.repeat}): {figures['load_ms']} ms "
          f"(parse {figures['parse_ms']} ms, build {figures['build_ms']} ms); target under 1000 ms")
    print(f"tool schemas: median {figures['schema_bytes_median']} B, max {figures['schema_bytes_max']} B, "
          f"total {figures['schema_bytes_total']} B")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
