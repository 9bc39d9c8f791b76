"""Fault injection, on purpose and reproducible (sans-I/O).

A :class:`FaultEngine` (``service.faults``) holds two kinds of faults, each with an id:

*Request faults* act on requests as they arrive, before their handler::

    {"api": "Heartbeat", "group": "G", "node": 1, "client_id": "c1",   # what matches (all optional)
     "member": "M",
     "count": 3, "skip": 0,                                          # the next 3 matches (null: all)
     "error": "REBALANCE_IN_PROGRESS", "latency_ms": 200, "drop": false}

``api`` is a Kafka API name ("JoinGroup", "JOIN_GROUP", "ConsumerGroupHeartbeat") or key; ``error``
a Kafka error name or code; ``member`` the request's MemberId (APIs whose request has one at the
top: JoinGroup, SyncGroup, Heartbeat, LeaveGroup v0-2, OffsetCommit, ConsumerGroupHeartbeat);
``transactional_id`` the request's TransactionalId (:data:`TRANSACTIONAL_APIS`: Produce, InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit; without ``api``: any of them), so one
producer's transaction step fails and the others' do not. The request is answered with an error response built like Kafka's
``AbstractRequest.getErrorResponse`` (:func:`error_response`: per partition, per group or
top level, wherever the response has them); with ``latency_ms`` it is held first (and the
connection behind it, as a slow broker would); with ``drop`` the connection is closed instead
of answering. A ``group`` filter on a request naming several groups (DescribeGroups,
DeleteGroups, FindCoordinator v4+, OffsetFetch v8+) fails only that group's entry: the handler
answers the others. Faults act before the handler, so on any node (filter with ``node``).

*Scheduled faults* fire on coordinator events (:mod:`.events`, from ``service.bus``)::

    {"when": {"event": "group.state_change", "group": "G", "state_to": "CompletingRebalance"},
     "do": {"action": "expire_member", "member": "M"}, "times": 1}

``when`` lists event fields that must all be equal; ``times`` is how often it fires (default
1, null: every time). Actions: ``expire_member`` / ``remove_member`` / ``fence_member`` (by
``member``, ``instance_id`` or ``client_id``; default: the event's member; ``group`` defaults to
the event's group), ``inject`` (``fault``: a request fault to add), ``node_down``, ``node_up``,
``move_coordinator`` (``group`` or ``partition``, ``node``), ``drop_connections`` (``node``, ``client_id``,
``transactional_id``), ``crash_producer`` (``transactional_id``).

Consumer groups (KIP-848): ``expire_member`` ends a member's session (``consumer.member_fenced``,
reason "session_timeout"); ``remove_member`` leaves as an admin LeaveGroup does; ``fence_member`` answers the
member's next ConsumerGroupHeartbeat FENCED_MEMBER_EPOCH (an injected one-shot request fault), as
Kafka answers a member whose epoch it no longer accepts: the member gives its partitions up and
joins again with epoch 0, the coordinator's view of it unchanged. On ``consumer.group_epoch_bumped``
it fences a member when the group epoch changes::

    {"when": {"event": "consumer.group_epoch_bumped", "group": "G"},
     "do": {"action": "fence_member", "client_id": "c2"}, "times": null} An action runs
right after the coordinator operation that emitted the event, before anything else is handled;
``node_down`` and ``drop_connections`` (and ``node_up``, which has to wait for a listener) run on
the driver's next turn instead (its event loop: the engine asks its driver, it does not use asyncio),
once the triggering request's response is written.

Cluster faults (also methods here, and admin endpoints): a node taken down stops listening,
its connections are dropped, and the partitions it led (offsets-topic partitions, so group
coordinators, and data partitions) get new leaders as Kafka's controller would elect them
(:meth:`.cluster.Cluster.node_down`); the groups themselves carry on, as after a coordinator
failover. A node brought back up leads nothing until a preferred-leader election. Moving an
offsets-topic partition moves the coordinator of its groups: the old node answers
NOT_COORDINATOR for them from then on, also to the JoinGroup and SyncGroup requests parked there.

Share groups (KIP-932). Request faults reach ShareGroupHeartbeat, ShareFetch and ShareAcknowledge like
any API (``group`` and ``member`` filter them too). Beyond those:

* dropping acknowledgements: a request fault with ``"drop_acknowledgements": true`` (``api`` ShareFetch,
  ShareAcknowledge, or null for both) matches only requests carrying acknowledgements, and has the
  share-partition leader ignore them: nothing is acknowledged, and each partition's AcknowledgeErrorCode
  says NONE, as if they had been applied (a lost acknowledgement: the records come back once their
  acquisition locks expire, their delivery count one up), or ``error`` when given (the client's
  acknowledgement callback hears of it). The rest of the request is served as usual (a ShareFetch
  fetches, the session epochs move on); ``latency_ms`` holds it first::

    {"api": "ShareAcknowledge", "group": "Q", "member": "M", "drop_acknowledgements": true, "count": 1}

* expiring locks: :meth:`FaultEngine.expire_locks` (the action ``expire_locks`` {group, member?, topic?,
  partition?}, default member: the event's) expires acquisition locks now, as their timeout would:
  their records become AVAILABLE again (ARCHIVED at the delivery count limit), ``share.lock_expired``
  (cause "fault"). Expiring a member's locks whenever it acquires records::

    {"when": {"event": "share.records_acquired", "group": "Q", "member": "M"},
     "do": {"action": "expire_locks"}, "times": null}

* fencing a member: ``fence_member`` on a share group fences it as its session timeout would
  (``share.member_fenced``, reason "session_timeout"): its next ShareGroupHeartbeat is answered
  UNKNOWN_MEMBER_ID and it joins again; as in Kafka, where the share session cache and not the group
  coordinator releases records, what it holds stays acquired until its locks expire or its share
  session ends.

Transactions. Request faults fail any step of one producer's transaction by its ``transactional_id``
(each step answered with the error as Kafka's ``getErrorResponse`` builds it: a retriable one, e.g. EndTxn
COORDINATOR_NOT_AVAILABLE once, and the client finds the coordinator again and retries)::

    {"api": "EndTxn", "transactional_id": "T", "error": "COORDINATOR_NOT_AVAILABLE", "count": 1}

Scheduled faults fire on the transaction coordinator's events too (``transaction.producer_initialized``,
``transaction.partitions_added``, ``transaction.prepared``, ``transaction.completed``,
``transaction.fenced``); their ``when`` matches :data:`.events.TRANSACTION_BASE_FIELDS`
(``transactional_id``, ``producer_id``, ``producer_epoch``, ``transaction_state``) and the event's own
fields, not ``group``. While such a fault (or any) with ``drop_connections`` or ``crash_producer`` is active,
the engine notes which client ids send each transactional id's requests (:attr:`FaultEngine.producers`):
``drop_connections`` with ``transactional_id`` closes the connections of those clients (on every node: the
coordinator's and the partition leaders'); ``crash_producer`` (its ``transactional_id`` defaults to the
event's) crashes the producer between two steps, from the cluster's view: its connections are dropped and so
are its later requests of that id (a request fault per client id, ``{"transactional_id", "client_id",
"drop": true}``, listed with the scheduled fault as its source; remove it to let the client back), so its
transaction stays open until ``transaction.timeout.ms`` aborts it (``transaction.fenced``, cause "timeout")
or a new producer of the id fences it (cause "init_producer_id")::

    {"when": {"event": "transaction.partitions_added", "transactional_id": "T"},
     "do": {"action": "crash_producer"}}

With no fault active the engine costs nothing: its request hook is in
``service.before_request`` only while a request fault is active, and it subscribes to the
bus only while a scheduled fault is.
"""
from __future__ import annotations

