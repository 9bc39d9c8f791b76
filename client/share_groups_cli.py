"""``groupcoord share-groups``: Kafka's kafka-share-groups.sh (``ShareGroupCommand`` and
``ShareGroupCommandOptions`` of Kafka 4.3), with its options, checks, columns and messages, over
:class:`~.admin.AdminClient` (the Kafka protocol through our codec), so it works against any Kafka
cluster with share groups (KIP-932).

    groupcoord share-groups --list [--state [STATES]]
    groupcoord share-groups --describe (--group G ... | --all-groups) [--offsets | --members | --state] [--verbose]
    groupcoord share-groups --delete (--group G ... | --all-groups)
    groupcoord share-groups --delete-offsets --group G --topic T ...
    groupcoord share-groups --reset-offsets --group G (--topic T[:P,P] ... | --all-topics)
                            (--to-earliest | --to-latest | --to-datetime DT) (--dry-run | --execute)

The RPCs are Kafka's Admin client's: ListGroups with the share type, ShareGroupDescribe,
DescribeShareGroupOffsets (v1: the lag), DeleteGroups, DeleteShareGroupOffsets, ListOffsets,
AlterShareGroupOffsets. Tables go to stdout exactly as the Java tool prints them. As ``groupcoord
groups`` does (:mod:`.admin_cli`), what the tool reports as ``Error: ...`` goes to stderr with exit
code 1 (the Java tool prints it on stdout and exits 0), and options that do not go together are
refused with Kafka's message and exit code 2.
"""
from __future__ import annotations

import asyncio

from groupcoord.protocol.errors import ErrorCode, KafkaError, ProtocolError

from .admin import EARLIEST, LATEST, AdminClient, AdminError, ShareGroupDescription, TopicDescription
from .admin_cli import (  # (the option and output helpers kafka-consumer-groups.sh's command has too)
    DEFAULT_BOOTSTRAP, MISSING, CommandError, UsageError, _err, _given, _opt, _show, assignment_string, fmt,
    java_exception, kafka_message, parse_datetime, parse_topic_partitions, tp_str,
)
from .assignors.base import TopicPartition as TP

#: GroupState.groupStatesForType(SHARE), in the enum's order
SHARE_GROUP_STATES = ("Stable", "Dead", "Empty")
SHARE = "share"                      # GroupType.SHARE, as ListGroups' TypesFilter carries it
DEFAULT_TIMEOUT_MS = 30000           # ShareGroupCommandOptions' --timeout default
_FAILED = "Executing share group command failed due to "
_MULTIPLE_GROUPS = "Found multiple arguments for option group, but you asked for only one"
#: ``--state`` without a value (joptsimple's null, unlike ``--state ""``)
_NO_VALUE = object()

_ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
_SCENARIOS = ("to_datetime", "to_earliest", "to_latest")


class Abort(Exception):
    """CommandLineUtils.printErrorAndExit: the message alone, exit code 1."""


def _java(error: KafkaError) -> str:
    """A Kafka error as Throwable.toString() prints it: its exception class and (Kafka's) message."""
    return java_exception(error.code).split(": ", 1)[0] + ": " + kafka_message(error)


