"""The amendment logs are append-only (issue 28 item 5): a checksum per entry and the git history."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ntkrepro import amendment_log as al
from ntkrepro.papers import PAPERS


def _copy_tree(repo_root: Path, dest: Path) -> Path:
    for paper in PAPERS:
        target = al.claims_file(paper, dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(al.claims_file(paper, repo_root), target)
    return dest


def test_every_entry_is_locked_and_unchanged():
    assert al.check() == []


def test_editing_a_past_amendment_entry_fails(tmp_path, repo_root):
    root = _copy_tree(repo_root, tmp_path)
    path = al.claims_file("arda2026", root)
    text = path.read_text()
    i = text.index("[[A3.amendments]]")
    m = re.compile(r'why = ("""|")').search(text, i)
    # rewrite the first A3 amendment's `why` (a past entry)
    path.write_text(text[:m.end()] + "(edited later) " + text[m.end():])
    problems = al.check(root)
    assert any("A3 amendments entry 1 was edited" in p for p in problems), problems
    lock = tmp_path / "lock.json"
    shutil.copy(al.LOCK_FILE, lock)
    with pytest.raises(ValueError, match="refusing to lock over edited past entries"):
        al.lock(root, lock)


def test_a_new_entry_must_be_locked_and_lock_only_adds(tmp_path, repo_root):
    root = _copy_tree(repo_root, tmp_path)
    path = al.claims_file("framework", root)
    path.write_text(path.read_text() + '\n[[F1.amendments]]\ndate = "2026-12-05"\nchange = "x"\nwhy = "y"\n')
    lock = tmp_path / "lock.json"
    shutil.copy(al.LOCK_FILE, lock)
    assert any("F1 amendments" in p and "not locked yet" in p for p in al.check(root, lock))
    added = al.lock(root, lock)
    assert len(added) == 1 and al.check(root, lock) == []


def test_removing_an_entry_fails(tmp_path, repo_root):
    root = _copy_tree(repo_root, tmp_path)
    path = al.claims_file("hazelden2026", root)
    text = path.read_text()
    start = text.index("[[G1.amendments]]")
    end = text.index("[[", start + 5)
    path.write_text(text[:start] + text[end:])
    assert any("G1 amendments entry" in p for p in al.check(root))


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_history_check_finds_an_edit_the_lock_cannot_see(tmp_path, repo_root):
    """A past entry edited in a later commit is found in the history even if the lock was regenerated."""
    root = _copy_tree(repo_root, tmp_path)
    _git(root, "init", "-q")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    base = _git(root, "rev-parse", "HEAD").strip()
    assert al.history_problems(root, since=base) == []
    path = al.claims_file("framework", root)
    text = path.read_text()
    i = text.index("[[F2.amendments]]")
    m = re.compile(r'why = ("""|")').search(text, i)
    path.write_text(text[:m.end()] + "(rewritten) " + text[m.end():])
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "edit")
    assert any("F2 amendments entry 1 differs from commit" in p for p in al.history_problems(root, since=base))


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_no_past_entry_changed_in_this_repository_history(repo_root):
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    try:
        _git(repo_root, "cat-file", "-e", f"{al.HISTORY_SINCE}^{{commit}}")
    except subprocess.CalledProcessError:
        pytest.skip(f"shallow checkout without commit {al.HISTORY_SINCE}")
    assert al.history_problems(repo_root) == []
