"""Subcommands of ``groupcoord``: ``groups`` (Kafka's kafka-consumer-groups.sh) and ``topics``
(kafka-topics.sh), with Kafka 4.1's options, columns and messages, over :class:`~.admin.AdminClient`
(the Kafka protocol through our codec), so they work against any Kafka cluster.

Tables go to stdout exactly as Kafka prints them (blank line, header, rows; column widths grow with
their values). Warnings (a group rebalancing or without members) go to stderr. Where Kafka would
print an error (and often exit 0 anyway), we print one ``Error: ...`` line to stderr and exit 1;
options that do not go together are refused with Kafka's message and exit code 2.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import re
import sys
from typing import Iterable

from groupcoord.protocol.errors import ErrorCode, KafkaError, ProtocolError

from .admin import EARLIEST, LATEST, AdminClient, AdminError, GroupDescription, TopicDescription
from .assignors.base import TopicPartition as TP

MISSING = "-"                     # Kafka's MISSING_COLUMN_VALUE
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")
#: GroupState.groupStatesForType(CONSUMER), in the enum's order
CONSUMER_GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning",
                         "Reconciling")
GROUP_TYPES = ("Consumer", "Classic")
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"

class UsageError(Exception):
    """Options that do not go together (exit code 2)."""


class CommandError(Exception):
    """What Kafka reports as ``Error: ...`` (exit code 1)."""


def kafka_message(error: KafkaError) -> str:
    """The broker's message, else Kafka's default one of the error (ErrorCode.message is Errors.message())."""
    return error.message


def java_exception(code: ErrorCode | int) -> str:
    """How a Kafka error prints in the Java tools: its exception class and message."""
    if not isinstance(code, ErrorCode):
        return f"org.apache.kafka.common.errors.UnknownServerException: error code {code}"
    return f"org.apache.kafka.common.errors.{code.exception_name}: {code.message}"


def tp_str(tp: TP) -> str:
    return f"{tp.topic}-{tp.partition}"            # TopicPartition.toString()


def fmt(*columns: tuple[object, int | None]) -> str:
    """Java's "%-Ns %-Ms ... %s": each (value, width) left-justified, separated by one space;
    width None: the value as it is."""
    return " ".join(str(v) if w is None else f"{v!s:<{w}}" for v, w in columns)


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _show(value) -> str:
    return MISSING if value is None else str(value)


# ================================================================================ groups: options
def register(subparsers) -> None:
    groups = subparsers.add_parser(
        "groups", help="list, describe, reset offsets of and delete consumer groups (kafka-consumer-groups.sh)",
        description="List all consumer groups, describe a consumer group, delete consumer group info, or reset "
                    "consumer group offsets, as Kafka's kafka-consumer-groups.sh does (same options and output).")
    groups.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT[,...]",
                        help=f"the server(s) to connect to (default {DEFAULT_BOOTSTRAP})")
    actions = groups.add_argument_group("actions (exactly one)")
    actions.add_argument("--list", action="store_true", help="list all consumer groups")
    actions.add_argument("--describe", action="store_true",
                         help="describe consumer groups and their offset lag (the default view: --offsets)")
    actions.add_argument("--delete", action="store_true", help="delete groups (only groups without members)")
    actions.add_argument("--reset-offsets", action="store_true",
                         help="reset the offsets of inactive groups: --dry-run (default) or --execute")
    actions.add_argument("--delete-offsets", action="store_true", help="delete offsets of one group")
    scope = groups.add_argument_group("groups and topics")
    scope.add_argument("--group", action="append", metavar="GROUP", help="the consumer group (repeatable)")
    scope.add_argument("--all-groups", action="store_true", help="apply to all consumer groups")
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P]",
                       help="a topic, with --reset-offsets optionally its partitions: topic1:0,1,2 (repeatable)")
    scope.add_argument("--all-topics", action="store_true",
                       help="with --reset-offsets: every topic the group has committed offsets for")
    views = groups.add_argument_group("describe and list")
    views.add_argument("--offsets", action="store_true", help="partitions with their offsets and lag (default)")
    views.add_argument("--members", action="store_true", help="the group's members")
    views.add_argument("--state", nargs="?", const="", default=None, metavar="STATES",
                       help="with --describe: the group's state; with --list: a STATE column, and only groups "
                            "in STATES if given (e.g. stable,empty)")
    views.add_argument("--type", nargs="?", const="", default=None, metavar="TYPES",
                       help="with --list: a TYPE column, and only groups of TYPES if given (classic,consumer)")
    views.add_argument("--verbose", action="store_true", help="more columns with --offsets, --members, --state")
    kinds = groups.add_argument_group(
        "groups of every type (with --list, as Kafka's kafka-groups.sh: GROUP, TYPE and PROTOCOL columns)")
    kinds.add_argument("--group-type", metavar="TYPE", help="only groups of this type (classic, consumer, share, "
                                                            "streams)")
    kinds.add_argument("--protocol", metavar="PROTOCOL", help="only groups of this protocol type (e.g. consumer)")
    kinds.add_argument("--consumer", action="store_true",
                       help="every kind of consumer group: type consumer, and classic with protocol consumer or none")
    kinds.add_argument("--share", action="store_true", help="share groups")
    kinds.add_argument("--streams", action="store_true", help="streams groups")
    reset = groups.add_argument_group("reset specifications (with --reset-offsets; exactly one)")
    reset.add_argument("--to-earliest", action="store_true", help="the log start offset")
    reset.add_argument("--to-latest", action="store_true", help="the log end offset")
    reset.add_argument("--to-current", action="store_true", help="the committed offset (the log end if none)")
    reset.add_argument("--to-offset", type=int, metavar="OFFSET", help="an offset")
    reset.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N (may be negative)")
    reset.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                       help="the first offset at or after a time (UTC unless a zone is given: Z, +hh:mm)")
    reset.add_argument("--by-duration", metavar="PnDTnHnMnS", help="the first offset at or after now minus a duration")
    reset.add_argument("--from-file", metavar="CSV", help="offsets from a CSV file: topic,partition,offset "
                                                           "(group,topic,partition,offset for several groups)")
    reset.add_argument("--dry-run", action="store_true", help="only show the new offsets (the default)")
    reset.add_argument("--execute", action="store_true", help="commit the new offsets")
    reset.add_argument("--export", action="store_true", help="print the new offsets as CSV (for --from-file)")
    groups.add_argument("--timeout", type=int, default=5000, metavar="MS",
                        help="how long each request may take, retries included (default 5000)")
    groups.set_defaults(func=run_groups)

    topics = subparsers.add_parser(
        "topics", help="list, describe, create and delete topics (kafka-topics.sh)",
        description="Create, delete, describe, or list topics, as Kafka's kafka-topics.sh does.")
    topics.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT[,...]",
                        help=f"the server(s) to connect to (default {DEFAULT_BOOTSTRAP})")
    actions = topics.add_argument_group("actions (exactly one)")
    actions.add_argument("--list", action="store_true", help="list all available topics")
    actions.add_argument("--describe", action="store_true", help="list details for the given topics")
    actions.add_argument("--create", action="store_true", help="create a new topic")
    actions.add_argument("--alter", action="store_true", help="add partitions to a topic (with --partitions)")
    actions.add_argument("--delete", action="store_true", help="delete a topic")
    topics.add_argument("--topic", metavar="TOPIC", help="the topic to create, describe or delete; also a regular "
                                                         "expression, except for --create")
    topics.add_argument("--partitions", type=int, metavar="N",
                        help="with --create: the number of partitions (default: the cluster's num.partitions); "
                             "with --alter: the new number of partitions (an increase)")
    topics.add_argument("--replication-factor", type=int, metavar="N",
                        help="with --create: the replication factor (default: the cluster's)")
    topics.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                        help="with --create: a topic configuration override (repeatable)")
    topics.add_argument("--if-exists", action="store_true",
                        help="with --describe or --delete: do nothing if the topic does not exist")
    topics.add_argument("--if-not-exists", action="store_true",
                        help="with --create: do not fail if the topic already exists")
    topics.add_argument("--exclude-internal", action="store_true",
                        help="with --list or --describe: leave out internal topics")
    topics.set_defaults(func=run_topics)


_GROUP_ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
_SCENARIOS = ("to_offset", "shift_by", "to_datetime", "by_duration", "to_earliest", "to_latest", "to_current",
              "from_file")


def _given(args, name: str) -> bool:
    value = getattr(args, name)
    return value is not None and value is not False and value != []


def _opt(name: str) -> str:
    return f"[{name.replace('_', '-')}]"        # how joptsimple names an option in a message


def check_group_options(args) -> None:
    """ConsumerGroupCommandOptions.checkArgs, with Kafka's messages; raises UsageError."""
    given = [a for a in _GROUP_ACTIONS if getattr(args, a)]
    if len(given) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                         "--delete-offsets")
    action = given[0]
    groups_scope = f"{_opt('group')}, {_opt('all-groups')}"
    for name, allowed in (("members", ("describe",)), ("offsets", ("describe",)), ("verbose", ("describe",)),
                          ("state", ("describe", "list")), ("type", ("list",))):
        if _given(args, name) and action not in allowed:
            raise UsageError(f"Option(s) {_opt(name)} are unavailable given other options on the command line")
    kinds = [k for k in _KINDS if _given(args, k)]
    if kinds and action != "list":
        raise UsageError(f"Option(s) {_opt(kinds[0])} are unavailable given other options on the command line")
    for exclusive in ("consumer", "share", "streams"):
        others = [k for k in kinds if k != exclusive]
        if exclusive in kinds and others:      # CommandLineUtils.checkInvalidArgs of GroupsCommand
            raise UsageError(f'Option "{_opt(exclusive)}" can\'t be used with option "{_opt(others[0])}"')
    if args.group_type is not None and _GROUP_TYPE_NAMES.get(args.group_type.lower()) is None:
        raise UsageError("--group-type must be a valid group type.")
    if action == "describe":
        if not args.group and not args.all_groups:
            raise UsageError(f"Option {_opt('describe')} takes one of these options: {groups_scope}")
        if sum(1 for v in (args.members, args.offsets, args.state is not None) if v) > 1:
            raise UsageError(f"Option {_opt('describe')} takes at most one of these options: "
                             f"{_opt('members')}, {_opt('offsets')}, {_opt('state')}")
        if args.state:
            raise UsageError(f"Option {_opt('describe')} does not take a value for {_opt('state')}")
    if action == "delete":
        if not args.group and not args.all_groups:
            raise UsageError(f"Option {_opt('delete')} takes one of these options: {groups_scope}")
        if args.topic:
            raise UsageError("The consumer does not support topic-specific offset deletion from a consumer group.")
    if action == "delete_offsets":
        if not args.group or not args.topic:
            raise UsageError(f"Option {_opt('delete-offsets')} takes the following options: "
                             f"{_opt('group')}, {_opt('topic')}")
        if len(args.group) > 1:
            raise UsageError("Found multiple arguments for option group, but you asked for only one")
    if action == "reset_offsets":
        if args.dry_run and args.execute:
            raise UsageError(f"Option {_opt('reset-offsets')} only accepts one of {_opt('execute')} and "
                             f"{_opt('dry-run')}")
        if not args.group and not args.all_groups:
            raise UsageError(f"Option {_opt('reset-offsets')} takes one of these options: {groups_scope}")
        scenarios = [s for s in _SCENARIOS if _given(args, s)]
        if len(scenarios) > 1:
            raise UsageError(f'Option "{_opt(scenarios[0])}" can\'t be used with option "{_opt(scenarios[1])}"')
        if not scenarios:
            raise UsageError(f"Option '{_opt('reset-offsets')}' requires one of the following scenarios: "
                             f"[{', '.join(_opt(s) for s in _SCENARIOS)}]")
        if not args.topic and not args.all_topics and not args.from_file:
            raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    else:
        for name in _SCENARIOS + ("dry_run", "execute", "export", "all_topics"):
            if _given(args, name):
                raise UsageError(f'Option "{_opt(name)}" can\'t be used with option "{_opt(action)}"')
    if args.group and args.all_groups:
        raise UsageError(f'Option "{_opt("group")}" can\'t be used with option "{_opt("all-groups")}"')
    if args.group and action == "list":
        raise UsageError(f'Option "{_opt("group")}" can\'t be used with option "{_opt("list")}"')
    if args.topic and action in ("list", "describe"):
        raise UsageError(f'Option "{_opt("topic")}" can\'t be used with option "{_opt(action)}"')


