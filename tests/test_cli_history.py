"""`rollout fork`, `rewind`, `prune`, `restore`, and forks in `ls`, `tree` and `show`."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner, Result

from ledger import Message, RolloutWriter, StopKind, Usage, encode_line
from replay import read_memory, read_replay
from replay.cli import cli
from replay.trash import read_audit, trash_lock
from replay.view import ABANDONED_MARKER


def run(root: Path, *args: str) -> Result:
    """Run the command in process against ``root``."""
    return CliRunner().invoke(cli, ["--root", str(root), *args], prog_name="rollout")


def _session(root: Path, sid: str = "main", n: int = 4) -> Path:
    with RolloutWriter.create(root, session_id=sid, agent_name="coder") as w:
        for i in range(n):
            w.append(Message(role="user" if i % 2 == 0 else "assistant", content=f"m{i}"))
        w.stop(StopKind.COMPLETED)
    return w.path


def test_fork_on_the_command_line(tmp_path: Path) -> None:
    """`rollout fork ID --at SEQ` writes a fork beside the source, stopped as paused, and says
    what it did; --json gives its origin and what it inherits."""
    _session(tmp_path)
    done = run(tmp_path, "fork", "main", "--at", "3", "--session-id", "b1")
    assert done.exit_code == 0, done.output
    assert "forked session main at seq 3: new session b1" in done.output
    done = run(tmp_path, "fork", "b1", "--session-id", "b2", "--json")
    doc = json.loads(done.output)
    assert doc["fork"]["session_id"] == "b1"
    assert doc["inherited"]["messages"] == 2
    assert [s["session_id"] for s in doc["inherited"]["sources"]] == ["b1", "main"]
    rep = read_replay(Path(doc["path"]))
    assert rep.verified
    assert rep.stop.kind is StopKind.PAUSED


def test_fork_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    """An unknown session, a fork point past the end, a damaged source: exit 1, one line."""
    path = _session(tmp_path)
    assert run(tmp_path, "fork", "nosuch").exit_code == 1
    done = run(tmp_path, "fork", "main", "--at", "99")
    assert done.exit_code == 1
    assert "its records end at seq" in done.output
    path.write_bytes(path.read_bytes().replace(b'"m1"}', b'"m1"', 1))
    done = run(tmp_path, "fork", "main")
    assert done.exit_code == 1
    assert "damaged" in done.output


def test_fork_copy_on_the_command_line(tmp_path: Path) -> None:
    """--copy makes a fork that replays with its source gone."""
    src = _session(tmp_path)
    assert run(tmp_path, "fork", "main", "--copy", "--session-id", "c").exit_code == 0
    src.unlink()
    done = run(tmp_path, "replay", "c", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["verified"]


def test_rewind_on_the_command_line(tmp_path: Path) -> None:
    """`rollout rewind ID --to SEQ` appends the rewind and stops the session paused; `show`
    still shows the abandoned turns, marked; bad targets are one-line errors."""
    path = _session(tmp_path)
    done = run(tmp_path, "rewind", "main", "--to", "3", "--reason", "retry")
    assert done.exit_code == 0, done.output
    assert "2 abandoned" in done.output
    rep = read_replay(path)
    assert [m.content for m in rep.messages] == ["m0", "m1"]
    assert rep.stop.kind is StopKind.PAUSED
    assert rep.verified
    shown = run(tmp_path, "show", "main")
    assert "abandoned (rewind at seq" in shown.output
    assert "m3" in shown.output
    for bad, why in (("0", "before the start"), ("4", "abandoned")):
        done = run(tmp_path, "rewind", "main", "--to", bad)
        assert done.exit_code == 1
        assert why in done.output


def test_the_lossy_view_shows_abandoned_turns_marked(tmp_path: Path) -> None:
    """read_memory keeps abandoned messages where the file has them, marked; replay does not."""
    path = _session(tmp_path, n=2)
    with RolloutWriter.open(path) as w:
        w.rewind(to=2)
        w.append(Message(role="assistant", content="again"))
        w.stop(StopKind.PAUSED)
    view = read_memory(path)
    assert [(m.content, m.truncation_marker) for m in view.messages] == [
        ("m0", None),
        ("m1", ABANDONED_MARKER),
        ("again", None),
    ]
    assert view.abandoned == 1
    assert [m.content for m in read_replay(path).messages] == ["m0", "again"]


def test_tree_shows_forks_beside_delegations(tmp_path: Path) -> None:
    """Two kinds of edge: a fork sits under its source in `forks`, marked in the text tree."""
    src = _session(tmp_path)
    with RolloutWriter.fork(src, at=3, session_id="f") as f:
        f.stop(StopKind.PAUSED)
    doc = json.loads(run(tmp_path, "tree", "--json").output)
    (top,) = doc["roots"]
    assert top["session_id"] == "main"
    assert top["children"] == []
    assert [n["session_id"] for n in top["forks"]] == ["f"]
    assert top["forks"][0]["fork"]["seq"] == 3
    text = run(tmp_path, "tree").output
    assert "fork at seq 3" in text
    ls = json.loads(run(tmp_path, "ls", "--json").output)
    assert {s["session_id"]: s["fork"] and s["fork"]["session_id"] for s in ls["sessions"]} == {
        "main": None,
        "f": "main",
    }


def _with_usage(w: RolloutWriter, response_id: str, tokens: int) -> None:
    """Add a usage record after the writer's last record (as an importer writes one)."""
    usage = Usage(
        seq=w.next_seq, ts=datetime.now(UTC), response_id=response_id, input_tokens=tokens
    )
    with open(w.path, "ab") as f:
        f.write(encode_line(usage))


