"""docs/providers.md keeps its promise: a resume loop per provider, each under 15 lines."""

from __future__ import annotations

from pathlib import Path

from test_docs import blocks

MARK = "# The resume loop:"


def test_each_provider_has_a_resume_loop_under_fifteen_lines() -> None:
    """Four executed examples hold a resume loop, one per adapter, of at most 15 lines."""
    loops = [body for where, body in blocks("python") if where.startswith("docs/providers.md")]
    loops = [body for body in loops if MARK in body]
    adapters = set()
    for body in loops:
        loop = body.split(MARK, 1)[1].strip().splitlines()
        assert len(loop) <= 15, loop
        adapters |= {
            a
            for a in ("anthropic", "openai_chat", "openai_responses", "gemini")
            if f"{a}.from_ledger" in body
        }
    assert adapters == {"anthropic", "openai_chat", "openai_responses", "gemini"}
    assert len(loops) == 4
    assert Path(__file__).resolve().parents[1].joinpath("docs", "providers.md").is_file()
