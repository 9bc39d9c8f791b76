"""``groupcoord transactions``: Kafka's kafka-transactions.sh (``TransactionsCommand`` of Kafka 4.3), with
its subcommands, options, tables and messages, over :class:`~.admin.AdminClient` (the Kafka protocol
through our codec), so it works against any Kafka cluster.

    groupcoord transactions [--bootstrap-server B] list [--duration-filter MS] [--transactional-id-pattern RE]
    groupcoord transactions [--bootstrap-server B] describe --transactional-id ID
    groupcoord transactions [--bootstrap-server B] abort --topic T --partition P
                            --producer-id PID --producer-epoch E --coordinator-epoch CE

and, as issue 32 spells them (the options of ``groupcoord groups``), ``--list [...]`` and ``--describe
--transactional-id ID`` in place of the subcommand.

The RPCs are Kafka's Admin client's: ListTransactions at every broker (``allByBrokerId``: the Coordinator
column is the broker that listed the id), FindCoordinator (key type 1) then DescribeTransactions at the id's
coordinator, WriteTxnMarkers (an abort marker) at the partition's leader. Tables are
``ToolsUtils.prettyPrintTable``'s: each value padded to its column's width, each followed by a tab.
Errors are ``printErrorAndExit``'s: ``<what failed>: <the exception's message>. Enable debug logging for
additional detail.`` on stderr, exit code 1.

Not here: ``describe-producers``, ``find-hanging`` and ``abort --start-offset`` (they need DescribeProducers,
which our codec does not speak), ``forceTerminateTransaction`` (KIP-939's two-phase commit), and
``--command-config``.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time

from groupcoord.protocol.errors import KafkaError, ProtocolError

from .admin import AdminClient, AdminError, TransactionDescription
from .admin_cli import DEFAULT_BOOTSTRAP, UsageError, _err
from .assignors.base import TopicPartition as TP

DEFAULT_TIMEOUT_MS = 30000           # the admin client's default.api.timeout.ms
LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")
_COMMANDS = ("list", "describe", "abort")
_ENABLE_DEBUG = " Enable debug logging for additional detail."


class Abort(Exception):
    """TransactionsCommand.printErrorAndExit: the message on stderr, exit code 1."""


def pretty_table(headers, rows) -> str:
    """ToolsUtils.prettyPrintTable: every value left-justified to its column's widest, then a tab."""
    widths = [max([len(h)] + [len(str(row[i])) for row in rows]) for i, h in enumerate(headers)]
    return "".join("".join(f"{v!s:<{w}}\t" for v, w in zip(row, widths)) + "\n" for row in (headers, *rows))


# ================================================================================ options
def register(subparsers) -> None:
    p = subparsers.add_parser(
        "transactions", help="list, describe and abort transactions (kafka-transactions.sh)",
        description="This tool is used to analyze the transactional state of producers in the cluster, as "
                    "Kafka's kafka-transactions.sh (same commands and output). The command comes as a "
                    "subcommand (list, describe, abort) or as --list / --describe.")
    _bootstrap(p, DEFAULT_BOOTSTRAP)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_MS, metavar="MS",
                   help=f"how long each request may take, retries included (default {DEFAULT_TIMEOUT_MS})")
    flags = p.add_argument_group("as options (instead of a command)")
    flags.add_argument("--list", action="store_true", help="list transactions (the list command)")
    flags.add_argument("--describe", action="store_true",
                       help="describe the state of an active transactional-id (the describe command)")
    flags.add_argument("--transactional-id", metavar="ID", help="with --describe: the transactional id")
    flags.add_argument("--duration-filter", type=int, metavar="MS",
                       help="with --list: only transactions running longer than MS (< 0: all)")
    flags.add_argument("--transactional-id-pattern", metavar="REGEX",
                       help="with --list: only transactional ids matching the regular expression")
    commands = p.add_subparsers(dest="txn_command", title="commands", metavar="COMMAND")

    listing = commands.add_parser("list", help="list transactions")
    _bootstrap(listing, argparse.SUPPRESS)
    listing.add_argument("--duration-filter", type=int, default=argparse.SUPPRESS, metavar="MS",
                         help="Duration (in millis) to filter by: if < 0, all transactions will be returned; "
                              "otherwise, only transactions running longer than this duration will be returned")
    listing.add_argument("--transactional-id-pattern", default=argparse.SUPPRESS, metavar="REGEX",
                         help="Transactional id regular expression pattern to filter by")

    describe = commands.add_parser("describe", help="describe the state of an active transactional-id",
                                   description="Describe the state of an active transactional-id.")
    _bootstrap(describe, argparse.SUPPRESS)
    describe.add_argument("--transactional-id", required=True, default=argparse.SUPPRESS, metavar="ID",
                          help="transactional id")

    abort = commands.add_parser("abort", help="abort a hanging transaction (requires administrative privileges)")
    _bootstrap(abort, argparse.SUPPRESS)
    abort.add_argument("--topic", required=True, help="topic name")
    abort.add_argument("--partition", type=int, required=True, help="partition number")
    new = abort.add_argument_group("Brokers on versions 3.0 and above",
                                   "For newer brokers, only the start offset of the transaction to be aborted is "
                                   "required (not supported here: it needs DescribeProducers)")
    new.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    old = abort.add_argument_group("Brokers on versions older than 3.0",
                                   "For older brokers, you must provide all of these arguments")
    old.add_argument("--producer-id", type=int, help="producer id")
    old.add_argument("--producer-epoch", type=int, help="producer epoch")
    old.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")
    p.set_defaults(func=run_transactions)