import collections
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

import structlog

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import APIS

from .context import RequestContext, Verdict
from .events import BASE_FIELDS, EVENT_FIELDS, TRANSACTION_BASE_FIELDS, TRANSACTION_EVENT_FIELDS
from .handlers import HANDLERS
from .share.manager import DROP_ACKNOWLEDGEMENTS

log = structlog.get_logger("groupcoord.faults")

LOG_SIZE = 1000

_API_BY_NAME = {re.sub(r"[^a-z0-9]", "", a.name.lower()): key for key, a in APIS.items()}
#: APIs whose requests name one group at the top (GroupId) though their handler lists none: ShareFetch,
#: ShareAcknowledge
_TOP_GROUP_APIS = frozenset(key for key, handler in HANDLERS.items() if not hasattr(handler, "groups")
                            and key in APIS and any(f.key == "group_id" for f in APIS[key].request.fields))
#: APIs whose requests carry group ids
GROUP_APIS = frozenset(key for key, handler in HANDLERS.items() if hasattr(handler, "groups")) | _TOP_GROUP_APIS
#: APIs whose requests carry share acknowledgements (``drop_acknowledgements``)
ACKNOWLEDGING_APIS = (_API_BY_NAME["sharefetch"], _API_BY_NAME["shareacknowledge"])
_REQUEST_KEYS = {"id", "api", "group", "node", "client_id", "member", "transactional_id", "count", "skip", "error",
                 "latency_ms", "drop", "drop_acknowledgements"}
#: APIs whose requests name a member at the top (MemberId)
MEMBER_APIS = frozenset(key for key, api in APIS.items() if any(f.key == "member_id" for f in api.request.fields))
#: where a request names its transactional id: TransactionalId at the top (Produce, InitProducerId, AddOffsetsToTxn,
#: EndTxn, TxnOffsetCommit), AddPartitionsToTxn's v3_and_below_transactional_id (v0-3, a producer's)
_TRANSACTIONAL_ID_FIELDS = ("transactional_id", "v3_and_below_transactional_id")
#: APIs whose requests carry a transactional id (the ``transactional_id`` filter)
TRANSACTIONAL_APIS = frozenset(key for key, api in APIS.items()
                               if any(f.key in _TRANSACTIONAL_ID_FIELDS for f in api.request.fields))
_SCHEDULE_KEYS = {"id", "when", "do", "times"}
#: every event's fields: the group coordinator's and the transaction coordinator's
_EVENT_KEYS = set(BASE_FIELDS).union(*EVENT_FIELDS.values(), TRANSACTION_BASE_FIELDS,
                                     *TRANSACTION_EVENT_FIELDS.values())
_MEMBER_ACTIONS = ("expire_member", "remove_member", "fence_member")
_LOCK_KEYS = {"group", "member", "topic", "partition"}
_CONNECTION_ACTIONS = ("node_down", "drop_connections", "crash_producer")
_ACTIONS = {
    "expire_member": {"group", "member", "instance_id", "client_id"},
    "remove_member": {"group", "member", "instance_id", "client_id"},
    "fence_member": {"group", "member", "instance_id", "client_id"},
    "inject": {"fault"},
    "node_down": {"node"},
    "node_up": {"node", "preferred_election"},
    "move_coordinator": {"group", "partition", "node"},
    "drop_connections": {"node", "client_id", "transactional_id"},
    "crash_producer": {"transactional_id"},
    "expire_locks": _LOCK_KEYS,
}
#: the actions that need to know which clients sent a transactional id's requests
_PRODUCER_ACTIONS = ("drop_connections", "crash_producer")


def _event_fields(kind: str) -> tuple[str, ...]:
    """An event type's fields, the common ones included."""
    if kind in TRANSACTION_EVENT_FIELDS:
        return TRANSACTION_BASE_FIELDS + TRANSACTION_EVENT_FIELDS[kind]
    return BASE_FIELDS + EVENT_FIELDS[kind]


class FaultError(ValueError):
    """A fault or a cluster change the caller got wrong. ``kind``: "invalid" (a bad spec),
    "not_found" (no such fault, node, group or partition) or "conflict" (the current state
    forbids it)."""

    def __init__(self, message: str, kind: str = "invalid"):
        super().__init__(message)
        self.kind = kind


