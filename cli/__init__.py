"""The ``groupcoord`` command: one parser whose subcommands each part of the project registers.

``serve`` (:mod:`groupcoord.coordinator.cli`), ``groups`` and ``topics``
(:mod:`groupcoord.client.admin_cli`), ``configs`` (:mod:`groupcoord.client.configs_cli`), ``fleet``, ``simulate`` and ``sweep`` (:mod:`groupcoord.sim.cli`),
``analyze`` (:mod:`groupcoord.analytics.cli`). Each module has ``register(subparsers)`` and sets
``func`` (args -> exit status) on its parsers.
"""
from __future__ import annotations

import argparse
import sys

from groupcoord.analytics import cli as analytics_cli
from groupcoord.client import admin_cli, configs_cli
from groupcoord.coordinator import cli as coordinator_cli
from groupcoord.sim import cli as sim_cli

PARTS = (coordinator_cli, sim_cli, analytics_cli, admin_cli, configs_cli)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groupcoord", description="Kafka consumer-group coordinator emulator")
    sub = parser.add_subparsers(dest="command", required=True)
    for part in PARTS:
        part.register(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)      # as given (kafka-configs.sh quotes them)
    if getattr(args, "log_level", None) is not None:
        from groupcoord.coordinator.logs import check_level
        try:
            args.log_level = check_level(args.log_level)
        except ValueError as exc:
            print(f"groupcoord: --log-level: {exc}", file=sys.stderr)
            return 2
    return args.func(args)
