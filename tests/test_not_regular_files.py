"""Every read entry refuses what is not a regular file at once (D15): never blocks, never runs away.

A FIFO blocks ``open()`` until a writer comes and ``/dev/zero`` never ends, so the cases that
would hang on a regression run in a child process that reports each call's outcome; an alarm in
the child names a call that blocks instead of hanging the suite.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger import StopKind
from replay import (
    NotARegularFileError,
    list_sessions,
    read_memory,
    read_replay,
    read_session_entry,
    read_stop_facts,
)
from replay.cli import cli
from rollout_files import RolloutBuilder, conversation

READERS: dict[str, Callable[[Path], object]] = {
    "read_replay": read_replay,
    "read_replay(whole_file)": lambda p: read_replay(p, whole_file=True),
    "read_stop_facts": read_stop_facts,
    "read_memory": read_memory,
    "read_session_entry": read_session_entry,
}


@pytest.fixture
def socket_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A Unix socket bound at a short relative path (socket paths are limited to ~100 bytes)."""
    monkeypatch.chdir(tmp_path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("s.jsonl")
    try:
        yield tmp_path / "s.jsonl"
    finally:
        s.close()


@pytest.mark.parametrize("reader", list(READERS))
def test_a_directory_is_refused_by_every_reader(tmp_path: Path, reader: str) -> None:
    """A directory is refused with NotARegularFileError naming the path and saying what it is."""
    d = tmp_path / "dir.jsonl"
    d.mkdir()
    with pytest.raises(NotARegularFileError, match="a directory") as info:
        READERS[reader](d)
    assert info.value.filename == str(d)
    assert isinstance(info.value, OSError)


@pytest.mark.parametrize("reader", list(READERS))
def test_a_socket_is_refused_by_every_reader(socket_path: Path, reader: str) -> None:
    """A Unix socket is refused as a socket, not reported as a puzzling ENXIO."""
    with pytest.raises(NotARegularFileError, match="a socket"):
        READERS[reader](socket_path)


@pytest.mark.parametrize("reader", list(READERS))
def test_a_character_device_is_refused_by_every_reader(tmp_path: Path, reader: str) -> None:
    """/dev/null, even through a link named like a rollout, is refused as a character device."""
    link = tmp_path / "null.jsonl"
    link.symlink_to("/dev/null")
    with pytest.raises(NotARegularFileError, match="a character device"):
        READERS[reader](link)


def test_a_listing_root_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    """list_sessions of a file raises NotADirectoryError; of a missing root, lists nothing."""
    path = RolloutBuilder(tmp_path).extend(conversation()).write()
    with pytest.raises(NotADirectoryError, match="not a directory"):
        list_sessions(path)
    assert list_sessions(tmp_path / "missing") == ()


def test_a_regular_file_still_reads(tmp_path: Path) -> None:
    """The check lets a rollout through, through a symlink too."""
    path = RolloutBuilder(tmp_path).extend(conversation()).stop(StopKind.PAUSED).write()
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    assert read_replay(link).verified
    assert read_stop_facts(link).kind is StopKind.PAUSED


_CHILD = r"""
import asyncio, os, signal, sys
from replay import (
    NotARegularFileError, aread_replay, aread_stop_facts, read_memory, read_replay,
    read_session_entry, read_stop_facts,
)
from replay.cli import cli

class Hung(Exception):
    pass

def alarm(*_):
    raise Hung()

signal.signal(signal.SIGALRM, alarm)
calls = {
    "read_replay": read_replay,
    "read_replay(whole_file)": lambda p: read_replay(p, whole_file=True),
    "read_stop_facts": read_stop_facts,
    "read_memory": read_memory,
    "read_session_entry": read_session_entry,
    "aread_replay": lambda p: asyncio.run(aread_replay(p)),
    "aread_stop_facts": lambda p: asyncio.run(aread_stop_facts(p)),
}
for cmd in (["show"], ["show", "--raw"], ["verify"], ["replay"], ["grep", "x", "--session"]):
    def run(p, cmd=cmd):
        code = cli.main(["--root", os.path.dirname(p), *cmd, p], standalone_mode=False)
        if code not in (1, 2):
            raise AssertionError(f"exit {code}")
        raise NotARegularFileError(p, "as the command said on stderr")
    calls["rollout " + " ".join(cmd)] = run
from replay import NotARegularFileError
def listed_in_a_race(p):
    # The walk saw a regular file; by the open, it was replaced by this path's kind.
    import replay.sessions as sessions
    real = sessions.iter_rollout_paths
    sessions.iter_rollout_paths = lambda root, **_: iter([Path(p)])
    try:
        (entry,) = sessions.list_sessions(os.path.dirname(p))
    finally:
        sessions.iter_rollout_paths = real
    assert sessions.SessionFlag.UNREADABLE in entry.flags, entry.flags
    assert "not a regular file" in entry.notes[0], entry.notes
    raise NotARegularFileError(p, entry.notes[0])
calls["list_sessions (race)"] = listed_in_a_race
from pathlib import Path
for path in sys.argv[1:]:
    for name, call in calls.items():
        signal.alarm(5)
        try:
            call(path)
        except Hung:
            outcome = "HUNG"
        except Exception as exc:
            outcome = type(exc).__name__
        else:
            outcome = "returned"
        finally:
            signal.alarm(0)
        print(f"{os.path.basename(path)} {name}: {outcome}", flush=True)
"""


def test_fifo_and_dev_zero_are_refused_at_once(tmp_path: Path) -> None:
    """A FIFO (no writer) and /dev/zero are refused by every read entry and command, at once."""
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(fifo), str(zero)],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcomes = re.findall(r"^(?:fifo|zero)\.jsonl [^:]*: \w+$", done.stdout, re.MULTILINE)
    assert len(outcomes) == 2 * 13, done.stdout
    assert [o for o in outcomes if not o.endswith(": NotARegularFileError")] == []
    # Each command said why, once: on stderr, or in verify's FAILED line.
    said = done.stdout + done.stderr
    assert said.count("not a regular file (a FIFO)") == 5
    assert said.count("not a regular file (a character device)") == 5
    assert "Traceback" not in done.stderr


def test_the_command_names_what_the_path_is(tmp_path: Path) -> None:
    """`rollout show DIR.jsonl` fails on one line that says the path is a directory."""
    d = tmp_path / "d.jsonl"
    d.mkdir()
    result = CliRunner().invoke(cli, ["--root", str(tmp_path), "show", str(d)])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "not a regular file (a directory)" in result.stderr