def _parse_states(text: str) -> list[str]:
    """groupStatesFromString: case-insensitive, only the consumer group states."""
    by_upper = {s.upper(): s for s in CONSUMER_GROUP_STATES}
    states = [by_upper.get(s.strip().upper()) for s in text.split(",")]
    if None in states:
        raise UsageError(f"Invalid state list '{text}'. Valid states are: {', '.join(CONSUMER_GROUP_STATES)}")
    return states


def _parse_types(text: str) -> list[str]:
    types = [t.strip().lower() for t in text.lower().split(",")]
    if any(t not in ("classic", "consumer") for t in types):
        raise UsageError(f"Invalid types list '{text}'. Valid types are: {', '.join(GROUP_TYPES)}")
    return types


# ================================================================================ groups: running
def run_groups(args) -> int:
    return _run(args, check_group_options, _groups, "groups", "Error: {}",
                "Error: Executing consumer group command failed due to {}")


def _run(args, check, command, name: str, command_error: str, failed: str) -> int:
    """An admin command: its options checked, then run; its errors printed as Kafka's tool prints
    them (``command_error``, ``failed``: formats of the message) with the exit status it gives."""
    try:
        check(args)
        return asyncio.run(command(args))
    except UsageError as exc:
        _err(str(exc))
        _err(f"See 'groupcoord {name} --help'.")
        return 2
    except CommandError as exc:
        _err(command_error.format(exc))
        return 1
    except KafkaError as exc:
        _err(failed.format(kafka_message(exc)))
        return 1
    except (AdminError, ProtocolError) as exc:      # ProtocolError: an answer that does not decode
        _err(failed.format(exc))
        return 1


