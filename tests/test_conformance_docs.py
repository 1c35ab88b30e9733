"""The conformance kit's documents are true for a reader who has only the installed package (SPEC §10,
issue 32): the suite ships SPEC.md, every link of its pages resolves inside the package, no page
states a fixture count other than the real one, and what the driver guide says about error names
and timestamps is what the fixtures and the event schema hold."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest

from phi.conformance import __main__ as cli
from phi.conformance import coverage, default_conformance_dir, spec_file
from phi.conformance.runner import load_fixtures
from test_docs_links import anchors, links

SUITE = default_conformance_dir()
PACKAGE = SUITE.parent  # phi/conformance: what the wheel holds of it is its modules and package data
ROOT = Path(__file__).resolve().parents[1]
REPOSITORY_SPEC = coverage.find_spec(SUITE)
FIXTURES = load_fixtures(SUITE / "fixtures")
DRIVERS = (SUITE / "DRIVERS.md").read_text(encoding="utf-8")


def suite_pages() -> list[Path]:
    return sorted(SUITE.glob("*.md"))


def repository_pages() -> list[Path]:
    """The pages about the kit that live outside the package: conformance/ (REPORT.md aside, which
    conformance/drivers/node-pi/report.py generates and tests/test_node_pi_report.py checks)."""
    return sorted(p for p in (ROOT / "conformance").rglob("*.md") if p.name != "REPORT.md")


def package_data_patterns() -> list[str] | None:
    """The ``phi.conformance`` package-data globs of pyproject.toml (None where tomllib is missing)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return None
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns: list[str] = config["tool"]["setuptools"]["package-data"]["phi.conformance"]
    return patterns


def link_problems(page: Path, inside: Path, package: bool = True) -> list[str]:
    """The links of ``page`` that do not resolve to a file (and #anchor) inside ``inside``; for a
    page of the ``package``, a link must be relative and name a file, for another page it may be a
    web address or name a folder of the repository."""
    problems = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):
            if package:
                problems.append(f"{target}: not a relative link (a reader of the package has no network)")
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.is_relative_to(inside.resolve()):
            problems.append(f"{target}: outside {inside}")
        elif not (resolved.is_file() or (not package and resolved.is_dir())):
            problems.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{target}: no heading #{anchor}")
    return problems


def test_the_suite_ships_the_repository_spec() -> None:
    shipped = spec_file()
    assert shipped.is_file(), "the suite has no SPEC.md: run python -m phi.conformance requirements --write"
    if REPOSITORY_SPEC is None:
        pytest.skip("no repository SPEC.md to compare with (an installed package)")
    assert shipped.read_bytes() == REPOSITORY_SPEC.read_bytes(), \
        "suite/SPEC.md differs from SPEC.md: run python -m phi.conformance requirements --write"


