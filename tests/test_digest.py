"""The checkpoint digest (SPEC rule 1): what it covers, what it leaves out, and its one home."""

from __future__ import annotations

import ast
import hashlib
import io
from pathlib import Path

import msgspec
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import strategies as s
from ledger import Message, Reasoning, ReasoningKind, Role, TextPart, ToolCall, checkpoint_digest
from ledger.digest import DIGEST_PREFIX, digest_of_groups, file_sha256

SRC = Path(__file__).resolve().parents[1] / "src"
# Short lists keep the pairwise properties cheap; length is covered by the fixed cases.
short_lists = st.lists(s.messages(), max_size=4)

BASE = [
    Message(role=Role.SYSTEM, content="be careful"),
    Message(role=Role.USER, content="count the lines"),
    Message(
        role=Role.ASSISTANT,
        reasoning=(
            Reasoning(text="first", signature="sig-1"),
            Reasoning(kind=ReasoningKind.REDACTED, encrypted="b64=="),
        ),
        tool_calls=(ToolCall(id="c1", name="shell", arguments='{"cmd": "wc -l"'),),
    ),
    Message(role=Role.TOOL, tool_call_id="c1", content="42"),
]


def _with_reasoning(blocks: tuple[Reasoning, ...]) -> list[Message]:
    out = list(BASE)
    out[2] = msgspec.structs.replace(out[2], reasoning=blocks)
    return out


def test_digest_format() -> None:
    """The digest is `sha256:` followed by 64 lowercase hex digits."""
    d = checkpoint_digest(BASE)
    assert d.startswith(DIGEST_PREFIX)
    hexpart = d.removeprefix(DIGEST_PREFIX)
    assert len(hexpart) == 64
    assert int(hexpart, 16) >= 0
    assert hexpart == hexpart.lower()


def _v2(messages: list[Message]) -> str:
    """The version-2 rule written out from ADR 0063: a group per message (its reasoning blocks'
    members, then its own member without them), sha256 of each, sha256 of their concatenation."""
    enc = msgspec.json.Encoder(order="deterministic")
    groups = b""
    for m in messages:
        bare = msgspec.structs.replace(m, is_anchored=False, truncation_marker=None, reasoning=())
        items = [b'"reasoning":' + enc.encode(r) for r in m.reasoning]
        items.append(b'"message":' + enc.encode(bare))
        groups += hashlib.sha256(b"".join(items)).digest()
    return DIGEST_PREFIX + hashlib.sha256(groups).hexdigest()


def test_digest_is_the_hash_of_the_groups_of_members() -> None:
    """The version-2 digest is sha256 over the sha256 of each message's group of members, as
    the writer writes them (ADR 0063)."""
    assert checkpoint_digest(BASE) == _v2(BASE)
    assert checkpoint_digest([]) == DIGEST_PREFIX + hashlib.sha256(b"").hexdigest()
    ms = [Message(role=Role.USER, content=str(i)) for i in range(2500)]
    assert checkpoint_digest(iter(ms)) == checkpoint_digest(ms) == _v2(ms)


@pytest.mark.parametrize("n", [0, 1, (1 << 15) - 1, 1 << 15, (1 << 15) + 1, 3 * (1 << 15) + 7])
def test_the_groups_are_hashed_in_order_however_many(n: int) -> None:
    """The hashes of the groups are hashed joined, a slice at a time: every group counts once,
    in order, on both sides of each slice's edge."""
    groups = [i.to_bytes(32, "big") for i in range(n)]
    want = DIGEST_PREFIX + hashlib.sha256(b"".join(groups)).hexdigest()
    assert digest_of_groups(groups) == digest_of_groups(iter(groups)) == want


def test_version_1_digest_is_the_deterministic_json_array() -> None:
    """Files of format version 1 keep their rule: sha256 over the deterministic JSON array of
    the messages (ADR 0007), also past the internal batch size."""
    enc = msgspec.json.Encoder(order="deterministic")
    v1 = checkpoint_digest(BASE, format_version=1)
    assert v1 == DIGEST_PREFIX + hashlib.sha256(enc.encode(BASE)).hexdigest()
    assert checkpoint_digest([], format_version=1) == (
        DIGEST_PREFIX + hashlib.sha256(b"[]").hexdigest()
    )
    ms = [Message(role=Role.USER, content=str(i)) for i in range(2500)]
    assert checkpoint_digest(ms, format_version=1) == (
        DIGEST_PREFIX + hashlib.sha256(enc.encode(ms)).hexdigest()
    )
    assert v1 != checkpoint_digest(BASE)


