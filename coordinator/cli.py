"""The ``groupcoord`` command."""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from .config import PROFILES, SETTINGS, BrokerConfig, ConfigError


def _topic(spec: str) -> tuple[str, int]:
    name, sep, count = spec.rpartition(":")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME:PARTITIONS, got {spec!r}")
    try:
        n = int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"partitions must be an integer in {spec!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"partitions must be positive in {spec!r}")
    return name, n


def _setting(spec: str) -> tuple[str, str]:
    key, sep, value = spec.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected key=value, got {spec!r}")
    return key.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groupcoord", description="Kafka consumer-group coordinator emulator")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the coordinator service")
    serve.add_argument("--nodes", type=int, default=1, help="emulated brokers (default 1)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=9092, help="port of node 0; node i listens on port+i (default 9092)")
    serve.add_argument("--topic", action="append", type=_topic, default=[], metavar="NAME:PARTITIONS",
                       help="create a topic at start (repeatable)")
    serve.add_argument("--profile", choices=sorted(PROFILES), default="default",
                       help="'test': no initial rebalance delay and short minimum session timeout")
    serve.add_argument("--set", action="append", type=_setting, default=[], metavar="KEY=VALUE",
                       help="a broker config by Kafka's name, e.g. group.initial.rebalance.delay.ms=0")
    serve.add_argument("--config", metavar="FILE", help="a properties file of broker configs")
    serve.add_argument("--kafka-version", choices=SETTINGS["groupcoord.kafka.version"].choices, default=None,
                       help="the Kafka release emulated: the API versions served (default 4.1; 3.9 keeps "
                            "the versions Kafka 4.0 removed, for old clients)")
    serve.add_argument("--log-format", choices=("console", "json"), default="console")
    serve.add_argument("--log-level", default="info")
    serve.add_argument("--events", metavar="FILE",
                       help="also write the coordinator's structured events to FILE as JSON lines")
    serve.add_argument("--data-dir", default="groupcoord-data", metavar="DIR",
                       help="keep offsets and group metadata in logs under DIR (default ./groupcoord-data)")
    serve.add_argument("--no-data-dir", "--in-memory", dest="data_dir", action="store_const", const=None,
                       help="keep all state in memory only")
    serve.add_argument("--fsync", choices=("always", "interval", "never"), default="interval",
                       help="when logs are fsynced: before every acknowledgement, every second (default), never")
    serve.add_argument("--http-port", type=int, default=None, metavar="PORT",
                       help="serve the admin HTTP API, metrics and web page on PORT (0: any free port)")
    serve.add_argument("--http-host", default="127.0.0.1",
                       help="address of the admin listener (default 127.0.0.1; elsewhere needs --http-token)")
    serve.add_argument("--http-token", default=None, metavar="TOKEN",
                       help="bearer token for mutating admin endpoints (default: $GROUPCOORD_HTTP_TOKEN)")
    sub.add_parser("configs", help="list the broker configs and their defaults")
    # fleets, simulation, analytics and the groups/topics tools add their own subcommands: each module has
    # register(subparsers), and sets ``func`` (args -> exit code) on its parsers
    import importlib
    for module in _COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    return parser


_COMMAND_MODULES = ("groupcoord.client.fleet.cli", "groupcoord.client.analytics.cli", "groupcoord.client.admin_cli")


async def serve(args) -> int:
    from .logs import configure
    from .server import Server
    from .service import Service

    configure(args.log_format, args.log_level)
    token = args.http_token or os.environ.get("GROUPCOORD_HTTP_TOKEN") or None
    if args.http_port is not None:
        from .admin.app import check_exposure
        check_exposure(args.http_host, token)   # refuse to start exposed without a token
    values = dict(args.set)
    if args.kafka_version is not None:
        values["groupcoord.kafka.version"] = args.kafka_version
    config = BrokerConfig(values, profile=args.profile, properties_file=args.config)
    ports = [args.port + i if args.port else 0 for i in range(args.nodes)]
    emit = None
    events_file = None
    if args.events:
        import json

        from .events import default_emit
        events_file = open(args.events, "a", encoding="utf-8", buffering=1)

        def emit(event: dict) -> None:
            events_file.write(json.dumps(event, default=str) + "\n")
            default_emit(event)
    store = None
    if args.data_dir is not None:
        from .storage import LogStore
        store = LogStore(args.data_dir, fsync=args.fsync)
    service = Service(config, nodes=args.nodes, host=args.host, ports=ports, emit=emit, store=store)
    for name, partitions in args.topic:
        service.create_topic(name, partitions, exist_ok=True)    # may be kept from a previous run
    server = Server(service, args.host, ports)
    await server.start()
    if store is not None:
        # listeners are open: groups of partitions not yet loaded answer COORDINATOR_LOAD_IN_PROGRESS
        await service.load_async()
        server.rearm()
    print(f"bootstrap servers: {server.bootstrap_servers}", flush=True)
    admin = None
    if args.http_port is not None:
        from .admin.app import AdminListener
        admin = await AdminListener(service, server, args.http_host, args.http_port, token).start()
        print(f"admin: {admin.url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    syncer = None
    if store is not None and args.fsync != "never":      # "always" too: end offsets are fsynced here
        async def sync_every_interval():
            while True:
                await asyncio.sleep(store.fsync_interval_ms / 1000)
                store.sync()
        syncer = asyncio.create_task(sync_every_interval())
    await stop.wait()
    if syncer is not None:
        syncer.cancel()
    if admin is not None:
        await admin.stop()
    await server.stop()
    if store is not None:
        store.close()
    if events_file is not None:
        events_file.close()
    print("stopped", flush=True)
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "func", None) is not None:
        return args.func(args)
    if args.command == "configs":
        for key, s in sorted(SETTINGS.items()):
            print(f"{key} = {s.default}    # {s.doc}")
        return 0
    if args.nodes < 1:
        print("groupcoord: --nodes must be at least 1", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve(args))
    except (ConfigError, ValueError, OverflowError) as exc:     # OverflowError: a port beyond 65535
        print(f"groupcoord: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"groupcoord: cannot listen: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