# ================================================================================ options
def register(subparsers) -> None:
    p = subparsers.add_parser(
        "share-groups", help="list, describe, reset offsets of and delete share groups (kafka-share-groups.sh)",
        description="This tool helps to list all share groups, describe a share group, delete share group info, "
                    "or reset share group offsets, as Kafka's kafka-share-groups.sh does (same options and "
                    "output).")
    p.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT[,...]",
                   help=f"the server(s) to connect to (default {DEFAULT_BOOTSTRAP})")
    actions = p.add_argument_group("actions (exactly one)")
    actions.add_argument("--list", action="store_true", help="list all share groups")
    actions.add_argument("--describe", action="store_true",
                         help="describe share group, members and offset information (the default view: --offsets)")
    actions.add_argument("--delete", action="store_true", help="delete share groups (only empty ones)")
    actions.add_argument("--reset-offsets", action="store_true",
                         help="reset the offsets of one share group, which must be inactive: --dry-run to plan, "
                              "--execute to reset")
    actions.add_argument("--delete-offsets", action="store_true",
                         help="delete the offsets of one share group, of whole topics")
    scope = p.add_argument_group("groups and topics")
    scope.add_argument("--group", action="append", metavar="GROUP", help="the share group (repeatable)")
    scope.add_argument("--all-groups", action="store_true", help="apply to all share groups")
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P]",
                       help="a topic whose offsets to delete or reset; with --reset-offsets optionally its "
                            "partitions: topic1:0,1,2 (repeatable)")
    scope.add_argument("--all-topics", action="store_true",
                       help="with --reset-offsets: every topic the share group has offsets for")
    views = p.add_argument_group("describe and list")
    views.add_argument("--offsets", action="store_true",
                       help="the group's share-partitions with their start offsets and lag (default)")
    views.add_argument("--members", action="store_true", help="the group's members")
    views.add_argument("--state", nargs="?", const=_NO_VALUE, default=None, metavar="STATES",
                       help="with --describe: the group's state; with --list: a STATE column, and only groups in "
                            "STATES if given (Stable, Empty, Dead)")
    views.add_argument("--verbose", action="store_true", help="more columns with --describe")
    reset = p.add_argument_group("reset specifications (with --reset-offsets; exactly one)")
    reset.add_argument("--to-earliest", action="store_true", help="the log start offset")
    reset.add_argument("--to-latest", action="store_true", help="the log end offset")
    reset.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                       help="the first offset at or after a time (UTC unless a zone is given: Z, +hh:mm)")
    reset.add_argument("--dry-run", action="store_true", help="only show the new offsets")
    reset.add_argument("--execute", action="store_true", help="set the new offsets")
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_MS, metavar="MS",
                   help=f"how long each request may take, retries included (default {DEFAULT_TIMEOUT_MS})")
    p.set_defaults(func=run_share_groups)


def check_options(args) -> None:
    """ShareGroupCommandOptions (joptsimple's availableIf, then checkArgs) and the action count of
    ShareGroupCommand.main, in that order, with Kafka's messages; raises UsageError."""
    unavailable = [name for name, allowed in (("members", ("describe",)), ("offsets", ("describe",)),
                                              ("state", ("describe", "list")), ("verbose", ("describe",)))
                   if _given(args, name) and not any(getattr(args, a) for a in allowed)]
    if unavailable:
        raise UsageError(f"Option(s) [{', '.join(unavailable)}] are unavailable given other options on the "
                         "command line")
    groups_scope = f"{_opt('all-groups')}, {_opt('group')}"
    if args.describe:
        if not args.group and not args.all_groups:
            raise UsageError(f"Option {_opt('describe')} takes one of these options: {groups_scope}")
        if sum(1 for name in ("members", "offsets", "state") if _given(args, name)) > 1:
            raise UsageError(f"Option {_opt('describe')} takes at most one of these options: "
                             f"{_opt('members')}, {_opt('offsets')}, {_opt('state')}")
        if args.state is not None and args.state is not _NO_VALUE:
            raise UsageError(f"Option {_opt('describe')} does not take a value for {_opt('state')}")
    if args.delete:
        if not args.group and not args.all_groups:
            raise UsageError(f"Option {_opt('delete')} takes the options {_opt('group')} or {_opt('all-groups')}")
        if args.group and args.all_groups:
            raise UsageError(f"Option {_opt('delete')} takes either {_opt('group')} or {_opt('all-groups')}, "
                             "not both.")
        if args.topic:
            raise UsageError(f"Option {_opt('delete')} does not take the option: {_opt('topic')}")
    if args.delete_offsets and (not args.group or not args.topic):
        raise UsageError(f"Option {_opt('delete-offsets')} takes the following options: "
                         f"{_opt('group')}, {_opt('topic')}")
    if args.reset_offsets:
        if args.dry_run and args.execute:
            raise UsageError(f"Option {_opt('reset-offsets')} only accepts one of {_opt('execute')} and "
                             f"{_opt('dry-run')}")
        if not args.dry_run and not args.execute:
            raise UsageError(f"Option {_opt('reset-offsets')} takes the option: {_opt('execute')} or "
                             f"{_opt('dry-run')}")
        if not args.group:
            raise UsageError(f"Option {_opt('reset-offsets')} takes the option: {_opt('group')}")
        if not args.topic and not args.all_topics:
            raise UsageError(f"Option {_opt('reset-offsets')} takes one of these options: "
                             f"{_opt('all-topics')}, {_opt('topic')}")
        scenarios = [s for s in _SCENARIOS if _given(args, s)]
        if not scenarios:
            raise UsageError(f"Option {_opt('reset-offsets')} takes one of these options: "
                             f"{', '.join(_opt(s) for s in _SCENARIOS)}")
        if len(scenarios) > 1:
            raise UsageError(f'Option "{_opt(scenarios[0])}" can\'t be used with option "{_opt(scenarios[1])}"')
    if args.group and args.all_groups:
        raise UsageError(f'Option "{_opt("group")}" can\'t be used with option "{_opt("all-groups")}"')
    if args.group and args.list:
        raise UsageError(f'Option "{_opt("group")}" can\'t be used with option "{_opt("list")}"')
    for action in ("list", "describe"):
        if args.topic and getattr(args, action):
            raise UsageError(f'Option "{_opt("topic")}" can\'t be used with option "{_opt(action)}"')
    if sum(1 for a in _ACTIONS if getattr(args, a)) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                         "--delete-offsets.")


