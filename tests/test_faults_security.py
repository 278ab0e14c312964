"""Security: nothing gets out of the root, and a hostile file cannot make a reader run away.

Session ids, agent names, root values and session-id prefixes that try to escape the root
(``..``, absolute paths, separators, NUL, symlinks planted in the root) are refused or
contained. A huge or hostile file cannot make the stop-fact reader or the listing read the
whole file: bytes read are counted through a wrapper. And no code path loads file content with
``pickle``, ``eval``, ``exec`` or a dynamic import.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger import Message, Role, StopKind, parse_rollout_filename, rollout_filename
from ledger.naming import RolloutNameError, validate_agent_name, validate_session_id
from ledger.writer import RolloutWriter
from replay import NotARegularFileError, list_sessions, read_stop_facts
from replay.cli._errors import CliError
from replay.cli._paths import resolve_root, resolve_target
from replay.stop import DEFAULT_SCAN_BUDGET, stop_facts_from_file
from strategies import fault_conversation, fault_rollout_lines

SRC = Path(__file__).resolve().parents[1] / "src"
NOW = datetime(2026, 12, 2, 16, 0, 0, tzinfo=UTC)

ESCAPES = [
    "..",
    ".",
    "../x",
    "../../etc/passwd",
    "/etc/passwd",
    "/",
    "a/b",
    "a\\b",
    "a\x00b",
    "\x00",
    "",
    " ",
    "a b",
    "a\nb",
    "x/..",
    "~",
    "~root",
    "$HOME",
    "a\u2215b",  # division slash, looks like '/'
    "\uff41\uff42",  # fullwidth letters
    "-rf",
    ".hidden",
    "x" * 129,
]


# --- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ESCAPES)
def test_session_ids_that_could_escape_are_escaped_or_refused(bad: str) -> None:
    """A session id with a separator, '..', whitespace or non-ASCII becomes one plain entry of
    its directory (ADR 0016); one with NUL, empty or over 128 characters is refused."""
    if bad == "" or "\x00" in bad or len(bad) > 128:
        with pytest.raises(RolloutNameError):
            validate_session_id(bad)
        with pytest.raises(RolloutNameError):
            rollout_filename(NOW, bad)
        return
    name = rollout_filename(NOW, bad)
    base = Path("/r")
    assert (base / name).parent == base
    assert os.path.normpath(base / name) == str(base / name)
    assert "/" not in name
    assert "\\" not in name
    assert ".." not in name
    assert name.isascii()
    assert name.isprintable()
    assert " " not in name
    assert parse_rollout_filename(name).session_id == bad


@pytest.mark.parametrize("bad", [*ESCAPES, "a..b", "a.", "a/", "..a"])
def test_agent_names_that_could_escape_are_refused(bad: str) -> None:
    """An agent name with a separator, '..', NUL, whitespace or a trailing dot is refused."""
    with pytest.raises(RolloutNameError):
        validate_agent_name(bad)
    with pytest.raises(RolloutNameError):
        rollout_filename(NOW, "abc", bad)


@given(session_id=st.text(max_size=20), agent=st.none() | st.text(max_size=20))
def test_any_accepted_name_stays_in_its_directory(session_id: str, agent: str | None) -> None:
    """Whatever text is offered, an accepted file name is one plain entry of its directory."""
    try:
        name = rollout_filename(NOW, session_id, agent)
    except RolloutNameError:
        return
    assert "/" not in name
    assert "\\" not in name
    assert "\x00" not in name
    assert ".." not in name
    assert not name.startswith((".", "-"))
    assert name.isascii()
    base = Path("/r")
    assert (base / name).parent == base
    assert os.path.normpath(base / name) == str(base / name)
    assert parse_rollout_filename(name).session_id == session_id


@pytest.mark.parametrize("bad", ["../x", "/abs", "a/b", "..", "a\x00b"])
def test_writer_refuses_escaping_names_and_creates_nothing(tmp_path: Path, bad: str) -> None:
    """RolloutWriter.create refuses an escaping agent name (or a NUL id) before touching disk."""
    root = tmp_path / "root"
    root.mkdir()
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(RolloutNameError):
        RolloutWriter.create(root, session_id="fine", agent_name=bad)
    with pytest.raises(RolloutNameError):
        RolloutWriter.create(root, session_id="a\x00b")
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("key", ["../x", "/abs", "a/b", "..", "user_123", "org/42"])
def test_writer_keeps_escaping_session_keys_inside_the_root(tmp_path: Path, key: str) -> None:
    """A framework key with separators or dots makes exactly one file, directly in the root."""
    root = tmp_path / "root"
    with RolloutWriter.create(root, session_id=key) as w:
        w.stop(StopKind.PAUSED)
    assert [p.parent for p in tmp_path.rglob("*.jsonl")] == [root]
    assert w.path.parent == root
    assert parse_rollout_filename(w.path.name).session_id == key


@pytest.mark.parametrize(
    "name",
    [
        "../2026-12-02_16-00-00_abc.jsonl",
        "x/2026-12-02_16-00-00_abc.jsonl",
        "2026-12-02_16-00-00_../x.jsonl",
        "2026-12-02_16-00-00_abc_../../x.jsonl",
        "2026-12-02_16-00-00_abc_a/b.jsonl",
        "2026-12-02_16-00-00_abc\x00.jsonl",
    ],
)
def test_parse_refuses_names_with_path_parts(name: str) -> None:
    """A file name with path parts does not parse as a rollout name."""
    with pytest.raises(RolloutNameError):
        parse_rollout_filename(name)


# --- symlinks and odd files planted in the root --------------------------------------------------


def rollout_at(path: Path, session_id: str) -> Path:
    """Write a small stopped rollout of ``session_id`` at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(fault_rollout_lines(fault_conversation(), session_id=session_id)))
    return path


