"""Restore and emptying check a held file against its logged prune (ADR 0157), whatever stands
in the trash: changed, cut, a symbolic link, a FIFO, or a prune line with no sha256; every
refusal names the file and says what to do."""

from __future__ import annotations

import errno
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger import Message, RolloutWriter, StopKind
from replay.cli import cli
from replay.retention import empty_trash, prune, restore
from replay.trash import FileHeldError, TrashError, trash_dir, trash_files


def _pruned(root: Path, sid: str) -> tuple[Path, Path]:
    """A session pruned into the trash: its old path and where the trash holds it."""
    with RolloutWriter.create(root, session_id=sid, durability="os") as w:
        w.append(Message(role="user", content=f"hello from {sid}"))
        w.stop(StopKind.PAUSED)
    prune(root, named=[w.path])
    return w.path, trash_files(root) / w.path.name


def _without_digest(root: Path) -> None:
    """The audit log's lines lose their sha256 (written by hand, or by another tool)."""
    log = trash_dir(root) / "audit.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for line in lines:
        line.pop("sha256", None)
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _empty(root: Path) -> tuple[list[tuple[Path, str]], list[tuple[Path, str]]]:
    kept: list[tuple[Path, str]] = []
    later = datetime.now(UTC) + timedelta(days=2)
    gone = empty_trash(
        root, older_than=timedelta(days=1), at=later, on_kept=lambda p, w: kept.append((p, w))
    )
    return gone, kept


@pytest.mark.parametrize("replace", [False, True], ids=["same-bytes", "other-bytes"])
def test_restore_refuses_a_prune_line_without_a_digest(tmp_path: Path, replace: bool) -> None:
    """A prune line that records no sha256 cannot vouch for the file's bytes: restore moves
    nothing and says which file, why, and what to do."""
    old, inside = _pruned(tmp_path, "s")
    _without_digest(tmp_path)
    if replace:
        inside.write_bytes(b"not what was pruned\n")
    before = inside.read_bytes()
    with pytest.raises(TrashError) as info:
        restore(tmp_path, "s")
    said = info.value.strerror or ""
    assert inside.name in said
    assert "no sha256" in said
    assert "copy it out by hand" in said
    assert info.value.filename == os.fspath(inside)
    assert not old.exists()
    assert inside.read_bytes() == before


def test_emptying_keeps_a_file_whose_prune_line_has_no_digest(tmp_path: Path) -> None:
    """Emptying never deletes, for good, bytes no logged sha256 vouches for: the file is kept,
    and the reason names it and what to do."""
    _, inside = _pruned(tmp_path, "s")
    _without_digest(tmp_path)
    inside.write_bytes(b"anything at all\n")
    gone, kept = _empty(tmp_path)
    assert gone == []
    assert inside.read_bytes() == b"anything at all\n"
    assert [p for p, _ in kept] == [inside]
    assert inside.name in kept[0][1]
    assert "no sha256" in kept[0][1]
    assert "remove it by hand" in kept[0][1]


@pytest.mark.parametrize("how", ["changed", "cut", "emptied"])
def test_restore_and_emptying_refuse_bytes_that_are_not_those_pruned(
    tmp_path: Path, how: str
) -> None:
    """An edit, a cut or an emptied file in the trash: restore moves nothing, emptying deletes
    nothing, and both name the file, both digests and what to do."""
    for step in ("restore", "empty"):
        root = tmp_path / step
        root.mkdir()
        old, inside = _pruned(root, "s")
        data = inside.read_bytes()
        inside.write_bytes(
            {"changed": data.replace(b"hello", b"HELLO"), "cut": data[:10], "emptied": b""}[how]
        )
        if step == "restore":
            with pytest.raises(TrashError, match="is not what was pruned") as info:
                restore(root, "s")
            said = info.value.strerror or ""
            assert "copy it out by hand" in said
            assert not old.exists()
        else:
            gone, kept = _empty(root)
            assert gone == []
            said = kept[0][1]
            assert "remove it by hand" in said
        assert inside.name in said
        assert said.count("sha256:") == 2
        assert inside.is_file()