async def _groups(args) -> int:
    async with AdminClient(args.bootstrap_server, client_id="groupcoord-groups", timeout_ms=args.timeout) as admin:
        if args.list:
            return await _list_groups(admin, args)
        if args.describe:
            return await _describe_groups(admin, args)
        if args.delete:
            return await _delete_groups(admin, args)
        if args.reset_offsets:
            return await _reset_offsets(admin, args)
        return await _delete_offsets(admin, args)


async def _group_ids(admin: AdminClient, args) -> list[str]:
    if args.all_groups:
        return [g.group_id for g in await admin.list_groups()]
    return list(dict.fromkeys(args.group))


# ---- --list --------------------------------------------------------------------------------
#: kafka-groups.sh's options (GroupsCommand), and Kafka's GroupType names
_KINDS = ("group_type", "protocol", "consumer", "share", "streams")
_GROUP_TYPE_NAMES = {"consumer": "Consumer", "classic": "Classic", "share": "Share", "streams": "Streams"}


def _list_all_kinds(listings, args) -> None:
    """GroupsCommand.printGroupDetails: GROUP, TYPE, PROTOCOL, filtered as its combinedFilter does."""
    wanted = _GROUP_TYPE_NAMES.get((args.group_type or "").lower())
    rows = []
    for g in listings:
        kind = _GROUP_TYPE_NAMES.get((g.type or "").lower(), "Unknown" if g.type else "")
        protocol = g.protocol_type or ""
        if wanted is not None:
            keep = kind == wanted and (args.protocol is None or protocol == args.protocol)
        elif args.protocol is not None:
            keep = protocol == args.protocol
        elif args.consumer:
            keep = protocol in ("consumer", "") or kind == "Consumer"
        elif args.share or args.streams:
            keep = kind == ("Share" if args.share else "Streams")
        else:
            keep = True
        if keep:
            rows.append([g.group_id, kind, protocol])
    width = max([20] + [len(item) for row in rows for item in row])
    print(f"{'GROUP':<{width}} {'TYPE':<{width}} {'PROTOCOL':<{width}}")
    for row in rows:
        print("".join(f"{item:<{width}} " for item in row))


