"""The git snapshot (seed 004 §6.4) through the real ``git`` executable, and its absence."""

from __future__ import annotations

import os
import stat
import time

import pytest

import subprocess

from phi.coding.git_context import GitSnapshot, git_root, git_snapshot, may_be_in_repository, root_and_snapshot

from .git_repo import commit_all, git, init_repo, isolated_git, needs_git, write  # noqa: F401 (fixture)

pytestmark = [needs_git, pytest.mark.usefixtures("isolated_git")]


@pytest.fixture
def repo(tmp_path):
    root = init_repo(tmp_path / "repo", branch="feature/snapshot")
    for n in range(1, 8):
        write(root, f"f{n}.txt", f"version {n}\n")
        commit_all(root, f"Commit number {n}")
    return root


def test_branch_counts_and_recent_commits(repo):
    write(repo, "f1.txt", "changed\n")  # modified, not staged
    write(repo, "f2.txt", "staged change\n")
    git(repo, "add", "f2.txt")  # staged
    os.remove(repo / "f3.txt")  # deleted in the work tree
    write(repo, "new1.txt", "x")
    write(repo, "new2.txt", "y")  # two untracked files
    snap = git_snapshot(repo)
    assert snap is not None
    assert os.path.samefile(snap.root, repo)
    assert snap.branch == "feature/snapshot"
    assert (snap.staged, snap.modified, snap.deleted, snap.untracked, snap.conflicted) == (1, 1, 1, 2, 0)
    assert [c.split(" ", 1)[1] for c in snap.recent_commits] == [f"Commit number {n}" for n in (7, 6, 5, 4, 3)]
    head = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    assert snap.recent_commits[0].startswith(head[:7]) and snap.head == head[:7]
    text = snap.render()
    assert "Branch: feature/snapshot" in text
    assert "Status: 1 staged, 1 modified, 1 deleted, 2 untracked" in text
    assert "Commit number 7" in text and "Commit number 2" not in text
    assert "changed" not in text and "staged change" not in text  # counts only, never the diff


def test_clean_repository_and_commit_count(repo):
    snap = git_snapshot(repo, commits=10)
    assert snap.is_clean and snap.status_summary() == "clean"
    assert len(snap.recent_commits) == 7
    assert "Status: clean" in snap.render()


def test_from_a_subdirectory_the_root_is_the_repository(repo):
    (repo / "sub" / "deeper").mkdir(parents=True)
    snap = git_snapshot(repo / "sub" / "deeper")
    assert snap is not None and os.path.samefile(snap.root, repo)
    assert os.path.samefile(git_root(repo / "sub" / "deeper"), repo)


def test_repository_without_commits(tmp_path):
    root = init_repo(tmp_path / "fresh", branch="trunk")
    write(root, "a.txt", "a")
    snap = git_snapshot(root)
    assert snap.branch == "trunk" and snap.head is None and snap.recent_commits == ()
    assert snap.untracked == 1
    assert "Recent commits: none yet" in snap.render()


def test_detached_head(repo):
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach", first)
    snap = git_snapshot(repo)
    assert snap.branch is None and snap.head == first[:7]
    assert snap.branch_label() == f"(detached at {first[:7]})"
    assert snap.recent_commits == (f"{first[:7]} Commit number 1",)


def test_upstream_ahead_and_behind(tmp_path, repo):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    write(clone, "local.txt", "local")
    commit_all(clone, "Local work")
    write(repo, "remote.txt", "remote")
    commit_all(repo, "Remote work one")
    write(repo, "remote2.txt", "remote")
    commit_all(repo, "Remote work two")
    git(clone, "fetch", "-q")
    snap = git_snapshot(clone)
    assert snap.upstream == "origin/feature/snapshot" and (snap.ahead, snap.behind) == (1, 2)
    assert "tracking origin/feature/snapshot; ahead 1, behind 2" in snap.render()


def test_merge_conflict_is_counted(repo):
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, "f1.txt", "other side\n")
    commit_all(repo, "Other side")
    git(repo, "checkout", "-q", "feature/snapshot")
    write(repo, "f1.txt", "this side\n")
    commit_all(repo, "This side")
    with pytest.raises(Exception):
        git(repo, "merge", "-q", "other")
    snap = git_snapshot(repo)
    assert snap.conflicted == 1 and "1 conflicted" in snap.render()


def test_renamed_file_counts_once_and_odd_names_are_fine(repo):
    git(repo, "mv", "f4.txt", "renamed with space.txt")
    write(repo, "naïve ünïcode.txt", "u")
    snap = git_snapshot(repo)
    assert (snap.staged, snap.modified, snap.untracked) == (1, 0, 1)


def test_long_commit_subjects_are_shortened(repo):
    write(repo, "long.txt", "l")
    commit_all(repo, "S" * 500)
    (subject, *_rest) = git_snapshot(repo).recent_commits
    assert len(subject) == 200 and subject.endswith("...")


def test_snapshot_ignores_git_dir_from_the_environment(repo, tmp_path, monkeypatch):
    other = init_repo(tmp_path / "other", branch="elsewhere")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    snap = git_snapshot(repo)
    assert snap.branch == "feature/snapshot"


def test_outside_a_repository_there_is_no_snapshot(tmp_path):
    (tmp_path / "plain").mkdir()
    assert git_snapshot(tmp_path / "plain") is None
    assert git_root(tmp_path / "plain") is None
    assert git_snapshot(tmp_path / "missing") is None


def test_without_git_on_path_there_is_no_snapshot(repo, tmp_path, monkeypatch):
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert git_snapshot(repo) is None