# ============================================================================ parsing
def parse_api(value) -> int:
    """A Kafka API key from its name ("JoinGroup", "JOIN_GROUP", "join-group") or its key."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise FaultError(f"api must be a Kafka API name or key, not {value!r}")
    if isinstance(value, str):
        if value.strip().lstrip("-").isdigit():
            value = int(value)
        else:
            key = _API_BY_NAME.get(re.sub(r"[^a-z0-9]", "", value.lower()))
            if key is None:
                raise FaultError(f"unknown API {value!r}; known: {', '.join(a.name for a in APIS.values())}")
            return int(key)
    if value not in APIS:
        raise FaultError(f"API key {value} is not one groupcoord speaks")
    return value


def parse_error(value) -> ErrorCode:
    """A Kafka error from its name ("NOT_COORDINATOR", case-insensitive) or code; NONE is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise FaultError(f"error must be a Kafka error name or code, not {value!r}")
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, int):
        try:
            code = ErrorCode(value)
        except ValueError:
            raise FaultError(f"{value} is not a Kafka error code") from None
    else:
        code = ErrorCode.__members__.get(value.strip().upper())
        if code is None:
            raise FaultError(f"unknown Kafka error {value!r}")
    if code == ErrorCode.NONE:
        raise FaultError("error NONE (0) is not a fault")
    return code


