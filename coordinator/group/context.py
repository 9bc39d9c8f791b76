"""What a group type's manager gets from the runtime (:mod:`.runtime`): a narrow context, not the
whole coordinator.

:class:`GroupContext` holds the registry of groups (one map, every type), time (``clock``, the
keyed ``timers``), events, the response queue, and the log (``append``; ``replay`` for the
records a type replays live). Calls that enter the core from outside (requests, timers) are marked
with :func:`entry`: responses queued while the core updates its state go out when the outermost
call returns, so a ``respond`` callback may call back into the core.
"""
from __future__ import annotations

from collections import deque
from functools import wraps
from typing import Callable, Protocol

from ..cluster import partition_for
from ..events import SCHEMA_VERSION
from .. import storage as _st
from .configs import GroupConfigs


#: AuthorizedOperations of a described group when the request did not ask for them (Integer.MIN_VALUE)
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


#: the reason Kafka's admin client gives a LeaveGroup when none is given (KafkaAdminClient's
#: DEFAULT_LEAVE_GROUP_REASON): the member is removed by an admin
ADMIN_LEAVE_REASON = "member was removed by an admin"


def leave_initiator(member_id: str, reason: str | None, initiator: str) -> str:
    """Who a LeaveGroup's member removal comes from: "admin" for one named by its instance id alone or
    with the admin client's reason, else ``initiator`` (the request's: "member", or "admin" for the
    admin API's removal)."""
    return "admin" if not member_id or reason == ADMIN_LEAVE_REASON else initiator


class Group(Protocol):
    """What the runtime, the offset manager, ListGroups, DeleteGroups, the admin API and the metrics
    ask of a group of any type."""
    group_id: str
    type: str                   # "classic", "consumer", "share" (ListGroups' GroupType)
    protocol_type: str | None   # ListGroups' ProtocolType
    state: str                  # Kafka's state name of the type
    members: dict               # member id -> member (each with member_id, instance_id, client_id)
    static_members: dict        # instance id -> member id

    @property
    def generation_id(self) -> int: ...                 # the generation, or the group epoch

    def is_empty(self) -> bool: ...                     # no members (DeleteGroups, retention)

    def has_member(self, member_id: str) -> bool: ...

    def is_pending_member(self, member_id: str) -> bool: ...    # given a member id, not yet joined

    def is_subscribed_to_topic(self, topic: str) -> bool: ...

    def offset_expiration_condition(self): ...         # (offset) -> when its retention starts, or None

    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation_id: int,
                               v9: bool, topics=None, topic_id=None, *, transactional: bool = False) -> int | None: ...
    # (topics, topic_id(name): from Kafka 4.3, the commit's partitions, for checks by partition;
    # transactional: a TxnOffsetCommit's, KIP-447: Kafka's isTransactional)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None: ...

    def validate_offset_delete(self) -> int | None: ...

    # (optional) Kafka's ``Group.shouldExpire``: False keeps the offset retention sweep from deleting
    # an empty group of the type (a share group); without it, True
    # def should_expire(self) -> bool: ...


class GroupTypeManager(Protocol):
    """What the runtime asks of a group type's manager (one per type, built with the context; a
    type is registered by adding its manager class to ``runtime.GROUP_TYPES``). At construction it
    registers the replay of its record kinds (``ctx.replayers``) and defines its dynamic configs
    (``ctx.group_configs``); its records are declared in its package and registered in the offsets
    log (``records.OFFSETS_LOG.register``). Its events are named ``<type>.<what>``: the metrics
    count ``<type>.member_joined``, ``.member_left``, ``.member_fenced``, ``.member_replaced`` and
    ``.group_epoch_bumped`` of a type other than classic (``<type>_group_rebalance_total``)."""
    type: str                   # the type's name (ListGroups' GroupType)
    states: tuple               # Kafka's state names of the type (the metrics count groups by them)
    image: object               # the cluster's topics, set by the runtime
    def topics_changed(self, names) -> None: ...
    def loaded(self, group, now: int) -> bool: ...      # after replay at load; False: incomplete, dropped
    def create_group(self, group_id: str, now: int, cause: str): ...
    def delete(self, group, now: int, reason: str) -> list: ...     # the group's tombstones
    def retire(self, group) -> list: ...               # tombstones when another type takes the id
    def expire_member(self, group_id: str, member_id: str) -> None: ...
    def on_unloaded(self, group) -> None: ...           # its partition moved to another coordinator

    # (a type other than classic) the classic protocol's APIs reaching a group of the type (JoinGroup: a
    # non-empty one; an empty one gives way to a classic group)
    def join_group(self, respond, req, group) -> None: ...
    def sync_group(self, respond, req, group) -> None: ...
    def heartbeat_error(self, req, group) -> int: ...
    def leave(self, group, group_id: str, idents: list, initiator: str) -> dict: ...
    # (optional) ``gives_way``: False when an empty group of the type does not give way to a classic
    # group a JoinGroup brings (a share group: INCONSISTENT_GROUP_PROTOCOL); without it, True.
    # (optional) ``delete_error(group)``: what keeps an empty group from being deleted by DeleteGroups
    # (an error code, or None: deleted); a share group's share-partition state is deleted first.

    #: the admin API's view of its groups (its package's ``view`` module): ``summary_json(group,
    #: manager)`` (with protocol_type, protocol, generation and leader, then the type's own),
    #: ``members_json(group, cluster)``, and their OpenAPI schemas (``SUMMARY_FIELDS``,
    #: ``MEMBER_SCHEMA``, ``SCHEMAS``)
    view: object


