"""Delegation coordinates in context (SPEC rule 13): they follow tasks and threads like context."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from ledger import (
    current_delegation_id,
    current_rollout_session_id,
    delegation_coordinates,
    with_delegation_id,
    with_rollout_session_id,
)


def _both() -> tuple[str | None, str | None]:
    return current_delegation_id(), current_rollout_session_id()


def test_unset_is_none() -> None:
    """Outside any block both coordinates are None."""
    assert _both() == (None, None)


def test_set_within_block_and_restored_after() -> None:
    """A with-block sets the value and restores the previous one on exit."""
    with with_delegation_id("call_1"), with_rollout_session_id("parent-1"):
        assert _both() == ("call_1", "parent-1")
    assert _both() == (None, None)


def test_nested_blocks_restore_outer_values() -> None:
    """Nested blocks shadow the outer value and give it back when they end."""
    with with_delegation_id("outer"), with_rollout_session_id("p-outer"):
        with with_delegation_id("inner"), with_rollout_session_id("p-inner"):
            assert _both() == ("inner", "p-inner")
        assert _both() == ("outer", "p-outer")
    assert _both() == (None, None)


def test_restored_after_an_exception() -> None:
    """A block left by an exception still restores the previous value."""
    with with_delegation_id("outer"):
        with pytest.raises(RuntimeError), with_delegation_id("inner"):
            raise RuntimeError("boom")
        assert current_delegation_id() == "outer"


@pytest.mark.parametrize("empty", ["", None])
def test_empty_means_no_coordinates(empty: str | None) -> None:
    """An empty or None value reads back as None ("no coordinates"), never as a root marker."""
    with with_delegation_id("outer"), with_rollout_session_id("p"):
        with with_delegation_id(empty), with_rollout_session_id(empty):
            assert _both() == (None, None)
            assert delegation_coordinates() == ("", "")
        assert _both() == ("outer", "p")


@pytest.mark.parametrize("bad", [7, b"call", 1.5, ["c"], object()])
def test_coordinates_of_another_type_are_refused(bad: object) -> None:
    """A delegation id or parent session id that is not a str is refused at once (D8)."""
    with pytest.raises(TypeError, match="must be a str"), with_delegation_id(bad):  # type: ignore[arg-type]
        pass
    with pytest.raises(TypeError, match="must be a str"), with_rollout_session_id(bad):  # type: ignore[arg-type]
        pass
    assert delegation_coordinates() == (None, None)


def test_asyncio_tasks_inherit_and_isolate() -> None:
    """A task sees the values current when it was created; its own changes stay inside it."""

    async def child(name: str) -> tuple[str | None, str | None, str | None]:
        seen = current_delegation_id()
        with with_delegation_id(name):
            await asyncio.sleep(0)
            inner = current_delegation_id()
        return seen, inner, current_rollout_session_id()

    async def main() -> list[tuple[str | None, str | None, str | None]]:
        with with_rollout_session_id("parent"), with_delegation_id("call_0"):
            tasks = [asyncio.create_task(child(f"call_{i}")) for i in (1, 2, 3)]
        # The block has ended before the tasks run: they keep what they were created with.
        results = await asyncio.gather(*tasks)
        assert _both() == (None, None)
        return results

    assert asyncio.run(main()) == [
        ("call_0", "call_1", "parent"),
        ("call_0", "call_2", "parent"),
        ("call_0", "call_3", "parent"),
    ]


def test_copy_context_run_carries_values_into_threads() -> None:
    """`contextvars.copy_context().run` in a thread sees the values of the copying context."""
    seen: list[tuple[str | None, str | None]] = []
    with with_delegation_id("call_9"), with_rollout_session_id("parent-9"):
        ctx = contextvars.copy_context()
    t = threading.Thread(target=ctx.run, args=(lambda: seen.append(_both()),))
    t.start()
    t.join()
    assert seen == [("call_9", "parent-9")]


def test_plain_threads_start_without_coordinates() -> None:
    """A thread started without copying the context does not see the caller's coordinates."""
    seen: list[tuple[str | None, str | None]] = []
    with with_delegation_id("call_9"), with_rollout_session_id("parent-9"):
        t = threading.Thread(target=lambda: seen.append(_both()))
        t.start()
        t.join()
    assert seen == [(None, None)]


def test_threads_do_not_leak_into_each_other() -> None:
    """Values set in one thread's copied context are not seen by another thread or the caller."""

    def work(name: str) -> tuple[str | None, str | None]:
        with with_delegation_id(name):
            return _both()

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda n: contextvars.copy_context().run(work, n), [f"c{i}" for i in range(8)])
        )
    assert results == [(f"c{i}", None) for i in range(8)]
    assert _both() == (None, None)