def _int(spec: dict, key: str, *, minimum: int = 0, default=None, nullable: bool = True):
    value = spec.get(key, default)
    if value is None:
        if not nullable:
            raise FaultError(f"{key} is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FaultError(f"{key} must be an integer >= {minimum}, not {value!r}")
    return value


def _str(spec: dict, key: str):
    value = spec.get(key)
    if value is not None and not isinstance(value, str):
        raise FaultError(f"{key} must be a string, not {value!r}")
    return value


def _unknown(spec: dict, allowed, what: str) -> None:
    extra = sorted(set(spec) - set(allowed))
    if extra:
        raise FaultError(f"unknown field(s) of {what}: {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})")


# ============================================================================ requests' groups
def request_groups(api_key: int, version: int, body: dict) -> list | None:
    """The group ids a request names (None for APIs without groups): its handler's answer, or the
    GroupId at the top of a ShareFetch or ShareAcknowledge."""
    if api_key in _TOP_GROUP_APIS:
        return [body.get("group_id")]
    groups = getattr(HANDLERS[api_key], "groups", None)
    return None if groups is None else groups(version, body)


def request_transactional_ids(api_key: int, version: int, body: dict) -> list:
    """The transactional ids a request names: its TransactionalId (None for a Produce or InitProducerId of a
    producer without one), or each transaction of an AddPartitionsToTxn v4+ (a broker's verification batch)."""
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN and version >= 4:
        return [t.get("transactional_id") for t in body.get("transactions") or ()]
    return [body.get(name) for name in _TRANSACTIONAL_ID_FIELDS if name in body][:1]


# ============================================================================ error responses
def error_response(api_key: int, version: int, body: dict, error: int) -> dict | None:
    """The response to ``body`` failing with ``error`` as a whole, in the shape Kafka's
    ``getErrorResponse`` gives it, built by the API's handler module: the error in every
    partition, group or key entry the request names, and in the top-level ErrorCode where the
    version has one. Keys are the latest version's; the encoder drops what ``version`` lacks.
    None for Produce with acks=0 (it has no response)."""
    handler = HANDLERS.get(api_key)
    if handler is None:
        raise FaultError(f"no error response for API key {api_key}")
    return handler.error_response(version, body, int(error))


def group_batch(api_key: int):
    """How a request of ``api_key`` names several groups (:class:`.handlers.common.GroupBatch`), or None."""
    return getattr(HANDLERS[api_key], "GROUP_BATCH", None)


def split_batch(api_key: int, body: dict, group_id: str) -> dict:
    """The request without ``group_id``'s entries (for the handler to answer the others)."""
    return group_batch(api_key).without(body, group_id)


def merge_batch(api_key: int, body: dict, response: dict, group_id: str, error: int) -> dict:
    """The handler's answer to :func:`split_batch`'s request, with ``group_id``'s error entries put
    back where the original request named it."""
    return group_batch(api_key).merged(body, response, group_id, int(error))


# ============================================================================ faults
@dataclass
class RequestFault:
    id: str
    api: int | None
    group: str | None
    node: int | None
    client_id: str | None
    member: str | None
    count: int | None           # as asked; None: every match
    skip: int
    error: ErrorCode | None
    latency_ms: int
    drop: bool
    source: str = "api"         # "api", or the scheduled fault that injected it
    remaining: int | None = None
    skipped: int = 0
    fired: int = 0
    active: bool = True
    drop_acknowledgements: bool = False     # the request is served, its share acknowledgements are not
    transactional_id: str | None = None

    def to_json(self) -> dict:
        return {"id": self.id, "kind": "request", "api": APIS[self.api].name if self.api is not None else None,
                "api_key": self.api, "group": self.group, "node": self.node, "client_id": self.client_id,
                "member": self.member, "transactional_id": self.transactional_id, "count": self.count, "remaining": self.remaining, "skip": self.skip,
                "error": self.error.name if self.error is not None else None,
                "error_code": int(self.error) if self.error is not None else None,
                "latency_ms": self.latency_ms, "drop": self.drop,
                "drop_acknowledgements": self.drop_acknowledgements, "fired": self.fired, "active": self.active,
                "source": self.source}


@dataclass
class ScheduledFault:
    id: str
    when: dict
    do: dict
    times: int | None
    remaining: int | None = None
    fired: int = 0
    active: bool = True
    errors: list = field(default_factory=list)

    def matches(self, event: dict) -> bool:
        for key, value in self.when.items():
            if event.get(key, _ABSENT) != value:
                return False
        return True

    def to_json(self) -> dict:
        return {"id": self.id, "kind": "scheduled", "when": dict(self.when), "do": dict(self.do),
                "times": self.times, "remaining": self.remaining, "fired": self.fired, "active": self.active,
                "errors": list(self.errors)}


_ABSENT = object()


def _has_acknowledgements(body: dict) -> bool:
    """Whether a ShareFetch or ShareAcknowledge acknowledges records."""
    return any(p.get("acknowledgement_batches") for t in body.get("topics") or () for p in t.get("partitions") or ())


def _moves_json(moves) -> list[dict]:
    return [{"topic": t, "partition": p, "from": old, "to": new} for t, p, old, new in moves]


class FaultEngine:
    """The faults of one :class:`~.service.Service` (``service.faults``)."""

    def __init__(self, service) -> None:
        self.service = service
        self.server = None          # the TCP driver, when there is one (set by Server)
        self.faults: dict[str, RequestFault | ScheduledFault] = {}
        self._ids = itertools.count(1)
        self._index: dict[int, list[RequestFault]] = {}     # api key -> active request faults
        self._hooked = False
        #: transactional id -> the client ids seen sending its requests (most recent last), recorded while
        #: a scheduled fault that may need them (drop_connections, crash_producer) is active
        self.producers: dict[str, list[str]] = {}
        self._schedules: list[ScheduledFault] = []          # active scheduled faults
        self._unsubscribe = None
        #: what fired, oldest first: {"fault", "ts_ms", "kind", ...}
        self.log: collections.deque = collections.deque(maxlen=LOG_SIZE)

    def _driver_running(self) -> bool:
        """A TCP driver is attached and running: what it is asked to do it does on its loop."""
        return self.server is not None and self.server.running

    def attach_server(self, server) -> None:
        self.server = server

    # ---- the fault list -----------------------------------------------------------
    def add(self, spec: dict) -> dict:
        """Add a request fault, or a scheduled fault when ``spec`` has "when"; returns it as JSON."""
        fault = self._parse(spec)
        self.faults[fault.id] = fault
        self._activate(fault)
        log.info("fault_added", **{k: v for k, v in fault.to_json().items() if v is not None})
        return fault.to_json()

    def get(self, fault_id: str) -> dict:
        fault = self.faults.get(fault_id)
        if fault is None:
            raise FaultError(f"no fault {fault_id!r}", "not_found")
        return fault.to_json()

    def list(self) -> list[dict]:
        return [f.to_json() for f in self.faults.values()]

    def remove(self, fault_id: str) -> dict:
        fault = self.faults.pop(fault_id, None)
        if fault is None:
            raise FaultError(f"no fault {fault_id!r}", "not_found")
        self._deactivate(fault)
        return fault.to_json()

    def clear(self) -> int:
        n = len(self.faults)
        for fault in list(self.faults.values()):
            self._deactivate(fault)
        self.faults.clear()
        return n

    def _new_id(self, spec: dict) -> str:
        given = spec.get("id")
        if given is None:
            while True:
                fault_id = f"f{next(self._ids)}"
                if fault_id not in self.faults:
                    return fault_id
        if not isinstance(given, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", given):
            raise FaultError("id must be 1-64 characters of A-Z a-z 0-9 . _ -")
        if given == "log":
            raise FaultError("id 'log' is reserved (GET /api/faults/log)")
        if given in self.faults:
            raise FaultError(f"a fault {given!r} exists already", "conflict")
        return given

    def _parse(self, spec: Any, source: str = "api", fault_id: str | None = None, *, request_only=False):
        if not isinstance(spec, dict):
            raise FaultError("a fault must be a JSON object")
        if "when" in spec or "do" in spec:
            if request_only:
                raise FaultError("inject adds a request fault, not a scheduled one")
            return self._parse_scheduled(spec)
        _unknown(spec, _REQUEST_KEYS, "a request fault")
        api = parse_api(spec["api"]) if spec.get("api") is not None else None
        group = _str(spec, "group")
        if group is not None and api is not None and api not in GROUP_APIS:
            raise FaultError(f"{APIS[api].name} requests carry no group id: drop 'group' or choose a group API")
        member = _str(spec, "member")
        if member is not None and api is not None and api not in MEMBER_APIS:
            raise FaultError(f"{APIS[api].name} requests carry no member id: drop 'member' or choose an API "
                             f"whose requests do ({', '.join(sorted(APIS[k].name for k in MEMBER_APIS))})")
        transactional_id = _str(spec, "transactional_id")
        if transactional_id is not None and api is not None and api not in TRANSACTIONAL_APIS:
            raise FaultError(f"{APIS[api].name} requests carry no transactional id: drop 'transactional_id' or choose "
                             f"an API whose requests do ({', '.join(sorted(APIS[k].name for k in TRANSACTIONAL_APIS))})")
        node = _int(spec, "node")
        if node is not None and node not in self.service.cluster.nodes:
            raise FaultError(f"no node {node}", "not_found")
        error = parse_error(spec["error"]) if spec.get("error") is not None else None
        latency = _int(spec, "latency_ms", default=0, nullable=False)
        drop = spec.get("drop", False)
        if not isinstance(drop, bool):
            raise FaultError("drop must be true or false")
        drop_acks = spec.get("drop_acknowledgements", False)
        if not isinstance(drop_acks, bool):
            raise FaultError("drop_acknowledgements must be true or false")
        if drop_acks:
            if api is not None and api not in ACKNOWLEDGING_APIS:
                raise FaultError(f"{APIS[api].name} requests carry no share acknowledgements: drop_acknowledgements "
                                 "is for ShareFetch and ShareAcknowledge (or no api: both)")
            if drop:
                raise FaultError("drop_acknowledgements serves the request: it cannot drop the connection too")
        elif error is None and not drop and not latency:
            raise FaultError("a request fault needs an error, latency_ms or drop (or drop_acknowledgements)")
        if error is not None and drop:
            raise FaultError("a request fault either answers with an error or drops the connection, not both")
        count = _int(spec, "count", minimum=1)
        return RequestFault(fault_id or self._new_id(spec), api, group, node, _str(spec, "client_id"), member, count,
                            _int(spec, "skip", default=0, nullable=False), error, latency, drop, source,
                            remaining=count, drop_acknowledgements=drop_acks, transactional_id=transactional_id)

    def _parse_scheduled(self, spec: dict) -> ScheduledFault:
        _unknown(spec, _SCHEDULE_KEYS, "a scheduled fault")
        when, do = spec.get("when"), spec.get("do")
        if not isinstance(when, dict) or not when:
            raise FaultError("when must be a non-empty object of event fields, e.g. "
                             '{"event": "group.state_change", "group": "G", "state_to": "CompletingRebalance"}')
        kind = when.get("event")
        if kind is not None and kind not in EVENT_FIELDS and kind not in TRANSACTION_EVENT_FIELDS:
            raise FaultError(f"unknown event {kind!r}; known: {', '.join([*EVENT_FIELDS, *TRANSACTION_EVENT_FIELDS])}")
        allowed = set(_event_fields(kind)) if kind is not None else _EVENT_KEYS
        _unknown(when, allowed, f"when ({kind or 'any event'})")
        if not isinstance(do, dict):
            raise FaultError("do must be an object with an action, e.g. "
                             '{"action": "expire_member", "member": "M"}')
        action = do.get("action")
        if action not in _ACTIONS:
            raise FaultError(f"unknown action {action!r}; known: {', '.join(_ACTIONS)}")
        _unknown(do, _ACTIONS[action] | {"action"}, f"action {action}")
        if action in _MEMBER_ACTIONS:
            chosen = [k for k in ("member", "instance_id", "client_id") if do.get(k) is not None]
            if len(chosen) > 1:
                raise FaultError(f"{action} names its member by one of member, instance_id or client_id")
            if not chosen and kind is not None and "member" not in _event_fields(kind):
                raise FaultError(f"{action} needs member, instance_id or client_id: {kind} events name no member")
            for k in ("group", *chosen):
                _str(do, k)
        elif action == "inject":
            self._parse(do.get("fault"), fault_id="-", request_only=True)   # checked now, added when it fires
        elif action in ("node_down", "node_up"):
            if _int(do, "node", nullable=False) not in self.service.cluster.nodes:
                raise FaultError(f"no node {do['node']}", "not_found")
            if not isinstance(do.get("preferred_election", False), bool):
                raise FaultError("preferred_election must be true or false")
        elif action == "move_coordinator":
            if do.get("partition") is not None and do.get("group") is not None:
                raise FaultError("move_coordinator moves a group or a partition, not both")
            self._check_partition(_int(do, "partition"))
            _str(do, "group")
            self._check_node(_int(do, "node"))
        elif action == "drop_connections":
            self._check_node(_int(do, "node"))
            _str(do, "client_id")
            _str(do, "transactional_id")
        elif action == "crash_producer":
            if _str(do, "transactional_id") is None and kind is not None and kind not in TRANSACTION_EVENT_FIELDS:
                raise FaultError(f"crash_producer needs transactional_id: {kind} events name none")
        elif action == "expire_locks":
            for k in ("group", "member", "topic"):
                _str(do, k)
            if _int(do, "partition") is not None and do.get("topic") is None:
                raise FaultError("expire_locks: partition needs its topic")
        times = _int(spec, "times", minimum=1, default=1)
        return ScheduledFault(self._new_id(spec), dict(when), dict(do), times, remaining=times)

    def _check_node(self, node):
        if node is not None and node not in self.service.cluster.nodes:
            raise FaultError(f"no node {node}", "not_found")
        return node

    def _check_partition(self, partition):
        if partition is not None and not 0 <= partition < self.service.cluster.offsets_partitions:
            raise FaultError(f"no offsets-topic partition {partition} "
                             f"(there are {self.service.cluster.offsets_partitions})", "not_found")
        return partition

    # ---- activation -----------------------------------------------------------------
    def _activate(self, fault) -> None:
        if isinstance(fault, ScheduledFault):
            self._schedules.append(fault)
            if self._unsubscribe is None:
                self._unsubscribe = self.service.bus.subscribe(self.on_event)
            self._hook()
            return
        if fault.api is not None:
            keys = (fault.api,)
        elif fault.drop_acknowledgements:
            keys = ACKNOWLEDGING_APIS
        else:
            keys = TRANSACTIONAL_APIS if fault.transactional_id is not None else APIS
        for key in keys:
            self._index.setdefault(key, []).append(fault)
        self._hook()

    def _watching_producers(self) -> bool:
        """Whether an active scheduled fault may act on a transactional id's clients."""
        return any(s.do["action"] in _PRODUCER_ACTIONS for s in self._schedules)

    def _hook(self) -> None:
        """In ``service.before_request`` exactly while a request fault is active or the clients of
        transactional ids are watched."""
        wanted = bool(self._index) or self._watching_producers()
        if wanted and not self._hooked:
            self.service.before_request.append(self.before_request)
            self._hooked = True
        elif not wanted and self._hooked:
            try:
                self.service.before_request.remove(self.before_request)
            except ValueError:
                pass
            self._hooked = False

    def _deactivate(self, fault) -> None:
        if not fault.active:
            return
        fault.active = False
        if isinstance(fault, ScheduledFault):
            self._schedules = [s for s in self._schedules if s is not fault]
            if not self._schedules and self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None
            self._hook()
            return
        for key in list(self._index):
            rules = [r for r in self._index[key] if r is not fault]
            if rules:
                self._index[key] = rules
            else:
                del self._index[key]
        self._hook()

    # ---- request faults -------------------------------------------------------------
    def before_request(self, ctx: RequestContext, body: dict) -> Verdict | None:
        """The ``service.before_request`` hook."""
        if ctx.api_key in TRANSACTIONAL_APIS and self._watching_producers():
            self._saw_producer(ctx, body)
        rules = self._index.get(ctx.api_key)
        if not rules:
            return None
        groups = None
        for rule in rules:
            if rule.node is not None and rule.node != ctx.node_id:
                continue
            if rule.client_id is not None and rule.client_id != ctx.client_id:
                continue
            if rule.member is not None and body.get("member_id") != rule.member:
                continue
            if rule.drop_acknowledgements and not _has_acknowledgements(body):
                continue
            if rule.transactional_id is not None and \
                    rule.transactional_id not in request_transactional_ids(ctx.api_key, ctx.api_version, body):
                continue
            if rule.group is not None:
                if groups is None:
                    groups = request_groups(ctx.api_key, ctx.api_version, body) or ()
                if rule.group not in groups:
                    continue
            if rule.skipped < rule.skip:
                rule.skipped += 1
                continue
            try:
                return self._fire(rule, ctx, body, groups)
            except Exception:       # a fault must never break the service
                log.exception("fault_failed", fault=rule.id)
                return None
        return None

    def _fire(self, rule: RequestFault, ctx: RequestContext, body: dict, groups) -> Verdict | None:
        rule.fired += 1
        if rule.remaining is not None:
            rule.remaining -= 1
            if rule.remaining <= 0:
                self._deactivate(rule)
        self.log.append({"fault": rule.id, "ts_ms": ctx.now_ms, "kind": "request", "api": APIS[ctx.api_key].name,
                         "node": ctx.node_id, "client_id": ctx.client_id, "group": rule.group,
                         "transactional_id": rule.transactional_id,
                         "error": rule.error.name if rule.error is not None else None,
                         "latency_ms": rule.latency_ms, "drop": rule.drop,
                         "drop_acknowledgements": rule.drop_acknowledgements})
        reason = f"fault {rule.id}"
        if rule.drop_acknowledgements:
            # (served: the share-partition leader answers each acknowledged partition with this code)
            body[DROP_ACKNOWLEDGEMENTS] = int(rule.error) if rule.error is not None else 0
            return Verdict(delay_ms=rule.latency_ms, reason=reason) if rule.latency_ms else None
        if rule.drop:
            return Verdict(delay_ms=rule.latency_ms, close=True, reason=reason)
        if rule.error is None:
            return Verdict(delay_ms=rule.latency_ms, reason=reason)
        response = None
        if rule.group is not None and any(g != rule.group for g in groups) and self._batched(ctx):
            response = self._fail_one_group(ctx, body, rule)
        if response is None:
            response = error_response(ctx.api_key, ctx.api_version, body, rule.error)
        if response is None:        # Produce acks=0: Kafka closes the connection on an error
            return Verdict(delay_ms=rule.latency_ms, close=True, reason=reason)
        return Verdict(respond=response, delay_ms=rule.latency_ms, reason=reason)

    def _saw_producer(self, ctx: RequestContext, body: dict) -> None:
        """Remember which client sent a transactional id's request (for drop_connections and crash_producer)."""
        for txn_id in request_transactional_ids(ctx.api_key, ctx.api_version, body):
            if txn_id is None or ctx.api_key == ApiKey.ADD_PARTITIONS_TO_TXN and ctx.api_version >= 4:
                continue            # (a broker's verification, not the producer)
            clients = self.producers.setdefault(txn_id, [])
            if clients[-1:] != [ctx.client_id]:         # (the most recent last, the last 8 kept)
                if ctx.client_id in clients:
                    clients.remove(ctx.client_id)
                clients.append(ctx.client_id)
                del clients[:-8]

    @staticmethod
    def _batched(ctx) -> bool:
        batch = group_batch(ctx.api_key)
        return batch is not None and ctx.api_version >= batch.min_version

    def _fail_one_group(self, ctx, body, rule) -> dict | None:
        """Answer a batched request: the handler does the other groups, the fault this one."""
        got = []
        self.service.handle(ctx, split_batch(ctx.api_key, body, rule.group), got.append)
        if not got or got[0] is None:
            return None
        return merge_batch(ctx.api_key, body, got[0], rule.group, rule.error)

    # ---- scheduled faults ----------------------------------------------------------
    def on_event(self, event: dict) -> None:
        """The bus subscriber: fire the scheduled faults whose ``when`` matches."""
        for s in list(self._schedules):
            if not s.active or not s.matches(event):
                continue
            s.fired += 1
            if s.remaining is not None:
                s.remaining -= 1
                if s.remaining <= 0:
                    self._deactivate(s)
            self.log.append({"fault": s.id, "ts_ms": event.get("ts_ms"), "kind": "scheduled",
                             "event": event.get("event"), "group": event.get("group"),
                             **({"transactional_id": event["transactional_id"]} if "transactional_id" in event else {}),
                             "action": s.do["action"]})
            def action(s=s, event=dict(event)):       # noqa: B006 (a copy bound now, on purpose)
                self._run_action(s, event)
            if s.do["action"] in _CONNECTION_ACTIONS:
                self._after_responses(action)
            else:
                self._after_current_operation(action)

    def _after_current_operation(self, fn) -> None:
        """Run fn once the coordinator operation in progress (the one that emitted the event)
        has finished: queued behind its responses in the coordinator's outbox, so that nothing
        re-enters the core mid-operation; at once when the core is idle."""
        self.service.group_coordinator.defer(fn)

    def _after_responses(self, fn) -> None:
        """Run fn on the driver's next turn, once the responses of the request being
        handled are written (a dropped connection does not swallow them); as
        :meth:`_after_current_operation` without a running loop."""
        if self._driver_running():
            self.server.call_soon(fn)
        else:
            self._after_current_operation(fn)

    def _run_action(self, s: ScheduledFault, event: dict) -> None:
        do = s.do
        action = do["action"]
        try:
            result = self.run_action(do, event, source=s.id)
            log.info("fault_fired", fault=s.id, action=action, group=event.get("group"),
                     trigger=event.get("event"), result=result)
        except Exception as exc:
            s.errors.append(str(exc))
            del s.errors[:-10]
            if isinstance(exc, FaultError):
                log.warning("fault_action_failed", fault=s.id, action=action, error=str(exc))
            else:
                log.exception("fault_action_failed", fault=s.id, action=action)

    def run_action(self, do: dict, event: dict | None = None, source: str = "api"):
        """Run one action (the ``do`` of a scheduled fault) now; event fills in the group and
        member it does not name."""
        event = event or {}
        action = do["action"]
        if action in _MEMBER_ACTIONS:
            group_id = do.get("group") or event.get("group")
            selector = {k: do[k] for k in ("member", "instance_id", "client_id") if do.get(k) is not None}
            if not selector:
                selector = {"member": event.get("member")}
            if action == "expire_member":
                return self.expire_member(group_id, **selector)
            if action == "fence_member":
                return self.fence_member(group_id, **selector, source=source)
            return self.remove_member(group_id, **selector)
        if action == "expire_locks":
            member = do["member"] if "member" in do else event.get("member")
            return self.expire_locks(do.get("group") or event.get("group"), member, do.get("topic"),
                                     do.get("partition"))
        if action == "inject":
            return self.add_injected(do["fault"], source)
        if action == "node_down":
            return self.node_down(do["node"])
        if action == "node_up":
            return self.node_up_soon(do["node"], do.get("preferred_election", False))
        if action == "move_coordinator":
            if do.get("partition") is not None:
                return self.move_partition(do["partition"], do.get("node"))
            return self.move_group(do.get("group") or event.get("group"), do.get("node"))
        if action == "drop_connections":
            return self.drop_connections(do.get("node"), do.get("client_id"), do.get("transactional_id"))
        if action == "crash_producer":
            return self.crash_producer(do.get("transactional_id") or event.get("transactional_id"), source=source)
        raise FaultError(f"unknown action {action!r}")

    def add_injected(self, spec: dict, source: str) -> dict:
        fault = self._parse(spec, source, request_only=True)
        self.faults[fault.id] = fault
        self._activate(fault)
        return fault.to_json()

    # ---- members ------------------------------------------------------------------
    def _find_member(self, group_id, member=None, instance_id=None, client_id=None):
        """(group, member) of a group of any type (a member by id, instance id or client id)."""
        gc = self.service.group_coordinator
        group = gc.get(group_id) if group_id else None
        if group is None:
            raise FaultError(f"no group {group_id!r}", "not_found")
        for m in group.members.values():
            if ((member is not None and m.member_id == member)
                    or (instance_id is not None and m.instance_id == instance_id)
                    or (client_id is not None and m.client_id == client_id)):
                return group, m
        who = member or instance_id or client_id
        raise FaultError(f"group {group_id!r} has no member {who!r}", "not_found")

    def expire_member(self, group_id: str, member=None, instance_id=None, client_id=None) -> str:
        """End a member's session now, as if its session timeout had passed without a heartbeat
        (``member.expired``, reason "session_timeout"), whatever it is waiting for: a parked
        JoinGroup or SyncGroup is answered UNKNOWN_MEMBER_ID. A consumer group's member is fenced
        (``consumer.member_fenced``, reason "session_timeout"). Returns the member id."""
        group, m = self._find_member(group_id, member, instance_id, client_id)
        self.service.group_coordinator.expire_member(group.group_id, m.member_id)
        self._changed()
        return m.member_id

    def remove_member(self, group_id: str, member=None, instance_id=None, client_id=None) -> str:
        """Remove a member as an admin LeaveGroup does (``member.left``, initiator "admin")."""
        group, m = self._find_member(group_id, member, instance_id, client_id)
        code = self.service.group_coordinator.remove_member(group.group_id, m.member_id, reason="fault")
        if code:
            raise FaultError(f"removing {m.member_id} failed with {ErrorCode.lookup(code)!r}", "conflict")
        self._changed()
        return m.member_id

    def fence_member(self, group_id: str, member=None, instance_id=None, client_id=None,
                     source: str = "api") -> dict:
        """Answer a consumer group member's next ConsumerGroupHeartbeat FENCED_MEMBER_EPOCH (a
        one-shot request fault, added now); the request fault. A share group's member is fenced now,
        as its session timeout would (``share.member_fenced``): {"group", "member", "fenced": true}."""
        group, m = self._find_member(group_id, member, instance_id, client_id)
        if group.type == "share":
            self.service.group_coordinator.expire_member(group.group_id, m.member_id)
            self._changed()
            return {"group": group.group_id, "member": m.member_id, "fenced": True}
        if group.type != "consumer":
            raise FaultError(f"group {group.group_id!r} is a {group.type} group: fence_member is for consumer groups "
                             "(and share groups)", "conflict")
        return self.add_injected({"api": "ConsumerGroupHeartbeat", "group": group.group_id, "member": m.member_id,
                                  "error": "FENCED_MEMBER_EPOCH", "count": 1}, source)

    def expire_locks(self, group_id: str, member: str | None = None, topic: str | None = None,
                     partition: int | None = None) -> dict:
        """Expire a share group's acquisition locks now, as their timeout would (those ``member`` holds,
        of ``topic``, of its ``partition``; None: any): their records are AVAILABLE again, or ARCHIVED at
        the delivery count limit. {"group", "member", "records", "partitions": [{topic, partition,
        records}]}: how many records' locks expired."""
        gc = self.service.group_coordinator
        group = gc.get(group_id) if group_id else None
        if group is None:
            raise FaultError(f"no group {group_id!r}", "not_found")
        if group.type != "share":
            raise FaultError(f"group {group_id!r} is a {group.type} group: expire_locks is for share groups",
                             "conflict")
        topic_id = None
        if topic is not None:
            topic_id = self.service.topic_id(topic)
            if topic_id is None:
                raise FaultError(f"no topic {topic!r}", "not_found")
        if partition is not None and topic is None:
            raise FaultError("partition needs its topic")
        if partition is not None and (isinstance(partition, bool) or not isinstance(partition, int) or partition < 0):
            raise FaultError(f"partition must be an integer >= 0, not {partition!r}")
        expired = self.service.share_partitions.expire_locks(group_id, member, topic_id, partition)
        self._changed()
        parts = sorted(({"topic": self.service.topic_name(t), "partition": p, "records": n}
                        for (_, t, p), n in expired.items()), key=lambda e: (e["topic"] or "", e["partition"]))
        log.warning("share_locks_expired", group=group_id, member=member, records=sum(expired.values()))
        return {"group": group_id, "member": member, "records": sum(expired.values()), "partitions": parts}

    def _changed(self) -> None:
        if self._driver_running():
            self.server.rearm()

    # ---- cluster faults -------------------------------------------------------------
    def _node(self, node_id: int):
        node = self.service.cluster.nodes.get(node_id)
        if node is None:
            raise FaultError(f"no node {node_id}", "not_found")
        return node

    def node_down(self, node_id: int) -> dict:
        """Take a node down: it stops listening and drops its connections (with a server), and
        what it led moves to live nodes."""
        node = self._node(node_id)
        if not node.up:
            raise FaultError(f"node {node_id} is down already", "conflict")
        if self.server is not None:
            moves = self.server.stop_listening(node_id)
        else:
            moves = self.service.cluster.node_down(node_id)
        log.warning("node_down", node=node_id, moves=len(moves))
        return {"node": node_id, "up": False, "moves": _moves_json(moves)}

    def node_up_soon(self, node_id: int, preferred_election: bool = False, done=None) -> dict | None:
        """Bring a node back: it listens again on its port; with ``preferred_election`` the
        partitions it prefers go back to it at once (else they stay where they are). Without a
        running TCP driver at once, returning the result; with one, the driver opens the listener
        and ``done(result, None)`` (or ``done(None, exception)``) follows, and None is returned."""
        node = self._node(node_id)
        if node.up:
            raise FaultError(f"node {node_id} is up already", "conflict")

        def finish(moves) -> dict:
            if preferred_election:
                elected = self.service.cluster.elect_preferred_leaders(node_id)
                self._unload({p for topic, p, old, new in elected if topic is None})
                moves = list(moves) + elected
            log.warning("node_up", node=node_id, moves=len(moves))
            return {"node": node_id, "up": True, "moves": _moves_json(moves)}
        if not self._driver_running():
            result = finish(self.service.cluster.node_up(node_id))
            if done is not None:
                done(result, None)
            return result

        def started(moves, exc) -> None:
            result = None
            if exc is None:
                try:
                    result = finish(moves)
                except Exception as e:      # the caller (the admin API) hears of it
                    exc = e
            if exc is not None:
                log.error("fault_action_failed", action="node_up", error=repr(exc))
            if done is not None:
                done(result, exc)
        self.server.start_node_then(node_id, started)
        return None

    def _next_live(self, current: int) -> int:
        cluster = self.service.cluster
        ids = cluster.node_ids()
        start = ids.index(current) if current in ids else -1
        for k in range(1, len(ids) + 1):
            n = ids[(start + k) % len(ids)]
            if cluster.nodes[n].up and n != current:
                return n
        raise FaultError("no other live node to move to", "conflict")

    def move_partition(self, partition: int, node: int | None = None) -> dict:
        """Make ``node`` (default: the next live node) the leader of an offsets-topic partition,
        so the coordinator of its groups; the old leader answers NOT_COORDINATOR for them."""
        cluster = self.service.cluster
        if not isinstance(partition, int) or isinstance(partition, bool):
            raise FaultError("partition must be an integer")
        self._check_partition(partition)
        current = cluster.offsets_leaders[partition]
        if node is None:
            node = self._next_live(current)
        if not self._node(node).up:
            raise FaultError(f"node {node} is down", "conflict")
        old = cluster.set_leader(None, partition, node)
        self._unload({partition} if old != node else set())
        gc = self.service.group_coordinator
        groups = sorted(g.group_id for g in gc.groups()
                        if cluster.coordinator_partition(g.group_id) == partition)
        log.warning("coordinator_moved", partition=partition, old=old, new=node, groups=len(groups))
        return {"partition": partition, "from": old, "to": node, "groups": groups}

    def _unload(self, partitions: set) -> list:
        """The old coordinator of these offsets-topic partitions unloads their groups: JoinGroup
        and SyncGroup requests parked there are answered NOT_COORDINATOR, as Kafka's
        ``GroupCoordinator.onGroupUnloaded`` does; the members rejoin at the new one."""
        if not partitions:
            return []
        return self.service.group_coordinator.on_unloaded(partitions)

    def move_group(self, group_id: str, node: int | None = None) -> dict:
        """Move a group's coordinator: its offsets-topic partition (and every other group there)."""
        if not isinstance(group_id, str) or not group_id:
            raise FaultError("group must be a non-empty string")
        result = self.move_partition(self.service.cluster.coordinator_partition(group_id), node)
        return {"group": group_id, **result}

    def drop_connections(self, node: int | None = None, client_id: str | None = None,
                         transactional_id: str | None = None) -> dict:
        """Close client connections (of a node, of a client id, of the producer of a transactional id: the
        clients seen sending its requests; or all)."""
        if node is not None:
            self._node(node)
        clients = [client_id]
        if transactional_id is not None:
            clients = self.producer_clients(transactional_id)
            if client_id is not None:
                clients = [c for c in clients if c == client_id]
        closed = 0
        if self.server is not None:
            closed = sum(self.server.drop_connections(node, c) for c in clients)
        log.warning("connections_dropped", node=node, client_id=client_id, transactional_id=transactional_id,
                    closed=closed)
        return {"closed": closed} if transactional_id is None else {"closed": closed, "clients": clients}

    def producer_clients(self, transactional_id: str) -> list[str]:
        """The client ids seen sending the transactional id's requests while a scheduled fault watched them."""
        clients = self.producers.get(transactional_id)
        if not clients:
            raise FaultError(f"no client seen sending requests of transactional id {transactional_id!r} (they are "
                             "watched while a drop_connections or crash_producer fault is active)", "not_found")
        return list(clients)

    def crash_producer(self, transactional_id: str | None, source: str = "api") -> dict:
        """The producer of a transactional id crashes, from the cluster's view: the connections of its client
        are dropped, and its later requests of that id are dropped too (an injected request fault per client,
        until removed: ``faults``), so its open transaction stays open until its transaction.timeout.ms
        aborts it, or a new producer of the id (another client id, or after the fault's removal) fences it."""
        if not isinstance(transactional_id, str) or not transactional_id:
            raise FaultError("crash_producer needs a transactional_id")
        clients = self.producer_clients(transactional_id)
        faults = [self.add_injected({"transactional_id": transactional_id, "client_id": c, "drop": True}, source)["id"]
                  for c in clients]
        closed = self.drop_connections(client_id=None, transactional_id=transactional_id)["closed"]
        log.warning("producer_crashed", transactional_id=transactional_id, clients=clients, closed=closed)
        return {"transactional_id": transactional_id, "clients": clients, "closed": closed, "faults": faults}
