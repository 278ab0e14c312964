"""Retention under faults (ADR 0133): a prune killed half way, a trash on another file system."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from ledger import Message, RolloutWriter, StopKind
from ledger.digest import file_sha256
from replay import list_sessions
from replay.retention import prune, restore, trash_problems
from replay.trash import read_audit, trash_dir, trash_files

CHILD = Path(__file__).with_name("prune_child.py")
N = 5


def _sessions(root: Path, n: int = N) -> dict[str, str]:
    """``n`` finished sessions; their file names and the sha256 of each file."""
    out = {}
    for i in range(n):
        with RolloutWriter.create(root, session_id=f"s{i}", durability="os") as w:
            w.append(Message(role="user", content=f"message {i}" * (i + 1)))
            w.stop(StopKind.COMPLETED)
        with open(w.path, "rb") as f:
            out[w.path.name] = file_sha256(f)[0]
    return out


def _check_all_pruned(root: Path, shas: dict[str, str]) -> None:
    """Every session is in the trash, unchanged, with exactly one prune line, and the log and
    the trash agree."""
    assert list_sessions(root) == ()
    files = trash_files(root)
    assert sorted(p.name for p in files.iterdir()) == sorted(shas)
    for name, sha in shas.items():
        with open(files / name, "rb") as f:
            assert file_sha256(f)[0] == sha
    entries = [e for e in read_audit(root)[0] if e.action == "prune"]
    assert sorted(Path(e.path).name for e in entries) == sorted(shas)
    assert {Path(e.path).name: e.digest for e in entries} == shas
    assert trash_problems(root) == []


@pytest.mark.parametrize("mode", ["before-move", "after-move", "mid-log", "mid-copy", "after-copy"])
@pytest.mark.parametrize("k", [1, 3])
def test_a_prune_killed_half_way_is_finished_by_the_next(tmp_path: Path, mode: str, k: int) -> None:
    """A prune killed at the k-th session (its audit line written but not the move; the move
    done; half its line written; its copy across file systems complete but not in place; in
    place but the original not removed): the next prune finishes it, and the log and the trash
    agree."""
    shas = _sessions(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, str(CHILD), str(tmp_path), mode, str(k)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 137, done.stderr
    assert "DONE" not in done.stdout
    prune(tmp_path, older_than=timedelta(0))
    _check_all_pruned(tmp_path, shas)
    assert not any(p.name.endswith(".partial") for p in trash_files(tmp_path).iterdir())


def test_a_trash_on_another_file_system_gets_checked_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renames across file systems fail (EXDEV): each session is copied, checked against its
    logged sha256, put in place, and only then removed; restore crosses back the same way."""
    shas = _sessions(tmp_path, 3)
    real_rename = os.rename

    def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if os.fspath(src).endswith(".partial"):
            return real_rename(src, dst)
        if ("/.trash/" in os.fspath(src)) != ("/.trash/" in os.fspath(dst)):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    prune(tmp_path, older_than=timedelta(0))
    _check_all_pruned(tmp_path, shas)
    back = restore(tmp_path, "s1")
    with open(back, "rb") as f:
        assert file_sha256(f)[0] == shas[back.name]
    assert trash_problems(tmp_path) == []


def test_a_copy_that_does_not_match_leaves_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy whose bytes differ from the logged sha256 is removed, the original kept and the
    session reported failed, its prune cancelled in the log; the next run prunes it."""
    shas = _sessions(tmp_path, 1)
    real_rename = os.rename

    def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if "/.trash/files/" in os.fspath(dst) and not os.fspath(src).endswith(".partial"):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_rename(src, dst)

    def bad_copy(f: object, *, sink: object = None) -> tuple[str, int]:
        got = file_sha256(f, sink=sink)  # type: ignore[arg-type]
        # The hash taken for the log is right; the one of the copy says it differs.
        return ("sha256:" + "0" * 64, 0) if sink is not None else got

    with monkeypatch.context() as patch:
        patch.setattr(os, "rename", rename)
        patch.setattr("replay.trash.file_sha256", bad_copy)
        plan = prune(tmp_path, older_than=timedelta(0))
    (failed,) = plan.failed
    assert plan.pruned == ()
    assert "does not match its logged sha256" in (failed.held or "")
    (name,) = shas
    assert (tmp_path / name).is_file()
    assert not any(trash_files(tmp_path).iterdir())
    assert [e.action for e in read_audit(tmp_path)[0]] == ["prune", "cancel"]
    prune(tmp_path, older_than=timedelta(0))
    assert (trash_files(tmp_path) / name).is_file()
    assert trash_problems(tmp_path) == []


@pytest.fixture
def other_fs(tmp_path: Path) -> Iterator[Path]:
    """A directory on another file system than ``tmp_path`` (skipped where there is none)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system to put the trash on")
    with tempfile.TemporaryDirectory(dir=shm, prefix="rollout-trash-") as d:
        yield Path(d)


def test_a_trash_that_is_a_link_to_another_file_system(tmp_path: Path, other_fs: Path) -> None:
    """The real thing: .trash is a link to a directory on another file system."""
    shas = _sessions(tmp_path, 2)
    trash_dir(tmp_path).symlink_to(other_fs, target_is_directory=True)
    prune(tmp_path, older_than=timedelta(0))
    _check_all_pruned(tmp_path, shas)
    assert os.stat(trash_files(tmp_path)).st_dev != os.stat(tmp_path).st_dev