def test_phi_conformance_spec_prints_where_the_shipped_spec_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["spec"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == SUITE / "SPEC.md" and printed.is_file()
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert str(SUITE) in capsys.readouterr().out


def test_every_link_of_the_suite_pages_resolves_inside_the_package() -> None:
    problems = {page.name: link_problems(page, SUITE) for page in suite_pages()}
    assert not {name: bad for name, bad in problems.items() if bad}
    assert any(links(page) for page in suite_pages())  # the walk saw links at all


def test_every_file_the_suite_pages_link_is_package_data() -> None:
    patterns = package_data_patterns()
    if patterns is None:
        pytest.skip("tomllib (Python 3.11) reads pyproject.toml")
    targets = {(page.parent / t.partition("#")[0]).resolve() for page in suite_pages() for t in links(page)
               if t.partition("#")[0]}
    targets |= {SUITE / "SPEC.md"}
    unshipped = [str(t.relative_to(PACKAGE)) for t in sorted(targets)
                 if not any(fnmatch.fnmatch(str(t.relative_to(PACKAGE)), p) for p in patterns)]
    assert not unshipped, f"linked but not in pyproject.toml's package data: {unshipped}"


def test_the_pages_about_the_kit_in_the_repository_link_existing_files() -> None:
    problems = {str(page.relative_to(ROOT)): link_problems(page, ROOT, package=False)
                for page in repository_pages()}
    assert not {name: bad for name, bad in problems.items() if bad}


def test_a_link_out_of_the_package_or_to_a_missing_file_is_found(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "b.md").write_text("# B\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Out\n", encoding="utf-8")
    page = suite / "a.md"
    page.write_text("[ok](b.md#b) [out](../outside.md) [gone](c.md) [anchor](b.md#nope) [web](https://x.y)\n",
                    encoding="utf-8")
    assert [p.split(":")[0] for p in link_problems(page, suite)] == ["../outside.md", "c.md", "b.md#nope", "https"]


COUNT = re.compile(r"(~|about |some )?\b(\d+) (?:\w+ )?fixtures\b")


def starting_list_size() -> int:
    """The rows of DRIVERS.md §2, the fixtures a driver writer starts with."""
    section = DRIVERS.split("\n## 2.", 1)[1].split("\n## 3.", 1)[0]
    return sum(1 for line in section.splitlines() if re.match(r"\| \d+ \| `", line))


def count_problems(text: str, real: int, starting: int) -> list[str]:
    found = []
    for match in COUNT.finditer(text):
        number = int(match.group(2))
        if match.group(1) or number not in (real, starting):
            found.append(match.group(0))
    return found


def test_no_page_states_a_fixture_count_other_than_the_real_one() -> None:
    starting = starting_list_size()
    assert f"## 2. Where to start: {starting} fixtures, in order" in DRIVERS  # the heading counts the table
    problems = {str(page.relative_to(ROOT)): count_problems(page.read_text(encoding="utf-8"), len(FIXTURES), starting)
                for page in suite_pages() + repository_pages()}
    assert not {name: bad for name, bad in problems.items() if bad}
    assert f"{len(FIXTURES)} fixtures;" in (SUITE / "COVERAGE.md").read_text(encoding="utf-8")


def test_a_stale_or_approximate_count_is_found() -> None:
    text = "the ~120 fixtures; the 168 fixtures in 3 s; 171 fixtures; the first 20 fixtures; 20 conformance fixtures"
    assert count_problems(text, 171, 20) == ["~120 fixtures", "168 fixtures"]


def error_rows() -> dict[str, str]:
    """DRIVERS.md §1.3's table: error name -> its row."""
    section = DRIVERS.split("### 1.3", 1)[1].split("\n## ", 1)[0]
    rows = {m.group(1): line for line in section.splitlines() if (m := re.match(r"\s*\| `(\w+)` \|", line))}
    rows.pop("error", None)  # the header
    return rows


def test_every_error_a_fixture_expects_is_explained_to_driver_writers() -> None:
    expected: dict[str, set[str]] = {}
    for fixture in FIXTURES:
        if "error" in fixture.get("expect", {}):
            expected.setdefault(fixture["expect"]["error"]["error"], set()).add(fixture["id"])
    rows = error_rows()
    assert set(rows) == set(expected)
    for name, ids in expected.items():
        for fixture_id in ids:  # each fixture is named, or matched by a glob the row gives
            globs = re.findall(r"`([a-z0-9*-]+)`", rows[name])
            assert any(fnmatch.fnmatch(fixture_id, g) for g in globs), (name, fixture_id)
    assert "`InvalidPrompt`" in rows["InvalidPrompt"] and "LOOP-20" in rows["InvalidPrompt"]


def timestamped(text: str) -> set[str]:
    """The event names a sentence ``... `A`, `B` and `C` carry a `timestamp` ...`` lists."""
    match = re.search(r"((?:`\w+`(?:,|\s|and)*)+)carry a `timestamp`", text)
    assert match, "no sentence saying which events carry a timestamp"
    return set(re.findall(r"`(\w+)`", match.group(1)))


def test_the_events_said_to_carry_a_timestamp_are_the_schemas() -> None:
    schema = json.loads((SUITE / "schema" / "event.schema.json").read_text(encoding="utf-8"))
    events = {name: d for name, d in schema["$defs"].items() if name[:1].isupper()}
    with_timestamp = {name for name, d in events.items() if "timestamp" in d.get("properties", {})}
    assert all(d.get("additionalProperties") is False for d in events.values())  # so the others cannot have one
    assert timestamped(DRIVERS) == with_timestamp
    assert timestamped(spec_file().read_text(encoding="utf-8")) == with_timestamp
