"""The OpenAI Agents SDK session over a rollout, under the SDK's own Runner with a scripted model:
history comes back byte for byte after a process restart; pop and clear never rewrite the file."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents_fake import ENCRYPTED, ScriptedModel, run_turn, weather_turn
from ledger import Compacted, decode_record
from replay.integrations.openai_agents import RolloutSession

CHILD = Path(__file__).with_name("agents_fake.py")


def _first_run(root: Path) -> tuple[Path, list[Any]]:
    """One Runner turn into a new rollout; returns its path and the items the SDK added."""
    added: list[Any] = []

    async def go() -> Path:
        session = RolloutSession.create(root, agent_name="weather")
        original = session.add_items

        async def spy(items: list[Any]) -> None:
            added.extend(json.loads(json.dumps(items)))
            await original(items)

        session.add_items = spy  # type: ignore[method-assign]
        assert await run_turn(session, ScriptedModel(weather_turn(1)), "Weather in Paris?")
        session.close()
        return Path(session.path)

    return asyncio.run(go()), added


def test_items_come_back_byte_exact_in_a_new_process(tmp_path: Path) -> None:
    """Reasoning items, encrypted content, fc_/call_ ids: the same JSON text after a restart."""
    path, added = _first_run(tmp_path)
    kinds = [item.get("type", "message") for item in added]
    first = ["message", "reasoning", "function_call", "function_call_output"]
    assert kinds == [*first, "reasoning", "message"]
    child = subprocess.run(
        [sys.executable, str(CHILD), str(path)], capture_output=True, text=True, check=False
    )
    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout)
    assert json.dumps(seen["items"]) == json.dumps(added)
    assert json.dumps(seen["first_input"][: len(added)]) == json.dumps(added)
    assert seen["items"][1]["encrypted_content"] == ENCRYPTED


def test_pop_item_and_clear_session_append_and_never_rewrite(tmp_path: Path) -> None:
    """pop_item returns the last item and appends a compacted record; the older lines stay."""
    path, added = _first_run(tmp_path)
    before = path.read_bytes()

    async def go() -> None:
        session = RolloutSession.open(path)
        assert await session.get_items(limit=2) == added[-2:]
        assert await session.get_items(limit=0) == []
        assert await session.pop_item() == added[-1]
        assert await session.get_items() == added[:-1]
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        session.close()
        again = RolloutSession.open(path)
        assert await again.get_items() == []
        again.close()

    asyncio.run(go())
    after = path.read_bytes()
    assert after.startswith(before)
    records = [decode_record(line) for line in after[len(before) :].splitlines()]
    assert sum(isinstance(r, Compacted) for r in records) == 2
