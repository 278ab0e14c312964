"""``python -m replay``: the `rollout` command."""

from replay.cli import main

if __name__ == "__main__":
    main()