async def _list_groups(admin: AdminClient, args) -> int:
    if any(_given(args, k) for k in _KINDS):
        _list_all_kinds(await admin.list_groups(), args)
        return 0
    with_state, with_type = args.state is not None, args.type is not None
    if not with_state and not with_type:
        for g in await admin.list_groups():
            print(g.group_id)
        return 0
    states = _parse_states(args.state) if args.state else None
    types = _parse_types(args.type) if args.type else ("classic", "consumer")
    listings = await admin.list_groups(states=states, types=types)
    width = max([15] + [len(g.group_id) for g in listings]) + 10
    header, rows = ["GROUP"], [[g.group_id] for g in listings]
    if with_type:
        header.append("TYPE")
        for row, g in zip(rows, listings):
            row.append(next((t for t in GROUP_TYPES if t.lower() == (g.type or "").lower()), "Unknown"))
    if with_state:
        header.append("STATE")
        for row, g in zip(rows, listings):
            row.append(g.state or "Unknown")
    for row in [header] + rows:
        # "%-Ns" then " %-20s" per extra column, trailing spaces included, as Kafka prints it
        print(f"{row[0]:<{width}}" + "".join(f" {v:<20}" for v in row[1:]))
    return 0


# ---- --describe ------------------------------------------------------------------------------
def _member_notice(d: GroupDescription, rows: int) -> bool:
    """shouldPrintMemberState: a word on the group's state; whether there is anything to show."""
    if d.state == "Dead":
        raise CommandError(f"Consumer group '{d.group_id}' does not exist.")
    if d.state == "Empty":
        _err(f"Consumer group '{d.group_id}' has no active members.")
    elif d.state in REBALANCING:
        _err(f"Warning: Consumer group '{d.group_id}' is rebalancing.")
    elif d.state != "Stable":
        raise CommandError(f"Expected a valid consumer group state, but found '{d.state}'.")
    return rows > 0


async def _describe_groups(admin: AdminClient, args) -> int:
    group_ids = await _group_ids(admin, args)
    described = await admin.describe_groups(group_ids)
    status = 0
    for group_id in sorted(group_ids):
        d = described[group_id]
        try:
            if args.members:
                _print_members(d, args.verbose)
            elif args.state is not None:
                _print_state(d, args.verbose)
            else:
                await _print_offsets(admin, d, args.verbose)
        except CommandError as exc:       # one group that does not exist does not hide the others
            _err(f"Error: {exc}")
            status = 1
    return status


async def offset_rows(admin: AdminClient, d: GroupDescription) -> list[dict]:
    """collectGroupsOffsets: the partitions of each member with an assignment (most partitions
    first), then the partitions with a committed offset that no member has."""
    committed = await admin.committed_offsets(d.group_id) if d.state != "Dead" else {}
    members = sorted((m for m in d.members if m.assignment), key=lambda m: -len(m.assignment))
    owned = [(m, tp) for m in members for tp in sorted(set(m.assignment))]
    unowned = sorted(set(committed) - {tp for _, tp in owned})
    partitions = {tp for _, tp in owned} | set(unowned)
    ends = await admin.list_offsets(partitions, LATEST) if partitions else {}

    def row(tp: TP, consumer_id: str, host: str, client_id: str) -> dict:
        c = committed.get(tp)
        end = ends.get(tp)
        return {"group": d.group_id, "topic": tp.topic, "partition": tp.partition,
                "leader_epoch": None if c is None else c.leader_epoch,
                "offset": None if c is None else c.offset, "log_end_offset": end,
                "lag": None if c is None or c.offset == -1 or end is None else end - c.offset,
                "consumer_id": consumer_id, "host": host, "client_id": client_id}
    return ([row(tp, m.member_id, m.host, m.client_id) for m, tp in owned]
            + [row(tp, MISSING, MISSING, MISSING) for tp in unowned])


async def _print_offsets(admin: AdminClient, d: GroupDescription, verbose: bool) -> None:
    rows = await offset_rows(admin, d)
    if not _member_notice(d, len(rows)):
        return
    w_group = max([15] + [len(r["group"]) for r in rows])
    w_topic = max([15] + [len(r["topic"]) for r in rows])
    w_id = max([15] + [len(r["consumer_id"]) for r in rows])
    w_host = max([15] + [len(r["host"]) for r in rows])

    def line(group, topic, partition, epoch, offset, end, lag, consumer_id, host, client_id) -> str:
        cols = [(group, w_group), (topic, w_topic), (partition, 10)]
        if verbose:
            cols.append((epoch, 15))
        cols += [(offset, 15), (end, 15), (lag, 15), (consumer_id, w_id), (host, w_host), (client_id, None)]
        return fmt(*cols)
    print()
    print(line("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
               "CONSUMER-ID", "HOST", "CLIENT-ID"))
    for r in rows:
        print(line(r["group"], r["topic"], r["partition"], _show(r["leader_epoch"]), _show(r["offset"]),
                   _show(r["log_end_offset"]), _show(r["lag"]), r["consumer_id"], r["host"], r["client_id"]))