def parse_states(text: str) -> list[str]:
    """groupStatesFromString: case-insensitive, only the share group states."""
    by_upper = {s.upper(): s for s in SHARE_GROUP_STATES}
    states = [by_upper.get(s.strip().upper()) for s in text.split(",")]
    if not states or None in states:
        raise UsageError(f"Invalid state list '{text}'. Valid states are: {', '.join(SHARE_GROUP_STATES)}")
    return list(dict.fromkeys(states))


def _one_group(args) -> str:
    """OptionSet.valueOf(groupOpt): the only --group (the tool fails on several when it runs)."""
    if len(args.group) > 1:
        raise CommandError(_FAILED + _MULTIPLE_GROUPS)
    return args.group[0]


# ================================================================================ running
def run_share_groups(args) -> int:
    try:
        check_options(args)
        return asyncio.run(_share_groups(args))
    except UsageError as exc:
        _err(str(exc))
        _err("See 'groupcoord share-groups --help'.")
        return 2
    except Abort as exc:
        _err(str(exc))
        return 1
    except CommandError as exc:
        _err(f"Error: {exc}")
        return 1
    except KafkaError as exc:
        _err(f"Error: {_FAILED}{kafka_message(exc)}")
        return 1
    except (AdminError, ProtocolError) as exc:      # ProtocolError: an answer that does not decode
        _err(f"Error: {_FAILED}{exc}")
        return 1


async def _share_groups(args) -> int:
    async with AdminClient(args.bootstrap_server, client_id="groupcoord-share-groups",
                           timeout_ms=args.timeout) as admin:
        if args.list:
            return await _list(admin, args)
        if args.describe:
            return await _describe(admin, args)
        if args.delete:
            return await _delete(admin, args)
        if args.reset_offsets:
            return await _reset_offsets(admin, args)
        return await _delete_offsets(admin, args)


async def _share_group_listings(admin: AdminClient, states: list[str] | None = None):
    """ListGroupsOptions.forShareGroups(): ListGroups with TypesFilter share (a broker before ListGroups
    v5 cannot filter by type, nor has share groups: nothing)."""
    listings = await admin.list_groups(states=states, types=[SHARE], protocol_types=None)
    return [g for g in listings if (g.type or "").lower() == SHARE]


# ---- --list --------------------------------------------------------------------------------
async def _list(admin: AdminClient, args) -> int:
    if args.state is None:
        for g in await _share_group_listings(admin):
            print(g.group_id)
        return 0
    states = parse_states(args.state) if args.state is not _NO_VALUE and args.state else None
    listings = await _share_group_listings(admin, states)
    width = max([15] + [len(g.group_id) for g in listings])
    print(fmt(("GROUP", width), ("STATE", None)))                   # printGroupInfo: "%-Ns %s"
    for g in listings:
        print(fmt((g.group_id, width), (g.state or "Unknown", None)))
    return 0


# ---- --describe ------------------------------------------------------------------------------
async def _group_ids(admin: AdminClient, args) -> list[str]:
    if args.all_groups:
        return [g.group_id for g in await _share_group_listings(admin)]
    return list(dict.fromkeys(args.group))


async def _descriptions(admin: AdminClient, group_ids: list[str]) -> dict[str, ShareGroupDescription]:
    """describeShareGroups: every group's description, or the command fails on the first group's error
    (the future's ExecutionException, whose message is the cause's toString())."""
    described = await admin.describe_share_groups(group_ids)
    for group_id in group_ids:
        d = described[group_id]
        if isinstance(d, KafkaError):
            raise CommandError(_FAILED + _java(d))
    return {g: described[g] for g in sorted(group_ids)}


