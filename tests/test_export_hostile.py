"""A rollout is hostile input: its text changes the words of an exported page, never its structure.

The HTML page is parsed with ``html.parser`` and the Markdown with markdown-it (CommonMark, with
GitHub's tables and strikethrough): for any text in every field, the elements, attributes and
Markdown tokens are the ones a page of plain placeholders has.
"""

from __future__ import annotations

import re

from hypothesis import given

from export_pages import TEXT_KEYS, Shape, every_field_replay, html_shape, markdown_shape
from replay.export import to_html, to_markdown
from strategies import HOSTILE_PIECES, field_texts

_HREF = re.compile(r"#(m\d+(-call\d+)?|compaction)|[A-Za-z0-9][A-Za-z0-9-]*\.html")
_SRC = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]*={0,2}")
_ID = re.compile(r"m\d+(-call\d+)?|compaction|degraded|transcript|children")
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _placeholder(key: str) -> str:
    return "x"


def _check_attributes(shape: Shape) -> None:
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


@given(field_texts(TEXT_KEYS))
def test_any_text_in_every_field_leaves_the_html_structure_unchanged(texts: dict[str, str]) -> None:
    """Whatever text fills the fields, the page parses to the placeholder page's elements."""
    plain, plain_children = every_field_replay(_placeholder)
    hostile, children = every_field_replay(lambda key: texts.get(key, "x"))
    expected = html_shape(to_html(plain, sessions=plain_children))
    page = to_html(hostile, sessions=children)
    shape = html_shape(page)
    assert shape.events == expected.events
    _check_attributes(shape)
    assert not _RAW_CONTROL.search(page)
    page.encode("utf-8")


@given(field_texts(TEXT_KEYS))
def test_any_text_in_every_field_leaves_the_markdown_structure_unchanged(
    texts: dict[str, str],
) -> None:
    """Whatever text fills the fields, the Markdown parses to the placeholder page's tokens."""
    plain, plain_children = every_field_replay(_placeholder)
    hostile, children = every_field_replay(lambda key: texts.get(key, "x"))
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
    assert lowered.count("<img ") == 1  # the one checked PNG of the replay
    assert lowered.count("</style>") == 1
    assert "javascript:" not in re.findall(r'href="([^"]*)"', lowered)
    assert "\x1b" not in page
    assert "\\x1b" in page
    assert "\\u202e" in page
    md = to_markdown(hostile, sessions=children)
    assert markdown_shape(md) == markdown_shape(to_markdown(plain, sessions=plain_children))


def test_the_shape_checks_catch_an_injected_element() -> None:
    """The structure comparison is not blind: raw markup or a forged heading changes it."""
    assert html_shape("<p>x</p>").events != html_shape("<p><script>x</script></p>").events
    assert markdown_shape("*a*\n") != markdown_shape("*a*\n# b\n")
    assert markdown_shape("```text\nx\n```\n") != markdown_shape("```text\n```\nx\n```\n")


def test_bare_urls_in_prose_are_no_autolinks_and_read_the_same() -> None:
    """A URL, a www. address or an email in a value written as prose (a stop reason, a media
    URL) is broken for GitHub's autolinks, and CommonMark still shows the text unchanged."""
    from markdown_it import MarkdownIt

    from replay.export._markdown import prose

    for text in ("at https://evil.example/x", "see WWW.evil.example", "mail a@evil.example"):
        written = prose(text)
        assert not re.search(r"(?<!\\)(://|@)|(?i:www)\.", written), written
        assert MarkdownIt("commonmark").render(written) == f"<p>{text}</p>\n"