def _bootstrap(parser, default) -> None:
    parser.add_argument("--bootstrap-server", default=default, metavar="HOST:PORT[,...]",
                        help="hostname and port for the broker to connect to, in the form `host:port` (multiple "
                             f"comma-separated entries can be given; default {DEFAULT_BOOTSTRAP})")


def command_of(args) -> str:
    """The command: the subcommand, or --list / --describe; raises UsageError unless exactly one."""
    given = [c for c in ("list", "describe") if getattr(args, c)]
    if args.txn_command is not None:
        given.insert(0, args.txn_command)
    if len(given) != 1:
        raise UsageError("Command must include exactly one command: list, describe, abort (or --list, --describe)")
    command = given[0]
    if args.txn_command is None:           # the option spelling: the other commands' options are refused
        if command == "describe" and args.transactional_id is None:
            raise UsageError("--describe needs --transactional-id")
        stray = [name for name, allowed in (("transactional_id", "describe"), ("duration_filter", "list"),
                                            ("transactional_id_pattern", "list"))
                 if getattr(args, name) is not None and command != allowed]
        if stray:
            raise UsageError(f"--{stray[0].replace('_', '-')} is not an option of --{command}")
    return command


# ================================================================================ running
def run_transactions(args) -> int:
    try:
        command = command_of(args)
        return asyncio.run(_transactions(args, command))
    except UsageError as exc:
        _err(str(exc))
        _err("See 'groupcoord transactions --help'.")
        return 2
    except Abort as exc:
        _err(str(exc))
        return 1


async def _transactions(args, command: str) -> int:
    try:
        admin = AdminClient(args.bootstrap_server, client_id="groupcoord-transactions", timeout_ms=args.timeout)
    except AdminError as exc:
        raise Abort(str(exc)) from None
    async with admin:
        if command == "list":
            return await _list(admin, args)
        if command == "describe":
            return await _describe(admin, args)
        return await _abort(admin, args)


def _failed(what: str, exc: BaseException) -> Abort:
    """printErrorAndExit(message, throwable): the message, the cause's message, and Kafka's hint."""
    text = exc.message if isinstance(exc, KafkaError) else str(exc)
    return Abort(f"{what}: {text}.{_ENABLE_DEBUG}")


_FAILURES = (KafkaError, AdminError, ProtocolError)


# ---- list ------------------------------------------------------------------------------------
async def _list(admin: AdminClient, args) -> int:
    """ListTransactionsCommand: TransactionalId Coordinator ProducerId TransactionState, by broker."""
    duration = getattr(args, "duration_filter", None)
    pattern = getattr(args, "transactional_id_pattern", None)
    try:
        by_broker = await admin.list_transactions(duration_ms=-1 if duration is None else duration,
                                                  pattern=pattern or None)
    except _FAILURES as exc:
        raise _failed("Failed to list transactions", exc) from None
    rows = [(t.transactional_id, str(broker), str(t.producer_id), t.state)
            for broker, listings in sorted(by_broker.items()) for t in listings]
    sys.stdout.write(pretty_table(LIST_HEADERS, rows))
    return 0


# ---- describe --------------------------------------------------------------------------------
async def _describe(admin: AdminClient, args) -> int:
    """DescribeTransactionsCommand: one row; the start time and duration "None" with no transaction open."""
    txn_id = args.transactional_id
    what = f"Failed to describe transaction state of transactional-id `{txn_id}`"
    try:
        result = (await admin.describe_transactions([txn_id]))[txn_id]
    except _FAILURES as exc:
        raise _failed(what, exc) from None
    if isinstance(result, KafkaError):
        raise _failed(what, result)
    sys.stdout.write(pretty_table(DESCRIBE_HEADERS, [describe_row(txn_id, result, int(time.time() * 1000))]))
    return 0


def describe_row(txn_id: str, d: TransactionDescription, now_ms: int) -> tuple[str, ...]:
    start = d.transaction_start_time_ms
    return (str(d.coordinator_id), txn_id, str(d.producer_id), str(d.producer_epoch), d.state,
            str(d.transaction_timeout_ms), "None" if start is None else str(start),
            "None" if start is None else str(now_ms - start),
            ",".join(f"{tp.topic}-{tp.partition}" for tp in d.topic_partitions))


# ---- abort -----------------------------------------------------------------------------------
async def _abort(admin: AdminClient, args) -> int:
    """AbortTransactionCommand with the producer id, epoch and coordinator epoch given: an abort marker
    written into the partition (``Admin.abortTransaction``); nothing printed when it succeeds."""
    if args.start_offset is None and args.producer_id is None:
        raise Abort("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 "
                    "or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older "
                    "brokers)")
    if args.start_offset is not None and args.producer_id is None:
        raise Abort("--start-offset needs DescribeProducers, which groupcoord's admin client does not speak: give "
                    "--producer-id, --producer-epoch and --coordinator-epoch (groupcoord transactions describe "
                    "shows the producer id and epoch)")
    if args.producer_epoch is None:
        raise Abort("Missing required argument --producer-epoch")
    if args.coordinator_epoch is None:
        raise Abort("Missing required argument --coordinator-epoch")
    # a transaction begun by a new producer id and left hanging before its first marker has coordinator
    # epoch -1 in DescribeProducers: Kafka's tool sends 0 then
    coordinator_epoch = max(args.coordinator_epoch, 0)
    tp = TP(args.topic, args.partition)
    try:
        await admin.abort_transaction(tp, args.producer_id, args.producer_epoch, coordinator_epoch)
    except _FAILURES as exc:
        spec = (f"AbortTransactionSpec(topicPartition={tp.topic}-{tp.partition}, producerId={args.producer_id}, "
                f"producerEpoch={args.producer_epoch}, coordinatorEpoch={coordinator_epoch})")
        raise _failed(f"Failed to abort transaction {spec}", exc) from None
    return 0
