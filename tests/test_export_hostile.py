"""A rollout is hostile input: its text changes the words of an exported page, never its structure.

The HTML page is parsed with ``html.parser`` and the Markdown with markdown-it (CommonMark, with
GitHub's tables and strikethrough): for any text in every field, the elements, attributes and
Markdown tokens are the ones a page of plain placeholders has.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from export_pages import every_field_replay
from replay.export import to_html, to_markdown
from strategies import HOSTILE_PIECES, hostile_text

_HREF = re.compile(r"#(m\d+(-call\d+)?|compaction)|[A-Za-z0-9][A-Za-z0-9-]*\.html")
_SRC = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]*={0,2}")
_ID = re.compile(r"m\d+(-call\d+)?|compaction|degraded|transcript|children")
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_DETAILS_HTML = re.compile(r"<details>\n<summary>[^<>\n]*</summary>\n|</details>\n")


class _Shape(HTMLParser):
    """Records the element structure of a page and every attribute value, ignoring text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple[str, ...]] = []
        self.attributes: list[tuple[str, str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(("start", tag, *sorted(name for name, _ in attrs)))
        self.attributes.extend((tag, name, value) for name, value in attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        self.events.append(("end", tag))

    def handle_comment(self, data: str) -> None:
        self.events.append(("comment", data))

    def handle_decl(self, decl: str) -> None:
        self.events.append(("decl", decl))

    def handle_pi(self, data: str) -> None:
        self.events.append(("pi", data))

    def unknown_decl(self, data: str) -> None:
        self.events.append(("unknown_decl", data))


def html_shape(page: str) -> _Shape:
    """The parsed structure of an HTML page."""
    shape = _Shape()
    shape.feed(page)
    shape.close()
    return shape


def markdown_shape(text: str) -> list[tuple[object, ...]]:
    """The token structure of a Markdown text: block tokens, and each inline token's children."""
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    out: list[tuple[object, ...]] = []

    def kinds(children: list[Token]) -> tuple[str, ...]:
        merged: list[str] = []
        for c in children:
            kind = "text" if c.type in ("text", "text_special") else c.type
            if not (merged and merged[-1] == kind == "text"):
                merged.append(kind)
        return tuple(merged)

    for tok in md.parse(text):
        if tok.type == "html_block":
            assert _DETAILS_HTML.fullmatch(tok.content), tok.content
        children = kinds(tok.children) if tok.children else ()
        out.append((tok.type, tok.tag, tok.nesting, tok.level, tok.info, children))
    return out


def _placeholder(key: str) -> str:
    return "x"


def _check_attributes(shape: _Shape) -> None:
    for tag, name, value in shape.attributes:
        assert value is not None, (tag, name)
        if name == "href":
            assert _HREF.fullmatch(value), value
        elif name == "src":
            assert tag == "img"
            assert _SRC.fullmatch(value), value
        elif name == "id":
            assert _ID.fullmatch(value), value
        elif name == "alt":
            assert tag == "img"
        else:
            assert name in {"class", "lang", "charset", "http-equiv", "content", "name"}, name


@given(st.data())
def test_any_text_in_every_field_leaves_the_html_structure_unchanged(data: st.DataObject) -> None:
    """Whatever text fills the fields, the page parses to the placeholder page's elements."""
    plain, plain_children = every_field_replay(_placeholder)
    hostile, children = every_field_replay(lambda key: data.draw(hostile_text, label=key))
    expected = html_shape(to_html(plain, sessions=plain_children))
    page = to_html(hostile, sessions=children)
    shape = html_shape(page)
    assert shape.events == expected.events
    _check_attributes(shape)
    assert not _RAW_CONTROL.search(page)
    page.encode("utf-8")


@given(st.data())
def test_any_text_in_every_field_leaves_the_markdown_structure_unchanged(
    data: st.DataObject,
) -> None:
    """Whatever text fills the fields, the Markdown parses to the placeholder page's tokens."""
    plain, plain_children = every_field_replay(_placeholder)
    hostile, children = every_field_replay(lambda key: data.draw(hostile_text, label=key))
    text = to_markdown(hostile, sessions=children)
    assert markdown_shape(text) == markdown_shape(to_markdown(plain, sessions=plain_children))
    assert not _RAW_CONTROL.search(text)
    text.encode("utf-8")


def test_every_hostile_piece_at_once_in_every_field() -> None:
    """All the hostile pieces together in each field: same structure, nothing raw gets through."""
    everything = "".join(HOSTILE_PIECES)
    plain, plain_children = every_field_replay(_placeholder)
    hostile, children = every_field_replay(lambda key: everything)
    page = to_html(hostile, sessions=children)
    shape = html_shape(page)
    assert shape.events == html_shape(to_html(plain, sessions=plain_children)).events
    _check_attributes(shape)
    lowered = page.lower()
    assert "<script" not in lowered
    assert "<img" not in lowered
    assert lowered.count("</style>") == 1
    assert "javascript:" not in re.findall(r'href="([^"]*)"', lowered)
    assert "\x1b" not in page
    assert "\\x1b" in page
    assert "\\u202e" in page
    assert "\\ud800" in page
    md = to_markdown(hostile, sessions=children)
    assert markdown_shape(md) == markdown_shape(to_markdown(plain, sessions=plain_children))


def test_the_shape_checks_catch_an_injected_element() -> None:
    """The structure comparison is not blind: raw markup or a forged heading changes it."""
    assert html_shape("<p>x</p>").events != html_shape("<p><script>x</script></p>").events
    assert markdown_shape("*a*\n") != markdown_shape("*a*\n# b\n")
    assert markdown_shape("```text\nx\n```\n") != markdown_shape("```text\n```\nx\n```\n")
