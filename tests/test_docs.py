"""The README and docs/ stay true: their examples run, their commands parse, their links resolve.

Every ```python block is run on its own in a fresh working directory with ROLLOUT_HOME pointing
at a fresh directory; every `rollout ...` line of a ```sh block must parse against the real
command; every ```jsonl block must be real rollout lines; every relative link must exist.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from ledger import decode_record, encode_record
from replay import read_replay
from replay.cli import cli

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
_FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_SHELL_WORDS = frozenset({">", ">>", "2>", "|", "&&", "||", ";"})
_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def blocks(info: str) -> list[tuple[str, str]]:
    """``(where, body)`` for every fenced block whose info string is ``info``, in every page."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            if m["info"].strip() == info:
                line = text.count("\n", 0, m.start()) + 1
                found.append((f"{page.relative_to(REPO)}:{line}", m["body"]))
    return found


def _ids(items: list[tuple[str, str]]) -> list[str]:
    return [where for where, _ in items]


PYTHON = blocks("python")
SHELL = blocks("sh")
JSONL = blocks("jsonl")


def test_every_concept_has_a_page_with_examples() -> None:
    """docs/ has a page per concept, and each page has at least one executed example."""
    concepts = ("format", "writer", "replay", "eligibility", "delegation", "export", "providers")
    for name in (*concepts, "history"):
        page = f"docs/{name}.md"
        assert (REPO / page).is_file(), page
        assert any(where.startswith(page + ":") for where, _ in PYTHON), page


def test_readme_starts_with_the_two_setup_commands() -> None:
    """The README opens with its title and one block holding exactly `make demo` and `make test`."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ")
    assert lines[1] == ""
    assert lines[2] == "```sh"
    assert lines[3].startswith("make demo")
    assert lines[4].startswith("make test")
    assert lines[5] == "```"


@pytest.mark.parametrize(("where", "code"), PYTHON, ids=_ids(PYTHON))
def test_python_example_runs(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example runs to the end, its assertions included, in a fresh directory."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("ROLLOUT_HOME", str(tmp_path / "rollout-home"))
    exec(compile(code, where, "exec"), {"__name__": "__docs__"})  # noqa: S102 - our own docs


def _commands(body: str) -> list[list[str]]:
    out = []
    for raw in body.splitlines():
        line = raw.split("  #", 1)[0].strip()
        if line.startswith("rollout "):
            words = shlex.split(line)[1:]
            # What follows a redirection or a pipe belongs to the shell, not to the command.
            cut = next((i for i, w in enumerate(words) if w in _SHELL_WORDS), len(words))
            out.append(words[:cut])
    return out


def parse_command(argv: list[str]) -> str | None:
    """Parse ``rollout ARGV`` with the real command without running it; return the subcommand.

    A line with global options only (``rollout --help``) names no subcommand: ``None``.
    """
    i, global_opts = 0, []
    while i < len(argv) and argv[i].startswith("-"):
        global_opts.append(argv[i])
        if argv[i] == "--root":
            i += 1
            global_opts.append(argv[i])
        i += 1
    if i == len(argv):
        assert set(global_opts) <= {"--help", "-h", "--version"}, argv
        return None
    name, rest = argv[i], argv[i + 1 :]
    sub = cli.commands.get(name)
    if sub is None:
        raise click.UsageError(f"no such command {name!r}")
    with cli.make_context("rollout", [*global_opts, name]) as ctx:
        sub.make_context(name, rest, parent=ctx)
    return name


@pytest.mark.parametrize(("where", "body"), SHELL, ids=_ids(SHELL))
def test_shell_example_commands_parse(where: str, body: str) -> None:
    """Each `rollout ...` line names a real subcommand with real options and valid arguments."""
    for argv in _commands(body):
        parse_command(argv)


def test_shell_examples_name_every_subcommand() -> None:
    """Together the shell examples show every subcommand, so the check above covers them all."""
    named = {parse_command(argv) for _, body in SHELL for argv in _commands(body)}
    assert named - {None} == set(cli.commands)


def test_the_parse_check_rejects_a_made_up_option() -> None:
    """A shell example with an option the command does not have would fail the check."""
    with pytest.raises(click.UsageError):
        parse_command(["ls", "--no-such-option"])


@pytest.mark.parametrize(("where", "body"), JSONL, ids=_ids(JSONL))
def test_jsonl_example_is_real_rollout_lines(where: str, body: str, tmp_path: Path) -> None:
    """Each line is a canonical record; a whole file (from session_meta) replays verified."""
    lines = body.splitlines()
    for line in lines:
        assert encode_record(decode_record(line)) == line.encode(), f"{where}: {line}"  # type: ignore[arg-type]
    if lines and lines[0].startswith('{"type":"session_meta"'):
        path = tmp_path / "example.jsonl"
        path.write_text(body, encoding="utf-8")
        rep = read_replay(path)
        assert rep.verified, f"{where}: {rep.degraded}"
        assert rep.degraded == ()


def test_relative_links_resolve() -> None:
    """Every relative link in the README and docs/ points at a file that exists."""
    broken = []
    for page in PAGES:
        for m in _LINK.finditer(page.read_text(encoding="utf-8")):
            target = m["target"].split("#", 1)[0]
            if not target or "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)}: {m['target']}")
    assert broken == []


def test_the_import_page_runs_rollout_import_on_a_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/import.md's `rollout import ... tests/data/import/...` line runs on the committed
    samples (from the source checkout) and accounts for every line."""
    import json

    from click.testing import CliRunner

    sh = [body for where, body in SHELL if where.startswith("docs/import.md:")]
    (argv,) = [c for body in sh for c in _commands(body) if "tests/data/import/codex" in c]
    argv = [str(tmp_path / "root") if a == "/tmp/imported" else a for a in argv]
    monkeypatch.chdir(REPO)
    result = CliRunner().invoke(cli, argv, prog_name="rollout")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["unaccounted"] == 0
    assert doc["files"] == 4
    assert read_replay(doc["rollouts"][0]).verified