def assignment_string(partitions: Iterable[TP]) -> str:
    """getAssignmentString: "topic1:0,1;topic2:0", topics and partitions sorted."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ";".join(sorted(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in by_topic.items()))


def _print_members(d: GroupDescription, verbose: bool) -> None:
    show = _member_notice(d, len(d.members))
    members = d.members if show else ()
    w_group = max(15, len(d.group_id)) if members else 15
    w_id = max([15] + [len(m.member_id) for m in members])
    w_instance = max([17] + [len(m.group_instance_id or "") for m in members])
    w_host = max([15] + [len(m.host) for m in members])
    w_client = max([15] + [len(m.client_id) for m in members])
    with_instance = any(m.group_instance_id for m in members)
    assignments = [assignment_string(m.assignment) or MISSING for m in members]
    targets = [assignment_string(m.target_assignment or ()) or MISSING for m in members]
    w_current = max([20] + [len(a) for a in assignments])
    w_target = max([20] + [len(t) for t in targets])

    def line(group, member_id, instance, host, client, count, epoch="", current="", target_epoch="", target=""):
        cols = [(group, w_group), (member_id, w_id)]
        if with_instance:
            cols.append((instance, w_instance))
        cols += [(host, w_host), (client, w_client), (count, 15)]
        text = fmt(*cols) + " "                    # "%-15s " ends the row with a space
        if verbose:
            text += fmt((epoch, 15), (current, w_current), (target_epoch, 15), (target, w_target))
        return text
    print()
    print(line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
               "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"))
    for m, current, target in zip(members, assignments, targets):
        # a classic group's members have no epochs and no target assignment
        print(line(d.group_id, m.member_id, m.group_instance_id or "", m.host, m.client_id, len(m.assignment),
                   _show(m.member_epoch), current, _show(d.target_assignment_epoch), target))


def _print_state(d: GroupDescription, verbose: bool) -> None:
    _member_notice(d, 1)
    coordinator = f"{d.coordinator.host}:{d.coordinator.port}  ({d.coordinator.node_id})"
    w_group, w_coord = max(15, len(d.group_id)), max(25, len(coordinator))
    strategy = d.assignor or MISSING
    if verbose:
        cols = [("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                 "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"),
                (d.group_id, coordinator, strategy, d.state, _show(d.group_epoch), _show(d.target_assignment_epoch),
                 len(d.members))]
        widths = (w_group, w_coord, 20, 20, 15, 25, None)
    else:
        cols = [("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
                (d.group_id, coordinator, strategy, d.state, len(d.members))]
        widths = (w_group, w_coord, 20, 20, None)
    print()
    for values in cols:
        print(fmt(*zip(values, widths)))


# ---- --delete --------------------------------------------------------------------------------
async def _delete_groups(admin: AdminClient, args) -> int:
    results = await admin.delete_groups(await _group_ids(admin, args))
    deleted = [g for g, code in results.items() if code == ErrorCode.NONE]
    failed = {g: code for g, code in results.items() if code != ErrorCode.NONE}
    if not failed:
        print(f"Deletion of requested consumer groups ({', '.join(repr_group(g) for g in deleted)}) was successful.")
        return 0
    _err("Error: Deletion of some consumer groups failed:")
    for group, code in failed.items():
        _err(f"* Group {repr_group(group)} could not be deleted due to: {java_exception(code)}")
    if deleted:
        print(f"\nThese consumer groups were deleted successfully: {', '.join(repr_group(g) for g in deleted)}")
    return 1


def repr_group(group: str) -> str:
    return f"'{group}'"


# ---- --delete-offsets ------------------------------------------------------------------------
async def _delete_offsets(admin: AdminClient, args) -> int:
    group = args.group[0]
    partitions: set[TP] = set()
    results: dict[TP, str | None] = {}
    whole_topics = []
    for arg in args.topic:
        if ":" in arg:
            partitions.update(parse_topic_partitions(arg))
        else:
            whole_topics.append(arg)
    if whole_topics:
        for name, t in (await admin.describe_topics(whole_topics)).items():
            if isinstance(t, KafkaError):
                results[TP(name, -1)] = f"Error: {java_exception(t.code)}"
            else:
                partitions.update(TP(name, p.partition) for p in t.partitions)
    top, per_partition = await admin.delete_offsets(group, partitions) if partitions else (ErrorCode.NONE, {})
    overall = top if top != ErrorCode.NONE else next(
        (c for _, c in sorted(per_partition.items()) if c != ErrorCode.NONE), ErrorCode.NONE)
    for tp in partitions:
        code = top if top != ErrorCode.NONE else per_partition.get(tp, ErrorCode.NONE)
        results[tp] = None if code == ErrorCode.NONE else f"Error: {java_exception(code)}"
    E = ErrorCode
    if overall == E.NONE:
        print(f"Request succeeded for deleting offsets from group {group}.")
    elif overall in (E.INVALID_GROUP_ID, E.GROUP_ID_NOT_FOUND, E.GROUP_AUTHORIZATION_FAILED, E.NON_EMPTY_GROUP):
        _err(f"Error: {overall.message}")
    elif overall in (E.GROUP_SUBSCRIBED_TO_TOPIC, E.TOPIC_AUTHORIZATION_FAILED, E.UNKNOWN_TOPIC_OR_PARTITION):
        _err("Error: Encountered some partition-level error, see the follow-up details.")
    else:
        _err(f"Error: Encountered some unknown error: {getattr(overall, 'name', overall)}")
    width = max([15] + [len(tp.topic) for tp in results])
    print()
    print(fmt(("TOPIC", width), ("PARTITION", 10), ("STATUS", 15)))
    for tp, error in sorted(results.items(), key=lambda e: e[0].topic + str(e[0].partition)):
        print(fmt((tp.topic, width), (tp.partition if tp.partition >= 0 else MISSING, 10),
                  (error or "Successful", 15)))
    return 0 if overall == ErrorCode.NONE and all(e is None for e in results.values()) else 1


# ---- --reset-offsets -------------------------------------------------------------------------
def parse_topic_partitions(arg: str) -> list[TP]:
    """"topic:0,1,2" -> its partitions (parseTopicsWithPartitions)."""
    parts = arg.split(":")
    if len(parts) != 2:
        raise UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    topic, partitions = parts
    out = []
    for p in partitions.split(","):
        try:
            out.append(TP(topic, int(p)))
        except ValueError:
            raise UsageError(f"Invalid partition '{p}' specified in topic arg '{arg}''") from None
    return out


_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)?")


def parse_datetime(text: str) -> int:
    """Utils.getDateTime: 'YYYY-MM-DDTHH:mm:SS.sss' with an optional zone (Z, +hh, +hhmm, +hh:mm;
    none: UTC), to epoch milliseconds."""
    m = _DATETIME.fullmatch(text.strip())
    if m is None:
        raise UsageError(f"Error parsing timestamp '{text}': expected YYYY-MM-DDTHH:mm:SS.sss, optionally "
                         "followed by a zone (Z, +hh, +hhmm, +hh:mm)")
    zone = m.group(8) or "Z"
    if zone == "Z":
        tz = dt.timezone.utc
    else:
        digits = zone[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + (int(digits[2:]) if len(digits) > 2 else 0)
        tz = dt.timezone(dt.timedelta(minutes=minutes if zone[0] == "+" else -minutes))
    try:
        when = dt.datetime(*(int(m.group(i)) for i in range(1, 7)), int(m.group(7)) * 1000, tzinfo=tz)
    except ValueError as exc:
        raise UsageError(f"Error parsing timestamp '{text}': {exc}") from None
    return int(when.timestamp() * 1000)


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)


def parse_duration_ms(text: str) -> int:
    """java.time.Duration.parse ("PnDTnHnMn.nS") in milliseconds."""
    m = _DURATION.fullmatch(text.strip())
    if m is None or m.group(3) == "T" or not any(m.group(i) for i in (2, 4, 5, 6)):
        raise UsageError(f"Text cannot be parsed to a Duration: {text}")
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 4, 5, 6))
    fraction = (m.group(7) or "").ljust(9, "0")
    nanos = int(fraction) * (-1 if (m.group(6) or "").startswith("-") else 1)
    total = ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + nanos // 1_000_000
    return -total if m.group(1) == "-" else total


def read_reset_plan(path: str, groups: list[str]) -> dict[str, dict[TP, int]]:
    """A --from-file CSV: "topic,partition,offset" lines for one group, or
    "group,topic,partition,offset" (what --export prints)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f.read().split("\n") if line.strip()]
    except OSError as exc:
        raise CommandError(f"Executing consumer group command failed due to {exc}") from None
    plan: dict[str, dict[TP, int]] = {}

    def ints(*values: str) -> list[int]:
        try:
            return [int(v) for v in values]
        except ValueError:
            raise CommandError(f"Executing consumer group command failed due to an invalid line in {path}: "
                               f"{line}") from None
    single = len(groups) == 1 and bool(lines) and len(lines[0].split(",")) == 3
    for line in lines:
        fields = line.split(",")
        if single and len(fields) == 3:
            partition, offset = ints(fields[1], fields[2])
            plan.setdefault(groups[0], {})[TP(fields[0], partition)] = offset
        elif not single and len(fields) == 4:
            partition, offset = ints(fields[2], fields[3])
            plan.setdefault(fields[0], {})[TP(fields[1], partition)] = offset
        else:
            ints("x")       # raises, naming the line
    return plan