def test_create_does_not_follow_a_planted_symlink(tmp_path: Path) -> None:
    """A symlink planted at the name a new rollout will take is never written through."""
    root = tmp_path / "root"
    root.mkdir()
    target = tmp_path / "victim.txt"
    # Plant for this second and the next, so the writer's clock cannot slip past the trap.
    for s in (0, 1):
        stamp = datetime.fromtimestamp(datetime.now(UTC).timestamp() + s, UTC)
        (root / rollout_filename(stamp, "planted")).symlink_to(target)
    with pytest.raises(FileExistsError):
        RolloutWriter.create(root, session_id="planted")
    assert not target.exists()


def test_listing_does_not_descend_into_symlinked_directories(tmp_path: Path) -> None:
    """A symlink to a directory outside the root is not walked by the listing."""
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    rollout_at(outside / rollout_filename(NOW, "secret"), "secret")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    rollout_at(root / rollout_filename(NOW, "inside"), "inside")
    assert [e.session_id for e in list_sessions(root)] == ["inside"]


def test_listing_does_not_read_a_symlinked_file_outside_the_root(tmp_path: Path) -> None:
    """A *.jsonl symlink in the root that points outside it is not read as a session."""
    root = tmp_path / "root"
    root.mkdir()
    outside = rollout_at(tmp_path / "outside" / "x.jsonl", "secret")
    (root / rollout_filename(NOW, "planted")).symlink_to(outside)
    assert [e.session_id for e in list_sessions(root) if e.meta is not None] == []


def test_session_prefix_does_not_resolve_through_a_symlink_outside_the_root(
    tmp_path: Path,
) -> None:
    """A session-id prefix never resolves to a file that lies outside the root."""
    root = tmp_path / "root"
    root.mkdir()
    outside = rollout_at(tmp_path / "outside" / "x.jsonl", "secret")
    (root / rollout_filename(NOW, "planted")).symlink_to(outside)
    with pytest.raises(CliError):
        resolve_target(root, "planted")


def test_symlink_inside_the_root_is_fine(tmp_path: Path) -> None:
    """A symlink whose target lies inside the root is listed like the file itself."""
    root = tmp_path / "root"
    real = rollout_at(root / "store" / rollout_filename(NOW, "real"), "real")
    (root / rollout_filename(NOW, "alias")).symlink_to(real)
    ids = sorted(e.session_id or "" for e in list_sessions(root))
    assert "real" in ids


def test_fifo_and_devices_in_the_root_do_not_hang_the_listing(tmp_path: Path) -> None:
    """A FIFO or a device link named *.jsonl in the root is skipped, never opened and waited on."""
    root = tmp_path / "root"
    root.mkdir()
    os.mkfifo(root / rollout_filename(NOW, "fifo"))
    (root / rollout_filename(NOW, "zero")).symlink_to("/dev/zero")
    (root / rollout_filename(NOW, "urandom")).symlink_to("/dev/urandom")
    rollout_at(root / rollout_filename(NOW, "real"), "real")
    code = "import sys; from replay import list_sessions; print(len(list_sessions(sys.argv[1])))"
    # A subprocess with a timeout, so that a regression fails instead of hanging the suite.
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "1"


