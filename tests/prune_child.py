"""A child process for the prune kill test: it prunes a root and dies at a chosen point.

Usage::

    python prune_child.py ROOT MODE K

The child prunes every session of ROOT (``older_than=0``) and is killed (``os._exit(137)``, no
clean-up, as a SIGKILL would leave things) at the K-th occurrence of the point MODE names:

- ``before-move``: the audit line of a session is written and synced, its rename not done;
- ``after-move``: the rename is done, nothing after it;
- ``mid-log``: half of an audit line is written;
- ``mid-copy``: the trash is on another file system (renames into it fail with EXDEV) and the
  copy is complete but not yet renamed into place;
- ``after-copy``: as ``mid-copy``, but the copy is in place and the original not yet removed.
"""

from __future__ import annotations

import errno
import os
import sys
from datetime import timedelta
from pathlib import Path

from replay.retention import prune


def main() -> None:
    root, mode, k = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    count = 0
    real_rename, real_write = os.rename, os.write

    def hit() -> bool:
        nonlocal count
        count += 1
        return count == k

    def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        into_trash = "/.trash/files/" in os.fspath(dst)
        partial = os.fspath(src).endswith(".partial")
        if mode == "before-move" and into_trash and hit():
            os._exit(137)
        if mode == "after-move" and into_trash:
            real_rename(src, dst)
            if hit():
                os._exit(137)
            return
        if mode in ("mid-copy", "after-copy") and into_trash:
            if not partial:
                raise OSError(errno.EXDEV, "Invalid cross-device link")
            if mode == "mid-copy" and hit():
                os._exit(137)
            real_rename(src, dst)
            if mode == "after-copy" and hit():
                os._exit(137)
            return
        real_rename(src, dst)

    def write(fd: int, data: bytes | memoryview) -> int:
        if mode == "mid-log" and bytes(data[:11]) == b'{"action":"' and hit():
            real_write(fd, bytes(data[: len(data) // 2]))
            os._exit(137)
        return real_write(fd, data)

    os.rename = rename  # type: ignore[assignment]
    os.write = write  # type: ignore[assignment]
    prune(root, older_than=timedelta(0), command=["rollout", "prune", "--older-than", "0d"])
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