async def _reset_offsets(admin: AdminClient, args) -> int:
    if not args.dry_run and not args.execute:
        _err("WARN: No action will be performed as the --execute option is missing.In a future major release, the "
             "default behavior of this command will be to prompt the user before executing the reset rather than "
             "doing a dry run. You should add the --dry-run option explicitly if you are scripting this command "
             "and want to keep the current default behavior without prompting.")
    # checked before anything is read: offsets and dates that cannot be parsed
    if args.to_datetime is not None:
        parse_datetime(args.to_datetime)
    if args.by_duration is not None:
        parse_duration_ms(args.by_duration)
    group_ids = await _group_ids(admin, args)
    described = await admin.describe_groups(group_ids)
    plans: dict[str, dict[TP, int]] = {}
    status = 0
    for group_id in group_ids:
        state = described[group_id].state
        if state in ("Empty", "Dead"):              # Dead: a group that does not exist (yet)
            plans[group_id] = await _reset_inactive_group(admin, args, group_id)
        else:
            _err(f"Error: Assignments can only be reset if the group '{group_id}' is inactive, but the current "
                 f"state is {state}.")
            plans[group_id] = {}
            status = 1
    if args.export:
        single = len(args.group or ()) == 1
        print("".join(f"{tp.topic},{tp.partition},{offset}\n" if single else
                      f"{g},{tp.topic},{tp.partition},{offset}\n"
                      for g, plan in plans.items() for tp, offset in sorted(plan.items())))
    else:
        print_reset_plan(plans)
    return status


