#!/usr/bin/env python3
"""The provider fuzz and differential runs at full size (the test suite runs a slice of each).

* ``eventstream``: random AWS event-stream streams (valid, bit-flipped, truncated, with garbage or
  duplicate headers) split at random, decoded by phi and by botocore's ``EventStreamBuffer``: the
  same messages before the first failure, and a failure exactly when botocore fails.
* ``sigv4``: random Bedrock URLs (upper-case hosts, ``:443``, user-info, ``//``, ``.``/``..``,
  ``%2E%2E``, queries) signed by phi and by botocore's ``SigV4Auth``: the same Authorization, and
  the URL is exactly what ``requests`` sends.
* ``hostile``: mutated real recordings through every parser: a ProviderError, or a message that
  round-trips through strict JSON and ``message_from_json``.

Needs the test extra (botocore): ``bash scripts/test -q tests/providers`` once creates ``.venv``.
Prints the counts per run; the last line is one JSON object. Exits 1 on any mismatch.

Usage: .venv/bin/python scripts/fuzz/provider_differential.py [--streams N] [--urls N] [--variants N]
                                                              [--seed S]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from providers.hostile import check_variant, chunks_of, encode, events_of, mutate, recordings  # noqa: E402
from providers.references import (  # noqa: E402
    botocore_authorization,
    botocore_frames,
    phi_frames,
    random_base_url,
    random_eventstream,
    random_query,
)


def run_eventstream(rng: random.Random, count: int) -> dict[str, int]:
    mismatches = failures = 0
    for case in range(count):
        _, chunks = random_eventstream(rng)
        want = botocore_frames(chunks)
        if phi_frames(chunks) != want:
            mismatches += 1
            print(f"eventstream mismatch in case {case}", flush=True)
        failures += want[1]
    return {"streams": count, "corrupt_streams": failures, "mismatches": mismatches}


def run_sigv4(rng: random.Random, count: int) -> dict[str, int]:
    from urllib.parse import urlsplit

    from phi.providers import bedrock
    from phi.providers.http import prepared_url
    from phi.providers.sigv4 import AwsCredentials, host_header, sign

    mismatches = 0
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    for case in range(count):
        creds = AwsCredentials("AKID" + str(case), f"secret/{case}+key", "token" if case % 2 else None)
        base = random_base_url(rng, rng.choice(["https", "http"]), "bedrock-runtime.eu-west-1.amazonaws.com",
                               rng.choice([None, 443, 80, 8443]))
        query = random_query(rng)
        url = bedrock.request_url(base.rstrip("/") + "/model/m%3A0/converse-stream" + ("?" + query if query else ""))
        body = json.dumps({"case": case}).encode()
        headers = sign("POST", url, {"content-type": "application/json"}, body, creds, "eu-west-1", "bedrock", when)
        want = botocore_authorization("POST", url, headers, body, creds.access_key, creds.secret_key,
                                      creds.session_token, "eu-west-1", "bedrock", headers["x-amz-date"])
        wire_ok = prepared_url(url) == url and host_header(url) == urlsplit(url).netloc
        if headers["authorization"] != want or not wire_ok:
            mismatches += 1
            print(f"sigv4 mismatch in case {case}: {base} -> {url}", flush=True)
    return {"urls": count, "mismatches": mismatches}


def run_hostile(rng: random.Random, count: int) -> dict[str, int]:
    names = recordings()
    decoded = {name: events_of(name) for name in names}
    outcomes = {"message": 0, "error": 0, "violations": 0}
    for case in range(count):
        name = names[case % len(names)]
        body = encode(mutate(rng, decoded[name]))
        try:
            outcomes[check_variant(name, body, chunks_of(rng, body, (1, 7, 64, 4096, 1 << 20)))] += 1
        except Exception as exc:  # a rule breach: report it, keep going
            outcomes["violations"] += 1
            print(f"hostile variant {case} of {name}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    return {"variants": count, **outcomes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=3300)
    parser.add_argument("--urls", type=int, default=1000)
    parser.add_argument("--variants", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=10)
    args = parser.parse_args()
    figures: dict[str, object] = {"seed": args.seed}
    for name, run, count in (("eventstream", run_eventstream, args.streams), ("sigv4", run_sigv4, args.urls),
                             ("hostile", run_hostile, args.variants)):
        start = time.perf_counter()
        result = run(random.Random(f"{args.seed}-{name}"), count)
        result["seconds"] = round(time.perf_counter() - start, 1)
        figures[name] = result
        print(f"{name:12s} {result}", flush=True)
    print(json.dumps(figures))
    bad = sum(figures[k].get("mismatches", 0) + figures[k].get("violations", 0)  # type: ignore[union-attr]
              for k in ("eventstream", "sigv4", "hostile"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
