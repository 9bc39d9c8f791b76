"""Subcommands of ``groupcoord`` (being written)."""


def register(subparsers) -> None:
    pass