def test_read_stop_facts_of_a_device_does_not_run_away(tmp_path: Path) -> None:
    """Stop facts of a path that is not a regular file are refused before anything is read."""
    with pytest.raises(NotARegularFileError, match="character device"):
        read_stop_facts("/dev/null")


# --- the root and target arguments of the command -----------------------------------------------


@pytest.mark.parametrize("bad", ["a\x00b", "\x00"])
def test_root_with_nul_is_refused(bad: str) -> None:
    """A --root or ROLLOUT_HOME with a NUL character is refused with a clear error."""
    with pytest.raises(CliError, match="NUL"):
        resolve_root(bad, {})
    with pytest.raises(CliError, match="NUL"):
        resolve_root(None, {"ROLLOUT_HOME": bad})


@pytest.mark.parametrize(
    "arg",
    ["a\x00b", "\x00", "*", "?", "[a]", "$HOME", "a_b", "-", "a/../../outside", "root/abc", "ab c"],
)
def test_ids_that_are_not_sessions_never_name_a_file(
    tmp_path: Path, arg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An argument that is not a path is only ever compared with session ids, never opened."""
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "root"
    rollout_at(root / rollout_filename(NOW, "abc"), "abc")
    rollout_at(tmp_path / "outside.jsonl", "outside")
    # Real files named like some of the arguments: an id is still never taken for a path.
    rollout_at(tmp_path / "a_b", "a")
    rollout_at(tmp_path / "-", "dash")
    rollout_at(root / "abc", "abc")
    with pytest.raises(CliError):
        resolve_target(root, arg)


@pytest.mark.parametrize("arg", ["../outside.jsonl", "{tmp}/outside.jsonl", "./outside.jsonl"])
def test_an_explicit_path_is_read_wherever_it_is(
    tmp_path: Path, arg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path the user typed names that file, inside the root or not (issue 11, item 10)."""
    root = tmp_path / "root"
    rollout_at(root / rollout_filename(NOW, "abc"), "abc")
    outside = rollout_at(tmp_path / "outside.jsonl", "outside")
    monkeypatch.chdir(root if arg.startswith("..") else tmp_path)
    found = resolve_target(root, arg.replace("{tmp}", str(tmp_path)))
    assert found.resolve() == outside


def test_the_command_shows_a_file_outside_the_root(tmp_path: Path) -> None:
    """`rollout --root R show /elsewhere/x.jsonl` reads the file the user named."""
    root = tmp_path / "root"
    rollout_at(root / rollout_filename(NOW, "abc"), "abc")
    outside = rollout_at(tmp_path / "outside.jsonl", "outside")
    done = subprocess.run(
        [sys.executable, "-m", "replay", "--root", str(root), "show", str(outside)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "You are careful" in done.stdout


# --- bounded reads of huge or hostile files -------------------------------------------------------


class CountingFile(io.RawIOBase):
    """A read-only file wrapper that counts the bytes read and the largest single read."""

    def __init__(self, path: Path) -> None:
        self.f = open(path, "rb")  # noqa: SIM115 - closed by close()
        self.read_bytes = 0
        self.largest = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.f.seek(offset, whence)

    def tell(self) -> int:
        return self.f.tell()

    def fileno(self) -> int:
        return self.f.fileno()

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.read_bytes += len(data)
        self.largest = max(self.largest, len(data))
        return data

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        data = self.f.readline(-1 if size is None else size)
        self.read_bytes += len(data)
        self.largest = max(self.largest, len(data))
        return data

    def close(self) -> None:
        self.f.close()
        super().close()


def sparse(path: Path, head: bytes, size: int, tail: bytes = b"") -> Path:
    """A file of ``size`` bytes: ``head``, then a hole of zero bytes, then ``tail``."""
    with path.open("wb") as f:
        f.write(head)
        f.truncate(size - len(tail))
        f.seek(size - len(tail))
        f.write(tail)
    return path


def stop_facts_counted(path: Path, **kw: Any) -> tuple[Any, CountingFile]:
    """Stop facts read through a counting wrapper."""
    f = CountingFile(path)
    try:
        facts = stop_facts_from_file(f, path.stat().st_size, **kw)  # type: ignore[arg-type]
    finally:
        f.close()
    return facts, f


LINES = fault_rollout_lines(fault_conversation())
HEAD = LINES[0]
STOPPED_TAIL = b"\n" + b"".join(LINES[1:])


def test_stop_facts_of_a_stopped_session_read_only_its_tail(tmp_path: Path) -> None:
    """A cleanly stopped 200 MB session has its stop facts read from a few kilobytes."""
    path = sparse(tmp_path / "big.jsonl", HEAD, 200 * 1024 * 1024, STOPPED_TAIL)
    facts, f = stop_facts_counted(path)
    assert facts.kind == StopKind.PAUSED
    assert f.read_bytes <= 64 * 1024, f.read_bytes


@pytest.mark.parametrize("line_mib", [0.5, 1.5, 3, 100])
def test_stop_facts_of_a_hostile_tail_stay_within_the_budget(
    tmp_path: Path, line_mib: float
) -> None:
    """A last line of any length costs at most about twice the scan budget in bytes read."""
    budget = 2 * 1024 * 1024
    size = len(HEAD) + int(line_mib * 1024 * 1024)
    path = sparse(tmp_path / "hostile.jsonl", HEAD, size, b"x\n")
    facts, f = stop_facts_counted(path, scan_budget=budget)
    assert not facts.found
    assert f.read_bytes <= 2 * budget + 128 * 1024, f.read_bytes
    assert f.largest <= budget + 128 * 1024, f.largest


def test_listing_a_huge_headless_file_reads_a_bounded_amount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing a 300 MB file of one unterminated line reads at most the head limit and budget."""
    root = tmp_path / "root"
    root.mkdir()
    sparse(root / rollout_filename(NOW, "huge"), b"z", 300 * 1024 * 1024)
    reads: list[int] = []
    real_read, real_pread = os.read, os.pread

    # The listing reads through descriptors (its head with os.read and os.pread, its tail
    # through an FdSource's os.pread): the functions are counted where they are looked up.
    def counting_read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        reads.append(len(data))
        return data

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        reads.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counting_read)
    monkeypatch.setattr(os, "pread", counting_pread)
    [entry] = list_sessions(root)
    monkeypatch.undo()
    assert entry.meta is None
    assert not entry.stop.found
    assert reads, "the listing read nothing through os.read or os.pread"
    total = sum(reads)
    assert total <= 4 * 1024 * 1024 + DEFAULT_SCAN_BUDGET + 1024 * 1024, total


def test_stop_facts_resumed_then_killed_skip_without_decoding(tmp_path: Path) -> None:
    """A session resumed and killed is scanned back to its checkpoint within the budget."""
    msgs = [Message(role=Role.USER, content="y" * 10_000) for _ in range(200)]
    lines = fault_rollout_lines(fault_conversation())
    lines += fault_rollout_lines(msgs, checkpoint=False)[1:]
    path = tmp_path / "resumed.jsonl"
    path.write_bytes(b"".join(lines))
    facts, f = stop_facts_counted(path, scan_budget=256 * 1024)
    assert facts.found or facts.exhausted
    assert f.read_bytes <= 2 * 256 * 1024 + 128 * 1024


# --- no code execution near file content ------------------------------------------------------

FORBIDDEN = re.compile(
    r"\bpickle\b|\bcPickle\b|\bmarshal\b|\bshelve\b|\bdill\b|(?<![\w.])eval\(|(?<![\w.])exec\("
    r"|\bimportlib\b|__import__|\byaml\.(?:unsafe_)?load\b"
)


def test_no_pickle_eval_exec_or_dynamic_import_in_src() -> None:
    """No module under src/ uses pickle, marshal, eval, exec or a dynamic import."""
    hits = []
    for path in sorted(SRC.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if FORBIDDEN.search(code):
                hits.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert hits == []


def test_the_forbidden_pattern_catches_what_it_must() -> None:
    """The pattern of the source check matches each forbidden use and spares look-alikes."""
    for bad in (
        "import pickle",
        "x = eval(line)",
        "exec(code)",
        "importlib.import_module(name)",
        "__import__(name)",
        "marshal.loads(b)",
        "yaml.load(f)",
    ):
        assert FORBIDDEN.search(bad), bad
    for fine in ("retrieval(x)", "self.exec_(x)", "obj.eval(x)", "create_subprocess_exec(x)"):
        assert not FORBIDDEN.search(fine), fine


# --- a hostile file cannot drive the terminal ----------------------------------------------------

# OSC 52 (write the clipboard, ended by ST or BEL), clear screen, a colour, an 8-bit CSI, and a
# carriage return with backspaces that would overwrite what was printed before.
EVIL = "A\x1b]52;c;SGVsbG8=\x1b\\B\x1b]0;title\x07C\x1b[2J\x1b[31mD\x9b31mE\r\x08F"
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def evil_root(tmp_path: Path) -> tuple[Path, Path]:
    """A root with one rollout whose text fields, meta included, carry terminal controls."""
    from ledger import Reasoning, ToolCall

    conv = [
        Message(role=Role.USER, content=EVIL),
        Message(
            role=Role.ASSISTANT,
            content=EVIL,
            reasoning=(Reasoning(text=EVIL),),
            tool_calls=(ToolCall(id="c1", name=EVIL, arguments=EVIL),),
        ),
        Message(role=Role.TOOL, tool_call_id="c1", content=EVIL, is_error=True),
    ]
    root = tmp_path / "root"
    path = root / rollout_filename(NOW, "evil")
    root.mkdir()
    lines = fault_rollout_lines(conv, session_id="evil")
    escaped = EVIL.encode("unicode_escape").decode().replace("\\x", "\\u00")
    lines[0] = lines[0].replace(
        b'"agent_name":"faulty"', f'"agent_name":"{escaped}","model":"{escaped}"'.encode()
    )
    path.write_bytes(b"".join(lines))
    return root, path


COMMANDS = (
    ["show"],
    ["show", "--full"],
    ["show", "--raw"],
    ["ls"],
    ["tree"],
    ["replay"],
    ["verify"],
)


@pytest.mark.parametrize(
    "args",
    [pytest.param(args, id=" ".join(args)) for args in COMMANDS],
)
def test_the_command_never_prints_control_characters_from_a_file(
    tmp_path: Path, args: list[str]
) -> None:
    """No command copies control characters (ESC, CSI, OSC, BEL...) from a rollout to the screen."""
    from click.testing import CliRunner

    from replay.cli import cli

    root, path = evil_root(tmp_path)
    target = [str(path)] if args[0] in {"show", "replay", "verify"} else []
    result = CliRunner().invoke(cli, ["--root", str(root), *args, *target])
    assert result.exit_code in (0, 1), result.output
    assert CONTROLS.findall(result.output) == []


@pytest.mark.parametrize(
    ("session_id", "agent"),
    [("../../evil", "a/b"), ("x\\u0000y", ".."), ("ok", "z" * 100_000), ("", "/etc")],
)
def test_hostile_identity_in_session_meta_is_listed_not_trusted(
    tmp_path: Path, session_id: str, agent: str
) -> None:
    """Identity values read from a file (never validated by a writer) only ever label a session.

    The listing, the tree and the command take them as text: they are flagged against the file
    name, never joined into a path, and nothing is created or read outside the root.
    """
    from click.testing import CliRunner

    from replay.cli import cli

    root = tmp_path / "root"
    root.mkdir()
    lines = fault_rollout_lines(fault_conversation(), session_id="PLACEHOLDER")
    head = lines[0].replace(b"PLACEHOLDER", session_id.encode())
    lines[0] = head.replace(
        b'"agent_name":"faulty"',
        b'"agent_name":"' + agent.encode() + b'","parent_session_id":"../../p","delegation_id":"d"',
    )
    (root / rollout_filename(NOW, "hostile")).write_bytes(b"".join(lines))
    before = sorted(tmp_path.rglob("*"))
    [entry] = list_sessions(root)
    assert entry.path.parent == root
    for args in (["ls"], ["ls", "--json"], ["tree"], ["tree", "--json"], ["verify", "--all"]):
        result = CliRunner().invoke(cli, ["--root", str(root), *args])
        assert result.exit_code in (0, 1), (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), args
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    "char", ["\u202e", "\u2066", "\u2069", "\u2028", "\u2029", "\u200b", "\u061c", "\x1b", "\x9b"]
)
def test_format_and_separator_characters_never_reach_the_terminal(char: str) -> None:
    """Bidi overrides and isolates, line separators, zero-width and control characters from a
    file are shown as escapes by the terminal rendering, as by the export and the hand-off."""
    from replay.cli._render import json_safe, terminal_safe
    from replay.display import visible

    text = f"report{char}fdp.exe\tok\n"
    for shown in (terminal_safe(text), visible(text)):
        assert char not in shown
        assert "\t" in shown
        assert "\n" in shown
    json_text = json_safe('"' + text.replace("\n", "\\n").replace("\t", "\\t") + '"')
    assert char not in json_text
    import json

    assert json.loads(json_text) == text
