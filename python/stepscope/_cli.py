"""The ``stepscope`` command of the wheel: the Rust command line, in this process."""

import sys

from ._stepscope import run_cli


def main() -> None:
    """Runs ``stepscope`` with this process's arguments and exits with its code."""
    sys.exit(run_cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
