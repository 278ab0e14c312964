"""Media on an exported page: checked raster images inline, everything else described."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from export_pages import html_shape
from ledger import MediaPart, Message, StopKind
from replay import Replay, read_replay
from replay.export import to_html, to_markdown
from rollout_files import RolloutBuilder

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 24


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _replay_of(tmp_path: Path, *parts: MediaPart) -> Replay:
    builder = RolloutBuilder(tmp_path).add(Message(role="user", content=parts))
    return read_replay(builder.stop(StopKind.PAUSED).write(), whole_file=True)


def test_an_inline_png_becomes_a_data_url_and_other_media_a_description(tmp_path: Path) -> None:
    """Only checked raster images are inlined; URLs are described, never loaded or linked."""
    parts = (
        MediaPart(media_type="image/png", data=_b64(PNG), name="plot.png"),
        MediaPart(media_type="image/png", url="https://example.invalid/a.png"),
        MediaPart(media_type="text/html", url="javascript:alert(1)"),
    )
    rep = _replay_of(tmp_path, *parts)
    page = to_html(rep)
    assert page.count("<img ") == 1
    assert f'<img src="data:image/png;base64,{_b64(PNG)}" alt="plot.png">' in page
    assert "at https://example.invalid/a.png (not loaded)" in page
    assert "at javascript:alert(1) (not loaded)" in page
    assert 'href="https' not in page
    assert 'href="javascript' not in page
    md = to_markdown(rep)
    assert "data:image" not in md
    assert "*media:* media image/png, named plot.png, inline data of" in md


@pytest.mark.parametrize(
    "part",
    [
        MediaPart(media_type="image/png", data=_b64(JPEG)),  # declared png, bytes are jpeg
        MediaPart(media_type="image/svg+xml", data=_b64(b"<svg onload='x'/>")),
        MediaPart(media_type="text/html", data=_b64(b"<script>x</script>")),
        MediaPart(media_type="image/png", data="not base64 at all!"),
        MediaPart(media_type="image/png", data=""),
        MediaPart(media_type="image/png", url="data:text/html;base64," + _b64(PNG)),
        MediaPart(media_type="image/png", url="data:image/png," + _b64(PNG)),  # not base64
        MediaPart(media_type="image/webp", data=_b64(b"RIFF\x00\x00\x00\x00WAVE")),
    ],
    ids=["mislabelled", "svg", "html", "bad-base64", "empty", "data-url-html", "no-b64", "riff"],
)
def test_media_that_fails_a_check_is_described_not_inlined(tmp_path: Path, part: MediaPart) -> None:
    """A wrong type, a type that is not a raster, bad base64 or a mismatched URL: no image."""
    rep = _replay_of(tmp_path, part)
    page = to_html(rep)
    assert "<img" not in page
    assert '<figure class="media"><figcaption>media ' in page


def test_image_checks_accept_jpeg_gif_webp_and_data_urls(tmp_path: Path) -> None:
    """Each allowed raster type with its signature is inlined, from data or a base64 data URL."""
    parts = (
        MediaPart(media_type="image/jpeg", data=_b64(JPEG)),
        MediaPart(media_type="image/gif", data=_b64(b"GIF89a" + b"\x00" * 8)),
        MediaPart(media_type="image/webp", data=_b64(b"RIFF\x00\x00\x00\x00WEBPVP8 ")),
        MediaPart(media_type="IMAGE/PNG", url="data:image/png;base64," + _b64(PNG)),
        MediaPart(media_type="image/png", data=_b64(PNG)[:20] + "\n" + _b64(PNG)[20:]),
    )
    rep = _replay_of(tmp_path, *parts)
    assert to_html(rep).count("<img ") == len(parts)


def test_an_image_over_the_size_limit_is_described(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An image larger than the inline limit is described instead of making the page huge."""
    monkeypatch.setattr("replay.export._media.MAX_INLINE_IMAGE", len(PNG) - 1)
    part = MediaPart(media_type="image/png", data=_b64(PNG))
    rep = _replay_of(tmp_path, part)
    assert "<img" not in to_html(rep)


def test_quotes_cannot_break_out_of_an_attribute(tmp_path: Path) -> None:
    """An image name full of quotes stays the `alt` value: no attribute is added to the image."""
    name = "a\" onerror=\"document.title='pwned'\" x='"
    part = MediaPart(media_type="image/png", data=_b64(PNG), name=name)
    rep = _replay_of(tmp_path, part)
    images = [(n, v) for tag, n, v in html_shape(to_html(rep)).attributes if tag == "img"]
    assert images == [("src", f"data:image/png;base64,{_b64(PNG)}"), ("alt", name)]