@pytest.mark.parametrize(
    "blocks",
    [
        pytest.param((Reasoning(text="FIRST", signature="sig-1"), BASE[2].reasoning[1]), id="text"),
        pytest.param((Reasoning(text="first", signature="sig-2"), BASE[2].reasoning[1]), id="sig"),
        pytest.param((Reasoning(text="first"), BASE[2].reasoning[1]), id="sig-dropped"),
        pytest.param(
            (
                Reasoning(text="first", signature="sig-1"),
                Reasoning(kind=ReasoningKind.REDACTED, encrypted="b64=!"),
            ),
            id="encrypted",
        ),
        pytest.param(tuple(reversed(BASE[2].reasoning)), id="order"),
        pytest.param(BASE[2].reasoning[:1], id="block-dropped"),
        pytest.param((), id="all-dropped"),
        pytest.param(
            (
                Reasoning(text="first", signature="sig-1", kind=ReasoningKind.SUMMARY),
                BASE[2].reasoning[1],
            ),
            id="kind",
        ),
        pytest.param(
            (Reasoning(text="first", signature="sig-1", summary=("s",)), BASE[2].reasoning[1]),
            id="summary",
        ),
    ],
)
def test_any_reasoning_change_changes_the_digest(blocks: tuple[Reasoning, ...]) -> None:
    """Changing a block's text, signature, payload, kind, or the blocks' order changes it."""
    assert checkpoint_digest(_with_reasoning(blocks)) != checkpoint_digest(BASE)


def test_empty_and_missing_reasoning_text_differ() -> None:
    """Reasoning text `""` and `None` give different digests."""
    assert checkpoint_digest(_with_reasoning((Reasoning(text=""),))) != checkpoint_digest(
        _with_reasoning((Reasoning(text=None),))
    )


def test_empty_and_missing_content_differ() -> None:
    """Content `""` and `None` give different digests."""
    assert checkpoint_digest([Message(role=Role.USER, content="")]) != checkpoint_digest(
        [Message(role=Role.USER, content=None)]
    )


@given(ms=s.message_lists, data=st.data())
def test_bookkeeping_is_outside_the_digest(ms: list[Message], data: st.DataObject) -> None:
    """Changing `is_anchored` or `truncation_marker` on any messages does not change the digest."""
    changed = [
        msgspec.structs.replace(
            m,
            is_anchored=data.draw(st.booleans()),
            truncation_marker=data.draw(s.maybe_text),
        )
        for m in ms
    ]
    assert checkpoint_digest(changed) == checkpoint_digest(ms)


def test_content_changes_change_the_digest() -> None:
    """Changing one message's content, or its form (str versus parts), changes the digest."""
    d = checkpoint_digest(BASE)
    edited = list(BASE)
    edited[1] = msgspec.structs.replace(BASE[1], content="count the words")
    assert checkpoint_digest(edited) != d
    as_parts = list(BASE)
    as_parts[1] = msgspec.structs.replace(BASE[1], content=(TextPart(text="count the lines"),))
    assert checkpoint_digest(as_parts) != d


def test_order_and_count_change_the_digest() -> None:
    """Reordering, dropping, duplicating or adding a message changes the digest."""
    d = checkpoint_digest(BASE)
    assert checkpoint_digest([BASE[1], BASE[0], *BASE[2:]]) != d
    assert checkpoint_digest(BASE[:-1]) != d
    assert checkpoint_digest([*BASE, BASE[-1]]) != d
    assert checkpoint_digest([*BASE, Message(role=Role.USER)]) != d
    assert checkpoint_digest([]) != d


@given(a=short_lists, b=short_lists)
def test_distinct_sequences_have_distinct_digests(a: list[Message], b: list[Message]) -> None:
    """Message lists that differ beyond bookkeeping give different digests (no constant digest)."""
    strip = [msgspec.structs.replace(m, is_anchored=False, truncation_marker=None) for m in a]
    strip_b = [msgspec.structs.replace(m, is_anchored=False, truncation_marker=None) for m in b]
    assume(strip != strip_b)
    assert checkpoint_digest(a) != checkpoint_digest(b)


@given(ms=short_lists.filter(bool), data=st.data())
def test_one_message_changed_changes_the_digest(ms: list[Message], data: st.DataObject) -> None:
    """Replacing any one message by a different one changes the digest."""
    i = data.draw(st.integers(min_value=0, max_value=len(ms) - 1))
    other = data.draw(s.messages())
    assume(
        msgspec.structs.replace(other, is_anchored=False, truncation_marker=None)
        != msgspec.structs.replace(ms[i], is_anchored=False, truncation_marker=None)
    )
    edited = [*ms[:i], other, *ms[i + 1 :]]
    assert checkpoint_digest(edited) != checkpoint_digest(ms)