def entry(fn):
    """Mark a method entering the core (a request or a timer callback) of an object with a ``ctx``:
    queued responses go out when the outermost such call returns."""
    @wraps(fn)
    def wrapper(self, *args, **kwargs):
        ctx = self.ctx
        ctx.depth += 1
        try:
            return fn(self, *args, **kwargs)
        finally:
            ctx.depth -= 1
            if not ctx.depth and ctx.outbox:
                ctx.flush()
    return wrapper


class GroupContext:
    """The runtime's services to the group types and the offset manager (see the module)."""

    def __init__(self, config, timers, clock: Callable[[], int], emit: Callable[[dict], None],
                 store, new_member_id: Callable[[str], str]) -> None:
        self.config = config
        self.timers = timers
        self.clock = clock
        self.emit = emit
        self.store = store
        self.persist = not isinstance(store, _st.MemoryStore)
        self.new_member_id = new_member_id
        self.num_partitions = int(config["offsets.topic.num.partitions"])
        #: the Kafka release emulated (what a type checks with releases.at_least where one changed it)
        self.release = str(config["groupcoord.kafka.version"])
        #: Kafka's dynamic group configs, by group id (each group type defines its own)
        self.group_configs = GroupConfigs()
        #: the cluster's topics (``topics`` by name, ``topics_by_id``), set by the runtime
        self.image = None
        #: every group of this coordinator, by id (a group id names one group, of one type)
        self.groups: dict[str, Group] = {}
        self.loading: set[int] = set()
        self.outbox: deque = deque()
        self.depth = 0
        #: record kind -> replay(key, value): each group type and the offset manager register theirs
        self.replayers: dict[int, Callable] = {}
        #: while a partition loads: group id -> [(member id, problem)] of records that could not apply
        self.load_problems: dict[str, list] | None = None
        #: while a partition loads: a group a record of another type replaced (group id -> group)
        self.load_displaced: dict[str, object] = {}
        # the online migration between group types: the runtime's (set by it)
        self.upgrade: Callable | None = None
        self.downgrade: Callable | None = None
        self.give_way: Callable | None = None
        self.other_heartbeat: Callable | None = None     # a Heartbeat to a group not classic

    def topic_id(self, name: str):
        """The id of the topic of that name in the metadata image, or None."""
        topic = self.image.topics.get(name) if self.image is not None else None
        return topic.topic_id if topic is not None else None

    # ---- groups --------------------------------------------------------------------
    def group(self, group_id: str, type_name: str):
        """The group of that id if it is of that type, else None."""
        group = self.groups.get(group_id)
        return group if group is not None and group.type == type_name else None

    def partition_of(self, group_id: str) -> int:
        """The offsets-topic partition whose log holds the group."""
        return partition_for(group_id, self.num_partitions)

    def is_loading(self, group_id: str) -> bool:
        return bool(self.loading) and self.partition_of(group_id) in self.loading

    # ---- the log -------------------------------------------------------------------
    def append(self, group_id: str, records: list) -> None:
        """Append records to the group's log (acknowledged once written to the operating system);
        nothing when no store keeps them."""
        if records and self.persist:
            self.store.append(self.partition_of(group_id), records)

    def replay(self, key, value) -> None:
        """Apply one record to the state: the same replay live and at load."""
        self.replayers[key.kind](key, value)

    # ---- responses and events ------------------------------------------------------
    def reply(self, respond: Callable[[dict], None], response: dict) -> None:
        self.outbox.append((respond, response))

    def flush(self) -> None:
        outbox = self.outbox
        failure = None
        while outbox:
            respond, response = outbox.popleft()
            try:
                respond(response)
            except BaseException as e:  # keep delivering the others
                if failure is None:
                    failure = e
        if failure is not None:
            raise failure

    def event(self, group, kind: str, now: int, fields: dict) -> None:
        event = {"v": SCHEMA_VERSION, "event": kind, "ts_ms": now, "group": group.group_id,
                 "generation": group.generation_id, "state": group.state, "members": len(group.members)}
        event.update(fields)
        emit = self.emit             # (through a local: 3.11 specializes the call)
        emit(event)