async def _describe(admin: AdminClient, args) -> int:
    descriptions = await _descriptions(admin, await _group_ids(admin, args))
    if args.members:
        return max([print_members(d, args.verbose) for d in descriptions.values()], default=0)
    if args.state is not None:
        return max([print_state(d, args.verbose) for d in descriptions.values()], default=0)
    offsets = {}
    for group_id in descriptions:                   # collectGroupsOffsets: every group's before any is shown
        try:
            offsets[group_id] = await admin.list_share_group_offsets(group_id)
        except KafkaError as exc:
            raise CommandError(f"{_FAILED}java.util.concurrent.ExecutionException: {_java(exc)}") from None
    for group_id, partitions in offsets.items():
        print_offsets(group_id, partitions, args.verbose)
    return 0


def _empty_group_notice(group_id: str, state: str, rows: int) -> tuple[bool, int]:
    """maybePrintEmptyGroupState: a word on a Dead or Empty group; whether to show the rows, and the
    exit status (1: the group does not exist)."""
    if state == "Dead":
        _err(f"Error: Share group '{group_id}' does not exist.")
    elif state == "Empty":
        _err(f"\nShare group '{group_id}' has no active members.")      # (println("\n..."), as Java)
    return state != "Dead" and rows > 0, 1 if state == "Dead" else 0


def print_offsets(group_id: str, partitions: dict, verbose: bool) -> None:
    """printOffsets: GROUP TOPIC PARTITION [LEADER-EPOCH] START-OFFSET LAG, by topic and partition; "-"
    where the share-partition has no start offset (or the broker no lag)."""
    rows = sorted(partitions.items())
    print()
    if not rows:
        print(f"Share group '{group_id}' has no offset information.")
        return
    w_group = max(15, len(group_id))
    w_topic = max([15] + [len(tp.topic) for tp, _ in rows])

    def line(group, topic, partition, epoch, offset, lag) -> str:
        cols = [(group, w_group), (topic, w_topic), (partition, 10)]
        if verbose:
            cols.append((epoch, 13))
        return fmt(*cols, (offset, 13), (lag, None))
    print(line("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"))
    for tp, info in rows:
        if info is None:
            print(line(group_id, tp.topic, tp.partition, MISSING, MISSING, MISSING))
        else:
            print(line(group_id, tp.topic, tp.partition, _show(info.leader_epoch), info.start_offset,
                       _show(info.lag)))


def print_members(d: ShareGroupDescription, verbose: bool) -> int:
    """printMembers: GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS [MEMBER-EPOCH] ASSIGNMENT, by member id;
    nothing for a group without members."""
    show, status = _empty_group_notice(d.group_id, d.state, len(d.members))
    if not show:
        return status
    members = sorted(d.members, key=lambda m: m.member_id)
    w_group = max(15, len(d.group_id))
    w_id = max([15] + [len(m.member_id) for m in members])
    w_host = max([15] + [len(m.host) for m in members])
    w_client = max([15] + [len(m.client_id) for m in members])

    def line(member_id, host, client_id, count, epoch, assignment, group=d.group_id) -> str:
        cols = [(group, w_group), (member_id, w_id), (host, w_host), (client_id, w_client), (count, 12)]
        if verbose:
            cols.append((epoch, 13))
        return fmt(*cols, (assignment, None))
    print()
    print(line("CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT", group="GROUP"))
    for m in members:
        # getAssignmentString: "topic1:0,1;topic2:0", nothing for no partitions
        print(line(m.member_id, m.host, m.client_id, len(m.assignment), m.member_epoch,
                   assignment_string(m.assignment)))
    return status


def print_state(d: ShareGroupDescription, verbose: bool) -> int:
    """printStates: GROUP COORDINATOR (ID) STATE [GROUP-EPOCH ASSIGNMENT-EPOCH] #MEMBERS."""
    _, status = _empty_group_notice(d.group_id, d.state, 1)
    coordinator = f"{d.coordinator.host}:{d.coordinator.port}  ({d.coordinator.node_id})"
    w_group, w_coord = max(15, len(d.group_id)), max(25, len(coordinator))
    if verbose:
        rows = [("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"),
                (d.group_id, coordinator, d.state, d.group_epoch, d.assignment_epoch, len(d.members))]
        widths = (w_group, w_coord, 15, 12, 17, None)
    else:
        rows = [("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"),
                (d.group_id, coordinator, d.state, len(d.members))]
        widths = (w_group, w_coord, 15, None)
    print()
    for values in rows:
        print(fmt(*zip(values, widths)))
    return status


