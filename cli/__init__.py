"""The ``groupcoord`` command: one parser whose subcommands each part of the project registers.

``serve`` (:mod:`groupcoord.coordinator.cli`), ``groups`` and ``topics``
(:mod:`groupcoord.client.admin_cli`), ``share-groups`` (:mod:`groupcoord.client.share_groups_cli`),
``transactions`` (:mod:`groupcoord.client.transactions_cli`),
``configs`` (:mod:`groupcoord.cli.configs`), ``fleet``, ``simulate`` and ``sweep`` (:mod:`groupcoord.sim.cli`),
``analyze`` (:mod:`groupcoord.analytics.cli`). Each module has ``register(subparsers)`` and sets
``func`` (args -> exit status) on its parsers.
"""
from __future__ import annotations

import argparse
import sys

from groupcoord.analytics import cli as analytics_cli
from groupcoord.cli import configs as configs_cli
from groupcoord.client import admin_cli, share_groups_cli, transactions_cli
from groupcoord.coordinator import cli as coordinator_cli
from groupcoord.sim import cli as sim_cli

PARTS = (coordinator_cli, sim_cli, analytics_cli, admin_cli, share_groups_cli, transactions_cli, configs_cli)


def version() -> str:
    """groupcoord's version and the Kafka releases it emulates (the default first)."""
    from importlib.metadata import PackageNotFoundError, version as installed

    from groupcoord.coordinator.releases import RELEASES
    try:
        ours = installed("groupcoord")
    except PackageNotFoundError:        # (run from a source tree that is not installed)
        ours = "unknown"
    return f"groupcoord {ours} (emulates Kafka {', '.join(RELEASES)}; default {RELEASES[0]})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groupcoord", description="Kafka consumer-group coordinator emulator")
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", required=True)
    for part in PARTS:
        part.register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # an option the subcommand does not know: its own usage, not the top level's
        subcommand = parser._subparsers._group_actions[0].choices[args.command]
        subcommand.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.argv = list(sys.argv[1:] if argv is None else argv)      # as given (kafka-configs.sh quotes them)
    if getattr(args, "log_level", None) is not None:
        from groupcoord.coordinator.logs import check_level
        try:
            args.log_level = check_level(args.log_level)
        except ValueError as exc:
            print(f"groupcoord: --log-level: {exc}", file=sys.stderr)
            return 2
    return args.func(args)
