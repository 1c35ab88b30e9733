"""The conformance suite as an installable product (SPEC §10, issue 22): the sdist carries what
specifies and tests phi, the wheel carries the suite as package data, and ``phi-conformance``
runs from a fresh virtual environment holding only the wheel, outside the checkout.

The sdist is built with setuptools' PEP 517 backend, the wheel from that sdist with ``pip wheel``
(without build isolation when ``wheel`` is importable here, else pip fetches setuptools and wheel
from the package index). The virtual environment is cached under ``~/.cache/phi-test/`` (or
``$PHI_TEST_CACHE``), keyed by a hash of the wheel's contents, so only a changed package pays for a
new one. Everything is skipped, with the reason, when a build or an install cannot be done here.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from phi.conformance.runner import load_fixtures
from test_conformance_docs import links, suite_pages

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("PHI_TEST_CACHE") or Path.home() / ".cache" / "phi-test")
VENV_PREFIX = "conformance-venv-"


def _run(args: list[str], cwd: Path, timeout: float = 600, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def _skip_unless(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
        pytest.skip(f"cannot {what} here: {tail}")


def _source_copy(target: Path) -> Path:
    """The checkout's files (tracked, or untracked and not ignored) copied to ``target``, so the
    build's egg-info and build/ land outside the repository."""
    listed = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT, timeout=60) \
        if (ROOT / ".git").exists() else None
    if listed is None or listed.returncode != 0:
        shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(".git", ".venv", ".cache", "__pycache__",
                                                                    "build", "dist", "*.egg-info"))
        return target
    for name in filter(None, listed.stdout.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(sdist, wheel) of the checkout."""
    tmp = tmp_path_factory.mktemp("build")
    source, dist = _source_copy(tmp / "src"), tmp / "dist"
    dist.mkdir()
    sdist_done = _run([sys.executable, "-c", "import sys; from setuptools import build_meta as b; "
                       "print(b.build_sdist(sys.argv[1]))", str(dist)], source)
    _skip_unless(sdist_done, "build the sdist with setuptools")
    sdist = dist / sdist_done.stdout.strip().splitlines()[-1]
    isolation = [] if _run([sys.executable, "-c", "import wheel"], tmp).returncode else ["--no-build-isolation"]
    wheel_done = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check",
                       *isolation, "--wheel-dir", str(dist), str(sdist)], tmp)
    _skip_unless(wheel_done, "build the wheel with pip")
    wheels = sorted(dist.glob("*.whl"))
    assert len(wheels) == 1
    return sdist, wheels[0]


def test_the_sdist_holds_the_spec_the_tests_the_docs_and_the_drivers(built: tuple[Path, Path]) -> None:
    sdist, _ = built
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for required in ("SPEC.md", "README.md", "LICENSE", "MANIFEST.in", "pyproject.toml",
                     "conformance/README.md", "conformance/drivers/node-pi/driver.mjs",
                     "tests/test_conformance.py", "tests/test_conformance_install.py", "docs/index.md",
                     "phi/conformance/suite/README.md", "phi/conformance/suite/DRIVERS.md",
                     "phi/conformance/suite/requirements.json", "phi/conformance/suite/schema/fixture.schema.json",
                     "phi/conformance/suite/fixtures/basic-text-reply.json"):
        assert required in names, required
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_wheel_holds_the_suite_as_package_data_and_the_script(built: tuple[Path, Path]) -> None:
    _, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    fixtures = {n for n in names if n.startswith("phi/conformance/suite/fixtures/")}
    assert len(fixtures) == len(load_fixtures())
    for data in ("SPEC.md", "README.md", "DRIVERS.md", "COVERAGE.md", "requirements.json", "schema/fixture.schema.json",
                 "schema/event.schema.json", "blind/README.md"):
        assert f"phi/conformance/suite/{data}" in names, data
    blind = ROOT / "phi" / "conformance" / "suite" / "blind"  # the blind mutant sets and their measurements
    for path in blind.glob("*.json"):
        assert f"phi/conformance/suite/blind/{path.name}" in names, path.name
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("phi/conformance/suite/SPEC.md") == (ROOT / "SPEC.md").read_bytes()
    linked = {(page.parent / target.partition("#")[0]).resolve().relative_to(ROOT).as_posix()
              for page in suite_pages() for target in links(page) if target.partition("#")[0]}
    assert linked and not linked - names, f"the suite's pages link files the wheel lacks: {sorted(linked - names)}"
    assert "phi-conformance = phi.conformance.__main__:main" in entry_points
    assert not [n for n in names if n.startswith(("tests/", "conformance/")) or n == "SPEC.md"]


def _venv_with(wheel: Path) -> Path:
    """A virtual environment with the wheel (and its three dependencies) installed, made once per
    wheel content."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            digest.update(name.encode() + b"\0" + archive.read(name))
    home = CACHE / f"{VENV_PREFIX}{sys.version_info.major}{sys.version_info.minor}-{digest.hexdigest()[:12]}"
    if not (home / ".complete").is_file():
        for old in CACHE.glob(f"{VENV_PREFIX}*"):
            shutil.rmtree(old, ignore_errors=True)
        try:
            venv.EnvBuilder(with_pip=True, clear=True).create(home)
        except (OSError, subprocess.CalledProcessError) as error:
            pytest.skip(f"cannot make a virtual environment: {error}")
        _skip_unless(_run([str(home / "bin" / "python"), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", str(wheel)], CACHE), "install the wheel into a venv")
        (home / ".complete").write_text("ok")
    return home


def _clean_env() -> dict[str, str]:
    """No PYTHONPATH & co.: the venv must find phi in its own site-packages, not in this checkout."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}


def test_phi_conformance_runs_from_a_fresh_venv_outside_the_checkout(built: tuple[Path, Path], tmp_path: Path) -> None:
    home = _venv_with(built[1])
    script, python, env = str(home / "bin" / "phi-conformance"), str(home / "bin" / "python"), _clean_env()
    where = _run([python, "-c", "import phi.conformance as c; print(c.__file__)"], tmp_path, env=env)
    assert where.returncode == 0 and where.stdout.strip().startswith(str(home)), where.stdout + where.stderr

    helped = _run([script, "--help"], tmp_path, env=env)
    assert helped.returncode == 0 and "exit status:" in helped.stdout
    suite = Path(where.stdout.strip()).parent / "suite"
    assert str(suite) in helped.stdout
    spec = _run([script, "spec"], tmp_path, env=env)
    assert spec.returncode == 0 and Path(spec.stdout.strip()) == suite / "SPEC.md", spec.stdout + spec.stderr
    assert (suite / "SPEC.md").read_bytes() == (ROOT / "SPEC.md").read_bytes()

    listed = _run([script, "list"], tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1] == f"{len(load_fixtures())} fixtures"
    tools = [f["id"] for f in load_fixtures() if f["id"].startswith("tool-")]
    listed_tools = _run([script, "run", "--list", "--only", "tool-*"], tmp_path, env=env)
    assert [line.split()[0] for line in listed_tools.stdout.splitlines()[:-1]] == tools

    ran = _run([script, "run", "--only", "tool-*", "--report", "junit.xml", "--report", "report.json"], tmp_path,
               timeout=300, env=env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert ran.stdout.splitlines()[-1] == f"{len(tools)} passed, 0 failed"
    assert "persistent driver" in ran.stdout
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == (str(len(tools)), "0", "0")
    assert sorted(c.get("name") for c in suite.iter("testcase")) == sorted(tools)
    assert json.loads((tmp_path / "report.json").read_text())["counts"]["pass"] == len(tools)

    as_module = _run([python, "-m", "phi.conformance", "run", "--only", "basic-text-reply"], tmp_path, env=env)
    assert as_module.returncode == 0 and as_module.stdout.splitlines()[-1] == "1 passed, 0 failed"