# ---- --delete --------------------------------------------------------------------------------
async def _delete(admin: AdminClient, args) -> int:
    """deleteShareGroups: groups that are not share groups, or not Empty, are refused before DeleteGroups
    is sent for the others."""
    listings = {g.group_id: g for g in await _share_group_listings(admin)}
    group_ids = list(listings) if args.all_groups else list(dict.fromkeys(args.group))
    failed: dict[str, str] = {}
    for group_id in group_ids:
        listing = listings.get(group_id)
        state = (listing.state or "").lower() if listing is not None else None
        if listing is None:
            failed[group_id] = f"java.lang.IllegalArgumentException: Group '{group_id}' is not a share group."
        elif state == "dead":
            failed[group_id] = f"java.lang.IllegalStateException: Share group '{group_id}' group state is DEAD."
        elif state and state != "empty":
            failed[group_id] = (f"org.apache.kafka.common.errors.GroupNotEmptyException: Share group '{group_id}' "
                                "is not EMPTY.")
    to_delete = [g for g in group_ids if g not in failed]
    results = await admin.delete_groups(to_delete) if to_delete else {}
    deleted = [g for g in to_delete if results[g] == ErrorCode.NONE]
    failed.update({g: java_exception(results[g]) for g in to_delete if results[g] != ErrorCode.NONE})
    quoted = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        print(f"Deletion of requested share groups ({quoted}) was successful.")
        return 0
    _err("Error: Deletion of some share groups failed:")
    for group_id in group_ids:
        if group_id in failed:
            _err(f"* Group '{group_id}' could not be deleted due to: {failed[group_id]}")
    if deleted:
        print(f"\nThese share groups were deleted successfully: {quoted}")
    return 1


# ---- --delete-offsets ------------------------------------------------------------------------
#: the errors of the whole request deleteOffsets names alone; those of topics it leaves to the table
_GROUP_ERRORS = (ErrorCode.INVALID_GROUP_ID, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                 ErrorCode.NON_EMPTY_GROUP)
_TOPIC_ERRORS = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


async def _delete_offsets(admin: AdminClient, args) -> int:
    """deleteOffsets: DeleteShareGroupOffsets of whole topics; TOPIC STATUS per topic asked, the whole
    request's error (or the first topic's) named first."""
    group_id = _one_group(args)
    topics = sorted(set(args.topic))
    top, answered = await admin.delete_share_group_offsets(group_id, topics)
    results: dict[str, str | None] = {}        # topic -> its error as Kafka prints it (getMessage()), None: done
    first: tuple[ErrorCode | int, str] | None = None       # DeleteShareGroupOffsetsResult.all()'s failure
    if top is not None:
        first = (top.code, _java(top))
        results = {t: kafka_message(top) for t in topics}
    else:
        for topic in topics:
            if topic not in answered:
                message = f'Offset deletion result for topic "{topic}" was not included in the response'
                results[topic] = message
                first = first or (ErrorCode.UNKNOWN_SERVER_ERROR, f"java.lang.IllegalArgumentException: {message}")
            elif answered[topic] is not None:
                results[topic] = kafka_message(answered[topic])
                first = first or (answered[topic].code, _java(answered[topic]))
            else:
                results[topic] = None
    if first is not None:
        code, text = first
        if code in _GROUP_ERRORS:
            _err(f"Error: {results[topics[0]]}")
        elif code not in _TOPIC_ERRORS:
            _err(f"Error: Encounter some unknown error: {text}")
    width = max([15] + [len(t) for t in results])
    print()
    print(fmt(("TOPIC", width), ("STATUS", None)))
    for topic, error in sorted(results.items()):
        print(fmt((topic, width), ("Successful" if error is None else f"Error: {error}", None)))
    return 0 if first is None else 1


# ---- --reset-offsets -------------------------------------------------------------------------
async def _reset_offsets(admin: AdminClient, args) -> int:
    """resetOffsets: only an Empty share group (or one that does not exist); the plan from ListOffsets,
    set with AlterShareGroupOffsets under --execute; GROUP TOPIC PARTITION NEW-OFFSET."""
    group_id = _one_group(args)
    d = (await admin.describe_share_groups([group_id]))[group_id]
    if isinstance(d, KafkaError):
        if d.code != ErrorCode.GROUP_ID_NOT_FOUND:
            raise Abort(kafka_message(d))
    elif d.state not in ("Empty", "Dead"):
        raise Abort(f"Share group '{group_id}' is not empty.")
    partitions = await _partitions_to_reset(admin, args, group_id)
    await _check_partitions(admin, partitions)
    if args.to_earliest:
        plan = await _log_offsets(admin, partitions, EARLIEST, "starting")
    elif args.to_latest:
        plan = await _log_offsets(admin, partitions, LATEST, "ending")
    else:
        plan = await _offsets_at(admin, partitions, parse_datetime(args.to_datetime))
    if args.execute:
        results = await admin.alter_share_group_offsets(group_id, plan)
        failed = sorted(tp for tp, error in results.items() if error is not None)
        if failed:
            raise CommandError(f"{_FAILED}Failed altering group offsets for the following partitions: "
                               f"[{', '.join(tp_str(tp) for tp in failed)}]")
    print_reset_plan(group_id, plan)
    return 0