def print_reset_plan(plans: dict[str, dict[TP, int]]) -> None:
    """GroupOffsetsResetter.printOffsetsToReset."""
    w_group = max([15] + [len(g) for g in plans])
    w_topic = max([15] + [len(tp.topic) for plan in plans.values() for tp in plan])

    def line(group, topic, partition, offset) -> str:
        return fmt((group, w_group), (topic, w_topic), (partition, 10), (offset, None))
    print()                                        # "%n" before the header, or println() when nothing
    if plans:
        print(line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))
    for group, plan in plans.items():
        for tp, offset in sorted(plan.items()):
            print(line(group, tp.topic, tp.partition, offset))


async def _partitions_to_reset(admin: AdminClient, args, group_id: str, committed) -> list[TP]:
    if args.all_topics:
        return sorted(committed)
    if not args.topic:
        return []                                   # --from-file: the file says
    partitions: list[TP] = []
    whole_topics = []
    for arg in args.topic:
        if ":" in arg:
            partitions.extend(parse_topic_partitions(arg))
        else:
            whole_topics.append(arg)
    if whole_topics:
        for name, t in (await admin.describe_topics(whole_topics)).items():
            if isinstance(t, KafkaError):
                raise t
            partitions.extend(TP(name, p.partition) for p in t.partitions)
    return list(dict.fromkeys(partitions))


async def _check_partitions(admin: AdminClient, partitions: list[TP]) -> None:
    """checkAllTopicPartitionsValid: every partition exists and has a leader."""
    if not partitions:
        return
    topics = await admin.describe_topics(sorted({tp.topic for tp in partitions}))
    leaders = {TP(name, p.partition): p.leader for name, t in topics.items()
               if isinstance(t, TopicDescription) for p in t.partitions}
    missing = [tp for tp in partitions if tp not in leaders]
    if missing:
        raise CommandError("Executing consumer group command failed due to The partitions "
                           f"\"{','.join(tp_str(tp) for tp in missing)}\" do not exist")
    leaderless = [tp for tp in partitions if leaders[tp] is None]
    if leaderless:
        raise CommandError("Executing consumer group command failed due to The partitions "
                           f"\"{','.join(tp_str(tp) for tp in leaderless)}\" have no leader")


async def _within_log(admin: AdminClient, wanted: dict[TP, int]) -> dict[TP, int]:
    """checkOffsetsRange: offsets past the log end or before its start are moved into the log."""
    starts = await admin.list_offsets(wanted, EARLIEST)
    ends = await admin.list_offsets(wanted, LATEST)
    out = {}
    for tp, offset in wanted.items():
        if tp in ends and offset > ends[tp]:
            _err(f"WARN New offset ({offset}) is higher than latest offset for topic partition {tp_str(tp)}. "
                 f"Value will be set to {ends[tp]}.")
            offset = ends[tp]
        elif tp in starts and offset < starts[tp]:
            _err(f"WARN New offset ({offset}) is lower than earliest offset for topic partition {tp_str(tp)}. "
                 f"Value will be set to {starts[tp]}.")
            offset = starts[tp]
        out[tp] = offset
    return out


async def _log_offsets(admin: AdminClient, partitions: list[TP], spec: int, what: str) -> dict[TP, int]:
    found = await admin.list_offsets(partitions, spec)
    for tp in partitions:
        if tp not in found:
            raise UsageError(f"Error getting {what} offset of topic partition: {tp_str(tp)}")
    return {tp: found[tp] for tp in partitions}


async def _offsets_at(admin: AdminClient, partitions: list[TP], timestamp: int) -> dict[TP, int]:
    """getLogTimestampOffsets: the first offset at or after the time; the log end where none is."""
    found = await admin.list_offsets(partitions, timestamp)
    out = {tp: found[tp] for tp in partitions if found.get(tp, -1) >= 0}
    empty = [tp for tp in partitions if tp not in out]
    for tp in empty:
        print(f"\nWarn: Partition {tp.partition} from topic {tp.topic} is empty. Falling back to latest known offset.")
    if empty:
        out.update(await _log_offsets(admin, empty, LATEST, "offset by timestamp"))
    return out


async def _reset_inactive_group(admin: AdminClient, args, group_id: str) -> dict[TP, int]:
    committed = await admin.committed_offsets(group_id)
    partitions = await _partitions_to_reset(admin, args, group_id, committed)
    await _check_partitions(admin, partitions)
    if args.to_offset is not None:
        plan = await _within_log(admin, {tp: args.to_offset for tp in partitions})
    elif args.to_earliest:
        plan = await _log_offsets(admin, partitions, EARLIEST, "starting")
    elif args.to_latest:
        plan = await _log_offsets(admin, partitions, LATEST, "ending")
    elif args.shift_by is not None:
        for tp in partitions:
            if tp not in committed:
                raise UsageError(f"Cannot shift offset for partition {tp_str(tp)} since there is no current "
                                 "committed offset")
        plan = await _within_log(admin, {tp: committed[tp].offset + args.shift_by for tp in partitions})
    elif args.to_datetime is not None:
        plan = await _offsets_at(admin, partitions, parse_datetime(args.to_datetime))
    elif args.by_duration is not None:
        now_ms = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
        plan = await _offsets_at(admin, partitions, now_ms - parse_duration_ms(args.by_duration))
    elif args.from_file is not None:
        from_file = read_reset_plan(args.from_file, args.group or [])
        if group_id not in from_file:
            _err(f"Error: No reset plan for group {group_id} found.")
            return {}
        plan = await _within_log(admin, from_file[group_id])
    else:  # --to-current
        plan = {tp: committed[tp].offset for tp in partitions if tp in committed}
        uncommitted = [tp for tp in partitions if tp not in committed]
        if uncommitted:
            plan.update(await _log_offsets(admin, uncommitted, LATEST, "ending"))
    if args.execute and plan:
        errors = {tp: code for tp, code in (await admin.alter_offsets(group_id, plan)).items()
                  if code != ErrorCode.NONE}
        if errors:
            tp, code = min(errors.items())
            raise CommandError(f"Executing consumer group command failed due to {java_exception(code)} "
                               f"({tp_str(tp)})")
    return plan


