"""What an exported page shows: roles, folded reasoning, tool exchanges, stops, links, safety."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import pytest

from export_pages import html_shape, markdown_shape
from ledger import ErrorDetail, Message, Reasoning, StopKind, ToolCall
from replay import list_sessions, read_replay
from replay.export import ExportFormat, export, export_filename, to_html, to_markdown, visible
from replay.export._style import CSP, CSS
from rollout_files import RolloutBuilder, conversation


def _paused(tmp_path: Path, *messages: Message, **kw: object) -> Path:
    builder = RolloutBuilder(tmp_path, **kw)  # type: ignore[arg-type]
    return builder.add(*messages).stop(StopKind.PAUSED, "waiting").write()


def _block(page: str, start: str) -> str:
    """The element of ``page`` that opens with ``start``, up to its own end tag."""
    i = page.index(start)
    tag = re.match(r"<(\w+)", start)
    assert tag is not None
    depth = 0
    for m in re.finditer(rf"<(/?){tag[1]}[\s>]", page[i:]):
        depth += -1 if m[1] else 1
        if depth == 0:
            return page[i : i + m.end()]
    raise AssertionError(f"{start} is not closed")


def test_the_html_transcript_shows_every_message_with_its_role(tmp_path: Path) -> None:
    """Each message appears once, numbered, with its role and its text, in file order."""
    rep = read_replay(_paused(tmp_path, *conversation(2)), whole_file=True)
    page = to_html(rep)
    assert page.startswith("<!DOCTYPE html>")
    assert '<article class="msg role-system" id="m1">' in page
    assert '<article class="msg role-user" id="m2">' in page
    positions = [page.index(t) for t in ("You are a careful agent.", "Please look", "Done.")]
    assert positions == sorted(positions)
    # system, user, two assistant calls and the answer; the tool outputs sit under their calls
    assert page.count("<article ") == 5


def test_tool_outputs_sit_beside_their_call_not_in_place(tmp_path: Path) -> None:
    """A tool call shows its arguments and, in the same block, the output that answered it."""
    rep = read_replay(_paused(tmp_path, *conversation(2)), whole_file=True)
    page = to_html(rep)
    call = _block(page, '<div class="call" id="m3-call1">')
    assert "<code>shell</code>" in call
    assert "<code>call_0</code>" in call
    assert "{&quot;cmd&quot;: &quot;ls&quot;}" in call
    assert '<div class="output" id="m4">' in call
    assert "file0.txt" in call
    assert 'id="m4"' not in page.replace('<div class="output" id="m4">', "")
    md = to_markdown(rep)
    assert "**→ tool call `shell`** (id `call_0`)" in md
    assert md.index("file0.txt") > md.index('{"cmd": "ls"}')


def test_reasoning_is_folded_in_a_closed_details(tmp_path: Path) -> None:
    """Reasoning sits in a <details> without `open`, labelled with what it is; Markdown too."""
    thought = Reasoning(text="Check the tests first.", signature="sig", summary=("tests",))
    rep = read_replay(
        _paused(tmp_path, Message(role="assistant", content="ok", reasoning=(thought,))),
        whole_file=True,
    )
    page = to_html(rep)
    details = _block(page, '<details class="reasoning">')
    assert '<details class="reasoning"><summary>reasoning (thinking, 22 characters' in details
    assert "signed" in details
    assert "<pre>Check the tests first.</pre>" in details
    assert " open" not in details.split(">", 1)[0]
    md = to_markdown(rep)
    assert "<details>\n<summary>reasoning (thinking, 22 characters" in md
    assert "```text\nCheck the tests first.\n```" in md


def test_superseded_missing_and_orphan_outputs_are_marked(tmp_path: Path) -> None:
    """The last of two outputs counts, a call without output says so, an orphan is flagged."""
    msgs = (
        Message(
            role="assistant",
            tool_calls=(ToolCall(id="c1", name="run"), ToolCall(id="c2", name="wait")),
        ),
        Message(role="tool", tool_call_id="c1", content="cancelled", is_error=True),
        Message(role="tool", tool_call_id="c1", content="real result"),
        Message(role="tool", tool_call_id="ghost", content="who asked?"),
    )
    rep = read_replay(_paused(tmp_path, *msgs), whole_file=True)
    page = to_html(rep)
    first = _block(page, '<div class="call" id="m1-call1">')
    assert '<div class="output error superseded" id="m2">' in first
    assert "superseded output (message #2, an error)" in first
    assert '<div class="output" id="m3">' in first
    assert first.index("cancelled") < first.index("real result")
    assert "no output recorded" in _block(page, '<div class="call" id="m1-call2">')
    orphan = _block(page, '<article class="msg role-tool" id="m4">')
    assert "orphan output" in orphan
    md = to_markdown(rep)
    assert "*← superseded output (message #2, an error):*" in md
    assert "**no output recorded** (interrupted?)" in md
    assert "### #4 tool" in md
    assert "**orphan output**" in md


def test_the_header_has_identity_stop_and_resume_decision(tmp_path: Path) -> None:
    """Session id, agent, stop kind and reason, and the resume decision with its reason."""
    rep = read_replay(
        _paused(tmp_path, *conversation(1), session_id="s-42", agent_name="coder"),
        whole_file=True,
    )
    page = to_html(rep)
    assert "<title>Session s-42 · rollout</title>" in page
    assert "<dt>agent</dt><dd><code>coder</code></dd>" in page
    assert "<dt>stop</dt><dd>paused</dd>" in page
    assert "<dt>stop reason</dt><dd>waiting</dd>" in page
    assert "<dt>resume</dt><dd>yes: paused: replayable as-is</dd>" in page
    assert "<dt>verified</dt><dd>yes:" in page
    assert str(tmp_path) not in page  # the file's name only, never where it lives
    md = to_markdown(rep)
    assert md.startswith("# Session `s-42`\n")
    assert "- resume: yes: paused: replayable as-is\n" in md


def test_an_error_stop_shows_its_error_and_traceback(tmp_path: Path) -> None:
    """A failed session shows the error and its traceback (folded), and why it is not resumable."""
    path = (
        RolloutBuilder(tmp_path)
        .add(*conversation(1))
        .checkpoint()
        .terminal(
            StopKind.FAILED,
            "tool crashed",
            ErrorDetail(type="OSError", message="disk", traceback="Traceback: boom"),
        )
        .write()
    )
    page = to_html(read_replay(path, whole_file=True))
    assert "<dt>error</dt><dd>OSError: disk</dd>" in page
    assert (
        '<details class="traceback"><summary>traceback</summary><pre>Traceback: boom</pre>' in page
    )
    assert "<dt>resume</dt><dd>no: failed: hand off" in page


def test_degradations_are_listed_with_their_lines(tmp_path: Path) -> None:
    """A damaged line is listed with its line number and kind; the page says it is unverified."""
    path = (
        RolloutBuilder(tmp_path)
        .add(*conversation(1))
        .raw(b"{not json\n")
        .stop(StopKind.PAUSED)
        .write()
    )
    rep = read_replay(path, whole_file=True)
    assert rep.degraded
    page = to_html(rep)
    section = _block(page, '<section id="degraded">')
    for d in rep.degraded:
        assert f"<code>{d.kind}</code>" in section
    assert f"line {rep.degraded[0].line}: " in section
    md = to_markdown(rep)
    assert "## What could not be restored exactly" in md
    assert f"(`{rep.degraded[0].kind}`)" in md


def test_a_compaction_is_shown_where_the_transcript_starts_and_linked(tmp_path: Path) -> None:
    """After a compaction the transcript opens with a note (line included) the degradation links."""
    summary = [Message(role="user", content="Summary so far: tests pass.")]
    path = (
        RolloutBuilder(tmp_path)
        .add(*conversation(1))
        .compacted(summary, "earlier work")
        .add(Message(role="assistant", content="Carrying on."))
        .stop(StopKind.PAUSED)
        .write()
    )
    rep = read_replay(path, whole_file=True)
    page = to_html(rep)
    note = _block(page, '<p class="note" id="compaction">')
    assert "Compacted 1 time(s)" in note
    assert "(line 7)" in note
    assert page.index('id="compaction"') < page.index("Summary so far")
    assert '<a href="#compaction">(the compaction)</a>' in _block(page, '<section id="degraded">')
    assert "> Compacted 1 time\\(s\\)" not in to_markdown(rep)
    assert "> Compacted 1 time(s). The conversation below" in to_markdown(rep)


def _delegation(tmp_path: Path) -> tuple[Path, Path]:
    call = ToolCall(id="toolu_7", name="delegate", arguments='{"agent": "tester"}')
    parent = _paused(
        tmp_path,
        Message(role="assistant", tool_calls=(call,)),
        Message(role="tool", tool_call_id="toolu_7", content="tests pass"),
        session_id="lead-1",
        agent_name="lead",
    )
    child = _paused(
        tmp_path,
        Message(role="user", content="Run the tests."),
        session_id="kid-1",
        agent_name="tester",
        parent_session_id="lead-1",
        delegation_id="toolu_7",
    )
    return parent, child


def test_a_delegated_child_is_linked_at_the_call_that_delegated(tmp_path: Path) -> None:
    """Given the listing, the parent's page links the child's export beside the delegating call."""
    parent, _ = _delegation(tmp_path)
    entries = list_sessions(tmp_path)
    page = to_html(read_replay(parent, whole_file=True), sessions=entries)
    call = _block(page, '<div class="call" id="m1-call1">')
    assert (
        '<p class="child">delegated to session <a href="kid-1.html"><code>kid-1</code></a>' in call
    )
    assert "(<code>tester</code>): paused" in call
    assert 'id="children"' not in page
    md = to_markdown(read_replay(parent, whole_file=True), sessions=entries)
    assert "- delegated to session [`kid-1`](kid-1.md) (`tester`): paused" in md


def test_a_child_page_links_its_parent_and_names_the_call(tmp_path: Path) -> None:
    """A child's page names its parent session (linked) and the delegating tool call's id."""
    _, child = _delegation(tmp_path)
    rep = read_replay(child, whole_file=True)
    page = to_html(rep)
    assert '<dt>delegated by session</dt><dd><a href="lead-1.html"><code>lead-1</code></a>' in page
    assert "<dt>delegating tool call</dt><dd><code>toolu_7</code></dd>" in page
    assert "<dt>coordinates</dt><dd>complete" in page
    unlinked = to_html(rep, session_links=False)
    assert "<a href" not in unlinked.replace('<a class="num" href', "")
    assert "- delegated by session: [`lead-1`](lead-1.md)\n" in to_markdown(rep)


def test_a_child_without_coordinates_says_so(tmp_path: Path) -> None:
    """A child with a parent but no delegation id is shown as missing its coordinates."""
    path = _paused(tmp_path, *conversation(1), parent_session_id="lead-1")
    page = to_html(read_replay(path, whole_file=True))
    assert "<dt>coordinates</dt><dd>missing:" in page
    assert "<dt>resume</dt><dd>no: a delegated child without its coordinates" in page


def test_children_whose_call_is_not_shown_get_a_section(tmp_path: Path) -> None:
    """A child whose delegating call is not in the transcript is listed in a section of its own."""
    parent = _paused(tmp_path, *conversation(1), session_id="lead-2")
    _paused(tmp_path, session_id="kid-2", parent_session_id="lead-2", delegation_id="gone")
    _paused(tmp_path, session_id="kid-3", parent_session_id="someone-else", delegation_id="x")
    page = to_html(read_replay(parent, whole_file=True), sessions=list_sessions(tmp_path))
    section = _block(page, '<section id="children">')
    assert "kid-2" in section
    assert "kid-3" not in page


def test_a_capped_replay_keeps_the_file_numbering(tmp_path: Path) -> None:
    """With a message cap the page numbers messages as in the whole conversation."""
    rep = read_replay(_paused(tmp_path, *conversation(2)), max_messages=2, whole_file=True)
    page = to_html(rep)
    assert re.findall(r'<article [^>]* id="m(\d+)"', page) == ["6", "7"]
    assert "<dt>messages</dt><dd>2 of 7</dd>" in page


def test_the_head_pins_a_strict_policy_and_the_stylesheet_hash(tmp_path: Path) -> None:
    """The CSP comes first, allows no script or fetch, and names the one stylesheet by hash."""
    page = to_html(read_replay(_paused(tmp_path, *conversation(1)), whole_file=True))
    head = page.split("</head>", 1)[0]
    assert head.index("Content-Security-Policy") < head.index("<title>") < head.index("<style>")
    assert "default-src 'none'" in CSP
    assert "img-src data:" in CSP
    assert "script-src" not in CSP
    digest = base64.b64encode(hashlib.sha384(CSS.encode()).digest()).decode()
    assert f"style-src 'sha384-{digest}'" in CSP
    assert f"<style>{CSS}</style>" in page
    assert "<script" not in page
    assert "<link" not in page
    assert "http://" not in page
    assert "https://" not in page
    assert "url(" not in CSS
    assert "@import" not in CSS


def test_markdown_fences_are_longer_than_any_backtick_run_inside(tmp_path: Path) -> None:
    """Text holding fences cannot close its block: the fence is longer than its longest run."""
    text = "before\n```\n# not a heading\n``````\nafter"
    rep = read_replay(_paused(tmp_path, Message(role="user", content=text)), whole_file=True)
    md = to_markdown(rep)
    assert f"```````text\n{text}\n```````\n" in md
    headings = [t for t in markdown_shape(md) if t[0] == "heading_open"]
    plain = read_replay(_paused(tmp_path / "p", Message(role="user", content="x")), whole_file=True)
    assert headings == [t for t in markdown_shape(to_markdown(plain)) if t[0] == "heading_open"]


def test_control_characters_are_shown_not_sent(tmp_path: Path) -> None:
    """ESC, C1, NUL, CR and bidi overrides appear as escapes in both formats; tab and LF stay."""
    text = "red \x1b[31m csi \x9b2J nul \x00 cr \r rlo \u202e tab\tnl\n"
    rep = read_replay(_paused(tmp_path, Message(role="user", content=text)), whole_file=True)
    for out in (to_html(rep), to_markdown(rep)):
        assert "\\x1b[31m" in out
        assert "\\x9b2J" in out
        assert "\\x00" in out
        assert "\\x0d" in out
        assert "\\u202e" in out
        assert "tab\tnl\n" in out
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", out)


def test_visible_escapes_lone_surrogates_so_the_page_encodes() -> None:
    """A lone surrogate (possible in memory) is written as an escape; the rest is untouched."""
    assert visible("a\ud800b\udfffc") == "a\\ud800b\\udfffc"
    assert visible("plain é 漢字 🎉\t\n") == "plain é 漢字 🎉\t\n"
    visible("x\ud83d\ude00").encode("utf-8")


def test_a_huge_line_is_on_the_page_whole(tmp_path: Path) -> None:
    """A line of two megabytes is exported whole (the stylesheet wraps it), never cut."""
    line = "A" * (2 * 1024 * 1024)
    msgs = (
        Message(role="assistant", tool_calls=(ToolCall(id="c", name="cat"),)),
        Message(role="tool", tool_call_id="c", content=line),
    )
    rep = read_replay(_paused(tmp_path, *msgs), whole_file=True)
    assert f"<pre>{line}</pre>" in to_html(rep)
    assert f"```text\n{line}\n```" in to_markdown(rep)


def test_export_dispatches_by_format_and_refuses_others(tmp_path: Path) -> None:
    """`export` gives what the format's function gives; an unknown format names the choices."""
    rep = read_replay(_paused(tmp_path, *conversation(1)), whole_file=True)
    assert export(rep, "html") == to_html(rep)
    assert export(rep, ExportFormat.MARKDOWN) == to_markdown(rep)
    with pytest.raises(ValueError, match="unknown export format 'pdf': use one of 'md', 'html'"):
        export(rep, "pdf")


