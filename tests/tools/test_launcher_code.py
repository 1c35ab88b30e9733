"""Where the sandboxed launcher's code comes from (SPEC §9.1 "Sandbox"): the compiled copy beside its
source while it matches, never one under a PYTHONPYCACHEPREFIX (which may lie where sandboxed
commands write), and the source itself when the compiled copy is unreadable."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import struct
import sys

from phi.tools import process


def test_a_compiled_copy_under_a_pycache_prefix_is_never_taken(tmp_path, monkeypatch):
    source = os.path.join(process._REAPER_DIR, "_sandbox.py")
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    planted = importlib.util.cache_from_source(source)
    assert planted.startswith(str(tmp_path))
    # a module doing nothing, with a header that matches the real source's mtime and size
    fake = tmp_path / "fake.py"
    fake.write_text("PLANTED = True\ndef apply(spec_text):\n    pass\n")
    os.makedirs(os.path.dirname(planted))
    py_compile.compile(str(fake), cfile=planted, doraise=True)
    stat = os.stat(source)
    with open(planted, "r+b") as handle:
        handle.seek(8)
        handle.write(struct.pack("<II", int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF))
    from importlib.machinery import SourceFileLoader

    taken_by_an_import = SourceFileLoader("_sandbox", source).get_code("_sandbox")
    assert taken_by_an_import is not None and "PLANTED" in taken_by_an_import.co_names  # the plant is real
    code = process._launcher_code("_sandbox")
    assert "PLANTED" not in code.co_names and "landlock_abi" in code.co_names


def test_an_unreadable_compiled_copy_falls_back_to_the_source(monkeypatch):
    from importlib.machinery import SourceFileLoader

    def garbled(self, fullname):
        raise ValueError("bad marshal data (unknown type code)")

    monkeypatch.setattr(SourceFileLoader, "get_code", garbled)
    code = process._launcher_code("_reaper")
    assert "run" in code.co_names and code.co_filename.endswith("_reaper.py")