def _recording_git(tmp_path, monkeypatch):
    """A ``git`` first on PATH that notes each call in a file, then runs the real one."""
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    bin_dir = tmp_path / "recording-bin"
    bin_dir.mkdir()
    calls = tmp_path / "git-calls"
    fake = bin_dir / "git"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real} "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return calls


@pytest.mark.skipif(os.name != "posix", reason="the stand-in git is a POSIX shell script")
def test_outside_a_repository_no_git_process_runs(tmp_path, monkeypatch):
    plain = tmp_path / "plain" / "deeper"
    plain.mkdir(parents=True)
    if may_be_in_repository(str(plain)):
        pytest.skip(f"the temporary directory {tmp_path} is itself inside a git repository")
    calls = _recording_git(tmp_path, monkeypatch)
    assert root_and_snapshot(plain) == (None, None)
    assert git_root(plain) is None
    assert not calls.exists()  # every prompt outside a repository saved its (sandboxed) git processes


@pytest.mark.skipif(os.name != "posix", reason="the stand-in git is a POSIX shell script")
def test_inside_a_repository_the_root_status_and_log_are_all_asked(repo, tmp_path, monkeypatch):
    calls = _recording_git(tmp_path, monkeypatch)
    root, snap = root_and_snapshot(repo / "sub" if (repo / "sub").is_dir() else repo)
    assert root == os.path.realpath(repo) and snap is not None and snap.root == root
    asked = calls.read_text().splitlines()
    assert sorted(line.split(" -c ")[-1].split()[1] for line in asked) == ["log", "rev-parse", "status"]


@pytest.mark.parametrize("where", ["git-directory", "objects"])
def test_inside_a_git_directory_git_decides(repo, where):
    """The inside of ``.git`` has no ``.git`` entry of its own, but git may still find a repository
    there: phi asks git, and says what git says."""
    inside = repo / ".git" if where == "git-directory" else repo / ".git" / "objects"
    assert may_be_in_repository(str(inside))
    said = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=inside, capture_output=True, text=True)
    assert git_root(inside) == (said.stdout.strip() or None if said.returncode == 0 else None)


def test_a_directory_reached_through_a_symbolic_link_is_looked_at_where_it_lives(repo, tmp_path):
    (repo / "pkg").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = elsewhere / "link"
    link.symlink_to(repo / "pkg", target_is_directory=True)
    said = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=link, capture_output=True, text=True)
    root, snap = root_and_snapshot(link)
    assert root == said.stdout.strip() == os.path.realpath(repo)
    assert snap is not None and snap.branch == "feature/snapshot"


def test_a_path_the_real_path_cannot_be_found_of_is_left_to_git(tmp_path):
    """A chain of links longer than Python's recursion in ``realpath`` (the kernel refuses it too):
    no exception, and git's answer (none)."""
    previous = tmp_path / "start"
    previous.mkdir()
    for n in range(1500):
        link = tmp_path / f"link{n}"
        link.symlink_to(previous, target_is_directory=True)
        previous = link
    assert root_and_snapshot(previous) == (None, None)
    assert git_root(previous) is None


def test_a_bare_repository_is_looked_at(tmp_path):
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    assert may_be_in_repository(str(bare)) and may_be_in_repository(str(bare / "refs"))
    assert root_and_snapshot(bare) == (None, None)  # git: "this operation must be run in a work tree"


def test_a_linked_worktree_has_its_own_root(repo, tmp_path):
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    assert (linked / ".git").is_file()
    root, snap = root_and_snapshot(linked)
    assert root == os.path.realpath(linked)
    assert snap is not None and snap.branch == "side"


@pytest.mark.skipif(os.name != "posix", reason="the stand-in git is a POSIX shell script")
def test_a_hanging_git_gives_up_at_the_timeout(repo, tmp_path, monkeypatch):
    bin_dir = tmp_path / "slow-bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    assert git_snapshot(repo, timeout=0.5) is None
    assert time.monotonic() - started < 20  # generous: only catches a hang


def test_render_of_a_hand_made_snapshot():
    snap = GitSnapshot(root="/r", branch="main", head="abc1234", modified=2,
                       recent_commits=("abc1234 Fix the parser", "def5678 Add tests"))
    assert snap.render() == (
        "<git>\nBranch: main\nStatus: 2 modified\nRecent commits (newest first):\n"
        "- abc1234 Fix the parser\n- def5678 Add tests\n"
        "This is a snapshot from the start of the session; run git through the shell tool for the current state.\n"
        "</git>")


def test_a_large_status_counts_the_same_inside_the_sandbox(repo):
    """Attack 2 on issue 35: a sandboxed git's output was cut (1 MiB of head and of tail kept), so
    a large status was counted short inside the sandbox and right outside."""
    from phi.tools.sandbox import sandbox_status

    if not sandbox_status().available:
        pytest.skip(f"no sandbox on this machine: {sandbox_status().describe()}")
    for n in range(12000):  # at the top: git reports an untracked directory as one entry
        (repo / f"untracked-{'x' * 200}-{n:05d}.txt").write_text("")  # ~2.6 MB of status in all
    from phi.tools.environment import LocalExecutionEnvironment

    env = LocalExecutionEnvironment(str(repo), sandbox="read-only")
    env.initialize()
    try:
        plain = git_snapshot(repo)
        boxed = git_snapshot(repo, sandbox=env.helper_sandbox())
    finally:
        env.cleanup()
    assert plain is not None and boxed is not None
    assert plain.untracked == boxed.untracked == 12000