def test_usage_totals_never_count_the_inherited_part_twice(tmp_path: Path) -> None:
    """The source's usage counts in the source; the fork's own in the fork; the tree's total
    is their sum, not the source's twice."""
    with RolloutWriter.create(tmp_path, session_id="main") as w:
        w.append(Message(role="user", content="q"))
        w.stop(StopKind.COMPLETED)
    _with_usage(w, "r1", 100)
    with RolloutWriter.fork(w.path, session_id="f") as f:
        f.append(Message(role="assistant", content="b"))
        f.stop(StopKind.PAUSED)
    _with_usage(f, "r2", 7)
    assert read_replay(f.path).usage.input_tokens == 7
    doc = json.loads(run(tmp_path, "tree", "--usage", "--json").output)
    assert doc["usage_total"]["input_tokens"] == 107
    assert doc["usage_total"]["responses"] == 2
    (top,) = doc["roots"]
    assert top["usage"]["input_tokens"] == 100
    assert top["forks"][0]["usage"]["input_tokens"] == 7
    assert "107 in" in run(tmp_path, "tree", "--usage").output


def test_prune_and_restore_on_the_command_line(tmp_path: Path) -> None:
    """prune moves and logs (with the command line), ls --trash lists, restore brings back;
    the empty trash is the only deletion."""
    path = _session(tmp_path)
    old = time.time() - 40 * 86400
    os.utime(path, (old, old))
    assert run(tmp_path, "prune").exit_code == 2
    dry = run(tmp_path, "prune", "--older-than", "30d", "--dry-run")
    assert "would prune main" in dry.output
    assert path.exists()
    done = run(tmp_path, "prune", "--older-than", "30d", "--stop-kind", "completed")
    assert done.exit_code == 0, done.output
    assert not path.exists()
    (line,) = read_audit(tmp_path)[0]
    assert line.command == (
        "rollout",
        "--root",
        str(tmp_path),
        "prune",
        "--older-than",
        "30d",
        "--stop-kind",
        "completed",
    )
    assert json.loads(run(tmp_path, "ls", "--json").output)["sessions"] == []
    trashed = json.loads(run(tmp_path, "ls", "--trash", "--json").output)["sessions"]
    assert [s["session_id"] for s in trashed] == ["main"]
    assert run(tmp_path, "show", "main").exit_code == 1
    done = run(tmp_path, "restore", "main")
    assert done.exit_code == 0, done.output
    assert path.exists()
    assert run(tmp_path, "prune", "main").exit_code == 0
    assert run(tmp_path, "prune", "--empty-trash").exit_code == 2
    done = run(tmp_path, "prune", "--empty-trash", "--older-than", "0d")
    assert done.exit_code == 0, done.output
    assert "1 session(s) deleted" in done.output
    assert [e.action for e in read_audit(tmp_path)[0]] == ["prune", "restore", "prune", "delete"]


def test_a_second_prune_fails_clearly(tmp_path: Path) -> None:
    """While the trash is held, `rollout prune` exits 1 with one line naming the holder."""
    _session(tmp_path)
    with trash_lock(tmp_path):
        done = run(tmp_path, "prune", "main")
    assert done.exit_code == 1
    assert "another prune" in done.output
    assert str(os.getpid()) in done.output


def test_restore_of_an_unknown_session(tmp_path: Path) -> None:
    """Nothing in the trash by that id: exit 1, the trash named."""
    _session(tmp_path)
    done = run(tmp_path, "restore", "main")
    assert done.exit_code == 1
    assert "trash" in done.output