@pytest.mark.parametrize(
    ("session_id", "expected"),
    [("kid-1", "kid-1.html"), ("019a-ff", "019a-ff.html")],
)
def test_export_filename_keeps_a_valid_session_id(session_id: str, expected: str) -> None:
    """A session id that follows the naming rule names its export file as it is."""
    assert export_filename(session_id, "html") == expected


@pytest.mark.parametrize("hostile", ["../etc/passwd", "javascript:alert(1)", "", "a/b", "\ud800"])
def test_export_filename_of_a_hostile_id_is_a_plain_name(hostile: str) -> None:
    """Any other id becomes `session-<digest>`: no path part, no scheme, stable."""
    name = export_filename(hostile, "md")
    assert re.fullmatch(r"session-[0-9a-f]{16}\.md", name)
    assert export_filename(hostile, "md") == name


def test_both_formats_show_the_same_messages(tmp_path: Path) -> None:
    """The Markdown and the HTML number the same messages in the same order."""
    rep = read_replay(_paused(tmp_path, *conversation(3)), whole_file=True)
    html_numbers = re.findall(r'<article class="msg [^"]*" id="m(\d+)">', to_html(rep))
    md_numbers = re.findall(r"^### #(\d+) ", to_markdown(rep), re.MULTILINE)
    assert html_numbers == md_numbers
    assert html_shape(to_html(rep)).events  # parses


def test_a_file_without_session_meta_still_exports(tmp_path: Path) -> None:
    """With no session_meta the page says the session is unknown and lists why."""
    path = RolloutBuilder(tmp_path, meta=False).add(*conversation(1)).stop(StopKind.PAUSED).write()
    rep = read_replay(path, whole_file=True)
    page = to_html(rep)
    assert "<title>Session unknown session · rollout</title>" in page
    assert "<dt>session</dt><dd>unknown: the file has no session_meta record</dd>" in page
    assert "<code>missing_meta</code>" in page
    assert to_markdown(rep).startswith("# Session (unknown)\n")