def test_restore_of_a_symbolic_link_in_the_trash_names_it_and_what_to_do(tmp_path: Path) -> None:
    """A pruned file replaced by a symbolic link (to a file in the trash) is never followed:
    restore refuses with the file's name and what to do, on the command line too."""
    old, inside = _pruned(tmp_path, "s")
    target = inside.with_name("elsewhere.data")
    os.rename(inside, target)
    inside.symlink_to(target.name)
    with pytest.raises(FileHeldError) as info:
        restore(tmp_path, "s")
    said = info.value.strerror or ""
    assert info.value.errno == errno.ELOOP
    assert inside.name in said
    assert "symbolic link" in said
    assert "Nothing was restored" in said
    assert not old.exists()
    assert inside.is_symlink()
    result = CliRunner().invoke(cli, ["--root", str(tmp_path), "restore", "s"], prog_name="rollout")
    assert result.exit_code == 1
    assert inside.name in result.output
    assert "Nothing was restored" in result.output


def test_restore_of_a_file_a_writer_holds_in_the_trash_names_it(tmp_path: Path) -> None:
    """A writer that took up the pruned file inside the trash keeps it: restore refuses,
    naming the file and what to do, and moves nothing."""
    old, inside = _pruned(tmp_path, "s")
    with RolloutWriter.open(inside):
        with pytest.raises(FileHeldError) as info:
            restore(tmp_path, "s")
        result = CliRunner().invoke(
            cli, ["--root", str(tmp_path), "restore", "s"], prog_name="rollout"
        )
    said = info.value.strerror or ""
    assert inside.name in said
    assert "a writer has it open" in said
    assert "close" in said
    assert result.exit_code == 1
    assert inside.name in result.output
    assert not old.exists()


def test_a_fifo_or_a_link_out_of_the_trash_is_never_deleted_or_followed(tmp_path: Path) -> None:
    """A pruned file replaced by a FIFO, or by a link to a file outside the trash: emptying
    deletes nothing and never blocks, and the link's target is untouched."""
    _, fifo = _pruned(tmp_path, "a")
    _, link = _pruned(tmp_path, "b")
    fifo.unlink()
    os.mkfifo(fifo)
    outside = tmp_path / "outside.data"
    os.rename(link, outside)
    link.symlink_to(outside)
    gone, _ = _empty(tmp_path)
    assert gone == []
    assert fifo.exists()
    assert link.is_symlink()
    assert outside.is_file()


@pytest.mark.parametrize("how", ["changed", "no-digest"])
def test_emptyings_advice_for_a_file_it_keeps_is_advice_that_works(
    tmp_path: Path, how: str
) -> None:
    """Emptying keeps bytes no logged sha256 vouches for; what it tells the operator to do
    never sends them to restore, which refuses the very same file."""
    _, inside = _pruned(tmp_path, "s")
    if how == "no-digest":
        _without_digest(tmp_path)
    else:
        inside.write_bytes(inside.read_bytes().replace(b"hello", b"HELLO"))
    gone, kept = _empty(tmp_path)
    assert gone == []
    advice = kept[0][1].split("Kept:", 1)[1]
    assert "restore" not in advice
    assert "copy it out by hand" in advice
    assert "remove it by hand" in advice
    with pytest.raises(TrashError):
        restore(tmp_path, "s")


def test_emptying_says_which_file_it_keeps_and_what_to_do_for_a_link_or_a_live_writer(
    tmp_path: Path,
) -> None:
    """A symbolic link in the trash and a pruned file a writer took up are kept; each reason
    names the file in the trash and says what to do, on the command line too."""
    _, link = _pruned(tmp_path, "a")
    _, live = _pruned(tmp_path, "b")
    target = link.with_name("elsewhere.data")
    os.rename(link, target)
    link.symlink_to(target.name)
    with RolloutWriter.open(live):
        gone, kept = _empty(tmp_path)
        result = CliRunner().invoke(
            cli,
            ["--root", str(tmp_path), "prune", "--empty-trash", "--older-than", "0s"],
            prog_name="rollout",
        )
    assert gone == []
    reasons = dict(kept)
    assert link.name in reasons[link]
    assert "remove the link by hand" in reasons[link]
    assert live.name in reasons[live]
    assert "close the writer" in reasons[live]
    assert link.name in result.output
    assert live.name in result.output
    assert link.is_symlink()
    assert target.is_file()
    assert live.is_file()
