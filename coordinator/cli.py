"""``groupcoord serve``: the coordinator's subcommand."""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from .config import PROFILES, SETTINGS, BrokerConfig, ConfigError


class CommandError(Exception):
    """A problem reported in one line, ``groupcoord: <message>``, with exit status ``status``."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def _reason(exc: OSError) -> str:
    """The operating system's words for an OSError, without the errno and the path."""
    return os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or str(exc)


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


def register(sub) -> None:
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
                       help="the Kafka release emulated: the API versions served and the coordinator's "
                            "behaviour where a release changed it (default 4.3, the newest; 3.9 keeps the "
                            "versions Kafka 4.0 removed, for old clients)")
    serve.add_argument("--log-format", choices=("console", "json"), default="console")
    serve.add_argument("--log-level", default="info", help="debug, info (default), warning or error")
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
    serve.set_defaults(func=_serve)


def _topics(specs: list[tuple[str, int]]) -> dict[str, int]:
    """--topic NAME:PARTITIONS given once per name (an identical repeat is accepted)."""
    topics: dict[str, int] = {}
    for name, partitions in specs:
        if topics.setdefault(name, partitions) != partitions:
            raise CommandError(f"--topic {name} is given twice with different partition counts "
                               f"({topics[name]} and {partitions})")
    return topics


def _broker_config(args) -> BrokerConfig:
    try:
        values = dict(args.set)
        if args.kafka_version is not None:
            values["groupcoord.kafka.version"] = args.kafka_version
        return BrokerConfig(values, profile=args.profile, properties_file=args.config)
    except OSError as exc:
        raise CommandError(f"--config {args.config}: cannot read it: {_reason(exc)}") from None


def _open_events(path: str):
    try:
        return open(path, "a", encoding="utf-8", buffering=1)
    except IsADirectoryError:
        raise CommandError(f"--events {path}: is a directory; give the file to append the events to") from None
    except OSError as exc:
        raise CommandError(f"--events {path}: cannot write to it: {_reason(exc)}") from None


def _open_store(path: str, fsync: str):
    from .storage import LogStore
    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandError(f"--data-dir {path}: is a file; give a directory for the offsets logs")
    try:
        return LogStore(path, fsync=fsync)
    except OSError as exc:
        raise CommandError(f"--data-dir {path}: cannot use it: {_reason(exc)}") from None


async def serve(args) -> int:
    from .logs import configure
    from .server import Server
    from .service import Service

    configure(args.log_format, args.log_level)
    topics = _topics(args.topic)
    token = args.http_token or os.environ.get("GROUPCOORD_HTTP_TOKEN") or None
    if args.http_port is not None:
        from .admin.app import check_exposure
        check_exposure(args.http_host, token)   # refuse to start exposed without a token
    config = _broker_config(args)
    ports = [args.port + i if args.port else 0 for i in range(args.nodes)]
    emit = None
    events_file = None
    if args.events:
        import json

        from .events import default_emit
        events_file = _open_events(args.events)

        def emit(event: dict) -> None:
            events_file.write(json.dumps(event, default=str) + "\n")
            default_emit(event)
    store = None
    if args.data_dir is not None:
        store = _open_store(args.data_dir, args.fsync)
    service = Service(config, nodes=args.nodes, host=args.host, ports=ports, emit=emit, store=store)
    for name, partitions in topics.items():
        service.create_topic(name, partitions, exist_ok=True)    # may be kept from a previous run
    server = Server(service, args.host, ports)
    await server.start()
    if store is not None:
        # listeners are open: groups of partitions not yet loaded answer COORDINATOR_LOAD_IN_PROGRESS
        await server.load_state()
    admin = None
    if args.http_port is not None:
        from .admin.app import AdminListener
        try:
            admin = await AdminListener(service, server, args.http_host, args.http_port, token).start()
        except OSError as exc:
            await server.stop()
            raise CommandError(f"cannot listen on {args.http_host}:{args.http_port} for the admin listener: "
                               f"{_reason(exc)}", 1) from None
    # announced once everything listens: a listener that cannot open is the only thing printed
    print(f"bootstrap servers: {server.bootstrap_servers}", flush=True)
    if admin is not None:
        print(f"admin: {admin.url}", flush=True)
    if store is not None:
        print(f"data dir: {os.path.abspath(args.data_dir)} (groups, offsets, topics and their records are kept there)", flush=True)
    else:
        print("data dir: none, state in memory only (--in-memory)", flush=True)
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


def _serve(args) -> int:
    if args.nodes < 1:
        print("groupcoord: --nodes must be at least 1", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve(args))
    except CommandError as exc:
        print(f"groupcoord: {exc}", file=sys.stderr)
        return exc.status
    except (ConfigError, ValueError, OverflowError) as exc:     # OverflowError: a port beyond 65535
        print(f"groupcoord: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:      # a listener (the message names its address) or the data dir
        print(f"groupcoord: {exc}", file=sys.stderr)
        return 1