@given(ms=short_lists)
def test_digest_is_deterministic(ms: list[Message]) -> None:
    """The same messages, rebuilt as equal values, give the same digest."""
    twin = msgspec.json.decode(msgspec.json.encode(ms), type=list[Message])
    assert checkpoint_digest(twin) == checkpoint_digest(ms)


def _sha256_users(root: Path) -> set[str]:
    """Modules under ``root`` whose code (not strings) computes sha256."""
    users: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            hit = (
                (
                    isinstance(node, ast.ImportFrom)
                    and any(a.name.lower() == "sha256" for a in node.names)
                )
                or (isinstance(node, ast.Attribute) and node.attr == "sha256")
                or (isinstance(node, ast.Name) and node.id == "sha256")
                or (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "new"
                    and any(
                        isinstance(a, ast.Constant) and str(a.value).lower() == "sha256"
                        for a in node.args
                    )
                )
            )
            if hit:
                users.add(path.relative_to(root).as_posix())
                break
    return users


def test_digest_has_one_implementation() -> None:
    """Only `src/ledger/digest.py` computes sha256, so a second digest implementation is caught."""
    assert _sha256_users(SRC) == {"ledger/digest.py"}, (
        "sha256 is used outside ledger/digest.py; call ledger.checkpoint_digest instead"
    )


# The one other use of sha256 the project allows (ADR 0134): the hash of a file's bytes for the
# retention audit log, a named function beside the checkpoint digest.
SHA256_FUNCTIONS = {"group_hash", "digest_of_groups", "_digest_v1", "file_sha256"}


def _sha256_functions(module: Path) -> set[str]:
    """The top-level functions of ``module`` whose bodies compute sha256 (``<module>`` for code
    outside any function)."""
    tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
    found: set[str] = set()
    for top in tree.body:
        name = top.name if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef) else "<module>"
        for node in ast.walk(top):
            if (isinstance(node, ast.Attribute) and node.attr == "sha256") or (
                isinstance(node, ast.Name) and node.id == "sha256"
            ):
                found.add(name)
    return found


def test_digest_module_uses_sha256_in_named_functions_only() -> None:
    """Inside ledger/digest.py, sha256 is computed by the conversation digest's functions (a
    group's hash, the hash of the groups, the version-1 rule) and file_sha256, nowhere else: a
    further use, or a second conversation digest, is caught."""
    assert _sha256_functions(SRC / "ledger" / "digest.py") == SHA256_FUNCTIONS, (
        "ledger/digest.py: sha256 is for the conversation digest and file_sha256 only "
        "(ADRs 0063, 0134)"
    )


def test_the_function_scan_sees_a_third_use(tmp_path: Path) -> None:
    """The per-function scan names any function (or module code) that computes sha256."""
    module = tmp_path / "m.py"
    module.write_text(
        "import hashlib\n"
        "def checkpoint_digest(): return hashlib.sha256()\n"
        "def other(): return hashlib.sha256()\n"
        "X = hashlib.sha256()\n",
        encoding="utf-8",
    )
    assert _sha256_functions(module) == {"checkpoint_digest", "other", "<module>"}


def test_file_hashes_go_through_file_sha256() -> None:
    """The file hash is file_sha256's: it equals sha256 of the bytes, and the checkpoint digest of
    no message list is a file hash (different inputs, different names)."""
    data = b'{"type":"session_meta"}\n' * 3
    expected = "sha256:" + hashlib.sha256(data).hexdigest()
    assert file_sha256(io.BytesIO(data)) == (expected, len(data))
    assert file_sha256(data) == (expected, len(data))
    sink = io.BytesIO()
    assert file_sha256(io.BytesIO(data), sink=sink)[0] == file_sha256(io.BytesIO(data))[0]
    assert sink.getvalue() == data


def test_sha256_scan_finds_a_second_implementation(tmp_path: Path) -> None:
    """The one-implementation scan sees sha256 computed in any module (it is not vacuous)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("import hashlib\nhashlib.sha256()\n", encoding="utf-8")
    (tmp_path / "pkg" / "b.py").write_text("from hashlib import sha256\n", encoding="utf-8")
    (tmp_path / "pkg" / "c.py").write_text("h = hashlib.new('sha256')\n", encoding="utf-8")
    (tmp_path / "pkg" / "d.py").write_text("x = 'sha256: in a string'\n", encoding="utf-8")
    (tmp_path / "pkg" / "e.py").write_text("import hashlib\nhashlib.blake2b()\n", encoding="utf-8")
    assert _sha256_users(tmp_path) == {"pkg/a.py", "pkg/b.py", "pkg/c.py"}