# ================================================================================ topics
_TOPIC_ACTIONS = ("list", "describe", "create", "alter", "delete")
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def check_topic_options(args) -> None:
    """TopicCommandOptions.checkArgs, with Kafka's messages; raises UsageError."""
    given = [a for a in _TOPIC_ACTIONS if getattr(args, a)]
    if len(given) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    action = given[0]
    if action in ("create", "alter", "delete") and not args.topic:
        raise UsageError(f'Missing required argument "{_opt("topic")}"')
    if action == "alter":
        if args.config:
            raise UsageError('Option combination "[bootstrap-server, config]" can\'t be used with option "[alter]" '
                             "(To alter topic configurations, the kafka-configs tool can be used.)")
        if args.partitions is None:
            raise UsageError(f'Missing required argument "{_opt("partitions")}"')
    allowed = {"partitions": ("create", "alter"), "replication_factor": ("create",), "config": ("create",),
               "if_exists": ("alter", "delete", "describe"), "if_not_exists": ("create",),
               "exclude_internal": ("list", "describe")}
    for name, actions in allowed.items():
        if _given(args, name) and action not in actions:
            raise UsageError(f'Option "{_opt(name)}" can\'t be used with option "{_opt(action)}"')


def run_topics(args) -> int:
    return _run(args, check_topic_options, _topics, "topics", "{}", "Error while executing topic command : {}")


async def _topics(args) -> int:
    async with AdminClient(args.bootstrap_server, client_id="groupcoord-topics") as admin:
        if args.create:
            return await _create_topic(admin, args)
        names = await _matching_topics(admin, args)
        if args.list:
            print("\n".join(names))
            return 0
        if args.topic and not names and not args.if_exists:
            raise CommandError(f"Topic '{args.topic}' does not exist as expected")
        if args.describe:
            _describe_topics(await admin.describe_topics(names))
            return 0
        if args.alter:
            for name in names:       # TopicCommand.alterTopic: each topic the expression matches
                await admin.create_partitions(name, args.partitions)
            return 0
        if not names:
            return 0
        failed = [(n, e) for n, e in (await admin.delete_topics(names)).items() if e is not None]
        if failed:
            raise KafkaError(failed[0][1].code, failed[0][1].message)
        return 0


def _is_internal(name: str, t) -> bool:
    return (isinstance(t, TopicDescription) and t.internal) or name in INTERNAL_TOPICS


async def _matching_topics(admin: AdminClient, args) -> list[str]:
    """getTopics: every topic (internal ones unless --exclude-internal), sorted; with --topic only
    those its regular expression matches (IncludeList: commas are alternatives)."""
    topics = await admin.describe_topics()
    names = sorted(n for n, t in topics.items() if not (args.exclude_internal and _is_internal(n, t)))
    if args.topic is None:
        return names
    regex = re.sub(r"""^["']+|["']+$""", "", args.topic.strip().replace(",", "|").replace(" ", ""))
    try:
        pattern = re.compile(regex)
    except re.error as exc:
        raise UsageError(f"{regex} is an invalid regex: {exc}") from None
    return [n for n in names if pattern.fullmatch(n)]


def topic_id_string(topic_id) -> str:
    """Uuid.toString(): URL-safe base64 of the 16 bytes, no padding."""
    import base64
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def _describe_topics(topics: dict) -> None:
    """TopicDescription and PartitionDescription.printDescription. "Configs:" stays empty (``groupcoord
    configs --topic T`` shows a topic's configs)."""
    for name in sorted(topics):
        t = topics[name]
        if isinstance(t, KafkaError):
            raise t
        line = f"Topic: {name}"
        if t.topic_id.int:
            line += f"\tTopicId: {topic_id_string(t.topic_id)}"
        rf = len(t.partitions[0].replicas) if t.partitions else 0
        print(f"{line}\tPartitionCount: {len(t.partitions)}\tReplicationFactor: {rf}\tConfigs: ")
        for p in t.partitions:
            print(f"\tTopic: {name}\tPartition: {p.partition}\tLeader: {'none' if p.leader is None else p.leader}"
                  f"\tReplicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
                  "\tElr: N/A\tLastKnownElr: N/A")


async def _create_topic(admin: AdminClient, args) -> int:
    name = args.topic
    if args.replication_factor is not None and not 1 <= args.replication_factor <= 32767:
        raise CommandError("The replication factor must be between 1 and 32767 inclusive")
    if args.partitions is not None and args.partitions < 1:
        raise CommandError("The partitions must be greater than 0")
    configs = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or "=" in value:
            raise CommandError('requirement failed: Invalid topic config: all configs to be added must be in the '
                               'format "key=val".')
        configs[key.strip()] = value.strip()
    if "." in name or "_" in name:
        print("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
              "collide. To avoid issues it is best to use either, but not both.")
    try:
        await admin.create_topic(name, -1 if args.partitions is None else args.partitions,
                                 -1 if args.replication_factor is None else args.replication_factor, configs)
    except KafkaError as exc:
        if exc.code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
            return 0
        raise
    print(f"Created topic {name}.")
    return 0