def print_reset_plan(group_id: str, plan: dict[TP, int]) -> None:
    """OffsetsUtils.printOffsetsToReset of one group: the header even when there is nothing to reset."""
    w_group = max(15, len(group_id))
    w_topic = max([15] + [len(tp.topic) for tp in plan])
    print()
    print(fmt(("GROUP", w_group), ("TOPIC", w_topic), ("PARTITION", 10), ("NEW-OFFSET", None)))
    for tp, offset in sorted(plan.items()):
        print(fmt((group_id, w_group), (tp.topic, w_topic), (tp.partition, 10), (offset, None)))


async def _partitions_to_reset(admin: AdminClient, args, group_id: str) -> list[TP]:
    """getPartitionsToReset: --topic's partitions (a bare topic: all of them), else every share-partition
    the group has offsets for."""
    if not args.topic:
        return sorted(await admin.list_share_group_offsets(group_id))
    partitions: list[TP] = []
    whole = []
    for arg in args.topic:
        if ":" in arg:
            partitions.extend(parse_topic_partitions(arg))
        else:
            whole.append(arg)
    if whole:
        described = await admin.describe_topics(whole)
        for name in whole:
            t = described.get(name) or KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if isinstance(t, KafkaError):
                raise CommandError(_FAILED + kafka_message(t))
            partitions.extend(TP(name, p.partition) for p in t.partitions)
    return list(dict.fromkeys(partitions))


async def _check_partitions(admin: AdminClient, partitions: list[TP]) -> None:
    """checkAllTopicPartitionsValid: every partition exists and has a leader."""
    if not partitions:
        return
    topics = await admin.describe_topics(sorted({tp.topic for tp in partitions}))
    for t in topics.values():
        if isinstance(t, KafkaError):
            raise CommandError(f"{_FAILED}java.util.concurrent.ExecutionException: {_java(t)}")
    leaders = {TP(name, p.partition): p.leader for name, t in topics.items()
               if isinstance(t, TopicDescription) for p in t.partitions}
    missing = [tp for tp in partitions if tp not in leaders]
    if missing:
        raise CommandError(f"{_FAILED}The partitions \"{','.join(tp_str(tp) for tp in missing)}\" do not exist")
    leaderless = [tp for tp in partitions if leaders[tp] is None]
    if leaderless:
        raise CommandError(f"{_FAILED}The partitions \"{','.join(tp_str(tp) for tp in leaderless)}\" have no "
                           "leader")


async def _log_offsets(admin: AdminClient, partitions: list[TP], spec: int, what: str) -> dict[TP, int]:
    """resetToEarliest, resetToLatest: each partition's log start or end offset."""
    found = await admin.list_offsets(partitions, spec) if partitions else {}
    for tp in partitions:
        if tp not in found:
            raise UsageError(f"Error getting {what} offset of topic partition: {tp_str(tp)}")
    return {tp: found[tp] for tp in partitions}


async def _offsets_at(admin: AdminClient, partitions: list[TP], timestamp: int) -> dict[TP, int]:
    """resetToDateTime (getLogTimestampOffsets): the first offset at or after the time; the log end
    offset of a partition with none, with Kafka's warning."""
    found = await admin.list_offsets(partitions, timestamp) if partitions else {}
    out = {tp: found[tp] for tp in partitions if found.get(tp, -1) >= 0}
    empty = [tp for tp in partitions if found.get(tp) == -1]
    for tp in empty:
        print(f"\nWarn: Partition {tp.partition} from topic {tp.topic} is empty. Falling back to latest known offset.")
    if empty:
        out.update(await admin.list_offsets(empty, LATEST))
    for tp in partitions:
        if tp not in out:
            raise UsageError(f"Error getting offset by timestamp of topic partition: {tp_str(tp)}")
    return {tp: out[tp] for tp in partitions}
