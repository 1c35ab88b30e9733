#!/usr/bin/env python3
"""The key of a phi-core build: which sources a cached driver binary was built from (issue 37).

    python3 conformance/drivers/phi-core/cache_key.py [--source DIR] [--rustc PATH]

prints it. ``scripts/install-phi-core`` runs this to name its stamp (``$CACHE/built-<key>``), and
``report.py`` (with ``tests/test_phi_core_report.py``) imports it to use a cached driver only when
the stamp is the key of this checkout: one function, so the two can never disagree.

The key covers every file of phi-core's source, of the offline adaptations (``offline-build/``) and
of the driver crate (``Cargo.toml``, ``src/``), each by its path relative to its tree *and* its
contents (a renamed or an added empty file changes the key), the install script, this file, and
``rustc --version``. Standard library only: the install script runs it with the system's python3.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
#: where the install script looks for phi-core by default (``PHI_CORE_SOURCE`` overrides it)
DEFAULT_SOURCE = ROOT.parent / "shared" / "peers" / "phi-core-0.9.0"
DEFAULT_RUSTC = "/usr/bin/rustc"
KEY_LENGTH = 16


def source_dir() -> Path:
    """phi-core's source: ``PHI_CORE_SOURCE`` or ``../shared/peers/phi-core-0.9.0`` beside the checkout."""
    return Path(os.environ.get("PHI_CORE_SOURCE") or DEFAULT_SOURCE)


def _tree(label: str, root: Path, names: list[str] | None = None) -> list[tuple[str, Path]]:
    """``(label/relative path, path)`` of every file under ``root`` (or under its ``names``), by
    relative path. Symbolic links count as what they point to when that is a file."""
    tops = [root / n for n in names] if names is not None else [root]
    found: list[tuple[str, Path]] = []
    for top in tops:
        if top.is_file():
            found.append((f"{label}/{top.relative_to(root).as_posix()}", top))
            continue
        for folder, _dirs, files in os.walk(top):
            for name in files:
                path = Path(folder) / name
                if path.is_file():
                    found.append((f"{label}/{path.relative_to(root).as_posix()}", path))
    return sorted(found, key=lambda item: item[0])


def rustc_version(rustc: str) -> str:
    """``rustc --version``, or "" when it cannot be run (then the key is no build's)."""
    try:
        return subprocess.run([rustc, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def cache_key(source: Path, rustc: str = DEFAULT_RUSTC) -> str:
    """The key of a build of ``source`` with this checkout's adaptations and driver by ``rustc``."""
    files = (_tree("phi-core", source) + _tree("offline-build", HERE / "offline-build")
             + _tree("driver", HERE, ["Cargo.toml", "src"])
             + [("scripts/install-phi-core", ROOT / "scripts" / "install-phi-core"),
                ("cache_key.py", Path(__file__).resolve())])
    digest = hashlib.sha256()
    for name, path in files:
        data = path.read_bytes()
        # each record says its name and length, so no two different trees give the same stream
        digest.update(f"{name}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
        digest.update(data)
    digest.update(f"rustc\0{rustc_version(rustc)}\0".encode())
    return digest.hexdigest()[:KEY_LENGTH]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--source", type=Path, default=None, help="phi-core's source (default: PHI_CORE_SOURCE or "
                        "../shared/peers/phi-core-0.9.0)")
    parser.add_argument("--rustc", default=DEFAULT_RUSTC, help=f"the compiler (default: {DEFAULT_RUSTC})")
    args = parser.parse_args()
    source = args.source or source_dir()
    if not source.is_dir():
        parser.error(f"phi-core source not found at {source}")
    print(cache_key(source, args.rustc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
