"""Structured events of fleet members (schema version 1), next to the coordinator's.

A fleet run writes one event log (``events/``, Parquet, or ``events.jsonl``: sim/eventfile.py):
the coordinator's events (schema v1 of :mod:`groupcoord.coordinator.events`) and these, sorted by
``ts_ms`` and then by order of occurrence.

Common fields (every member event)
----------------------------------
``v``           int   schema version (:data:`SCHEMA_VERSION`).
``event``       str   event type (below), all starting with ``client.``.
``ts_ms``       int   the run's clock (virtual ms in simulate, wall-clock ms in fleet).
``group``       str   group id.
``client``      str   the member's stable name in the scenario, ``"<group>/m<index>"`` (e.g.
                      ``"g0/m017"``), the same across restarts of that member.
``member``      str   its member id at that moment ("" before the first join).
``generation``  int   its generation id at that moment (-1 outside a generation); with the
                      consumer protocol its member epoch (0 while joining, -1 after leaving).

Event types and their own fields
--------------------------------
``client.started``   the member process started.
    ``strategy`` (list of assignor names; with the consumer protocol the group.remote.assignor,
    or none for the coordinator's default), ``protocol``: "eager" | "cooperative" (the classic
    protocol's) | "consumer" (group.protocol=consumer, KIP-848), ``instance_id`` (group.instance.id
    or None).
``client.state``     consumer protocol only: the member's state or epoch changed (Kafka's
    MemberState). ``state``: "UNSUBSCRIBED" | "JOINING" | "RECONCILING" | "ACKNOWLEDGING" |
    "STABLE" | "FENCED" | "LEAVING"; the epoch is ``generation``.
``client.assigned``  the rebalance listener's onPartitionsAssigned.
    ``partitions`` ([[topic, partition], ...] newly assigned), ``owned`` (all owned after).
``client.revoked``   onPartitionsRevoked.  ``partitions``, ``owned`` (what is left).
``client.lost``      onPartitionsLost.     ``partitions``, ``owned`` (what is left).
``client.committed`` an offset commit acknowledged by the coordinator.
    ``offsets`` ([[topic, partition, offset], ...]).
``client.records_polled``  work queues (a group with ``job_ms``, every share group): the
    application's poll got records. ``records``: [[topic, partition, first, last, delivery_count],
    ...], runs of consecutive offsets of one partition with one delivery count (a share group's:
    the leader's, 1 the first time; a consumer group's member does not know it: 0).
``client.batch_processed``  work queues: the application processed the records of a poll.
    ``records`` ([[topic, partition, first, last], ...]), ``started_ms`` (when it began),
    ``busy_ms`` (the sum of their processing times); ts_ms is when it finished.
``client.acknowledged``  share groups: acknowledgements answered by the leader (or failed before
    they could be sent). ``records`` ([[topic, partition, first, last, type], ...], type "ACCEPT" |
    "RELEASE" | "REJECT" | "GAP"), ``error`` (None, or the Kafka error's name).
``client.stopped``   the member is gone.
    ``reason``: "close" (graceful close) | "crash" (killed, no LeaveGroup) | "fenced"
    (FENCED_INSTANCE_ID) | "fatal" (another fatal error).

Partition lists are sorted by topic, then partition.

Producer events (``[[produce]]``)
---------------------------------
``producer.produced``  records appended by a producer of the scenario: ``v``, ``event``, ``ts_ms``
    (when the leader appended them), ``producer`` ("<topic>/p<index>", index among the scenario's
    [[produce]] entries), ``topic``, ``partition``, ``first``, ``last`` (their offsets). No group.
"""
from __future__ import annotations

from groupcoord.coordinator.events import check_fields
from groupcoord.protocol.errors import ErrorCode

from .work import ACK_NAMES, runs

SCHEMA_VERSION = 1

BASE_FIELDS: tuple[str, ...] = ("v", "event", "ts_ms", "group", "client", "member", "generation")

EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "client.started": ("strategy", "protocol", "instance_id"),
    "client.state": ("state",),
    "client.assigned": ("partitions", "owned"),
    "client.revoked": ("partitions", "owned"),
    "client.lost": ("partitions", "owned"),
    "client.committed": ("offsets",),
    "client.records_polled": ("records",),
    "client.batch_processed": ("records", "started_ms", "busy_ms"),
    "client.acknowledged": ("records", "error"),
    "client.stopped": ("reason",),
}
PRODUCER_FIELDS: tuple[str, ...] = ("v", "event", "ts_ms", "producer", "topic", "partition", "first", "last")

STOP_REASONS = ("close", "crash", "fenced", "fatal")
PROTOCOLS = ("eager", "cooperative", "consumer", "share")
MEMBER_STATES = ("UNSUBSCRIBED", "JOINING", "RECONCILING", "ACKNOWLEDGING", "STABLE", "FENCED", "LEAVING")


def check_event(event: dict) -> None:
    """Raise ``ValueError`` unless ``event`` is a member event with exactly the documented fields
    and sane values (or a producer event, with exactly its fields)."""
    if event.get("event") == "producer.produced":
        if set(event) != set(PRODUCER_FIELDS):
            raise ValueError(f"producer.produced: fields {sorted(event)}, expected {sorted(PRODUCER_FIELDS)}")
        if not all(isinstance(event[k], int) for k in ("ts_ms", "partition", "first", "last")) \
                or event["first"] > event["last"]:
            raise ValueError("producer.produced: ts_ms, partition, first <= last must be integers")
        return
    kind = check_fields(event, BASE_FIELDS, EVENT_FIELDS, "member event")
    if event["v"] != SCHEMA_VERSION:
        raise ValueError(f"{kind}: schema version {event['v']!r}")
    if not isinstance(event["ts_ms"], int) or not isinstance(event["generation"], int):
        raise ValueError(f"{kind}: ts_ms and generation must be integers")
    for key in ("group", "client", "member"):
        if not isinstance(event[key], str):
            raise ValueError(f"{kind}: {key} must be a string")
    if kind == "client.started" and event["protocol"] not in PROTOCOLS:
        raise ValueError(f"{kind}: protocol {event['protocol']!r}")
    if kind == "client.state" and event["state"] not in MEMBER_STATES:
        raise ValueError(f"{kind}: state {event['state']!r}")
    if kind == "client.stopped" and event["reason"] not in STOP_REASONS:
        raise ValueError(f"{kind}: reason {event['reason']!r}")
    for key in ("partitions", "owned"):
        if key in event and not all(isinstance(tp, list) and len(tp) == 2 for tp in event[key]):
            raise ValueError(f"{kind}: {key} must be [[topic, partition], ...]")
    if kind in ("client.records_polled", "client.acknowledged", "client.batch_processed"):
        width = 4 if kind == "client.batch_processed" else 5
        if not all(isinstance(r, list) and len(r) == width and r[2] <= r[3] for r in event["records"]):
            raise ValueError(f"{kind}: records must be runs of {width} fields, first <= last")
    if kind == "client.committed" and not all(isinstance(o, list) and len(o) == 3 for o in event["offsets"]):
        raise ValueError(f"{kind}: offsets must be [[topic, partition, offset], ...]")


def producer_event(ts_ms: int, producer: str, topic: str, partition: int, first: int, last: int) -> dict:
    return {"v": SCHEMA_VERSION, "event": "producer.produced", "ts_ms": ts_ms, "producer": producer,
            "topic": topic, "partition": partition, "first": first, "last": last}


def tp_list(tps) -> list[list]:
    return [[t, p] for t, p in sorted(tps)]


class MemberEvents:
    """Turns one member's actions into events; ``emit(event)`` receives them.

    ``clock()`` gives ``ts_ms``; the member object may be replaced on restart (:attr:`member`).
    """

    __slots__ = ("emit", "clock", "group", "client", "member", "strategy", "protocol", "instance_id", "_last")

    def __init__(self, emit, clock, group: str, client: str, strategy: list[str], protocol: str,
                 instance_id: str | None):
        self.emit = emit
        self.clock = clock
        self.group = group
        self.client = client
        self.member = None
        self.strategy = list(strategy)
        self.protocol = protocol
        self.instance_id = instance_id
        self._last = None              # (state, epoch) of the last client.state

    def _base(self, kind: str) -> dict:
        m = self.member
        clock = self.clock             # (a call through a local: 3.11 specializes it, not self.clock())
        if m is None:
            return {"v": SCHEMA_VERSION, "event": kind, "ts_ms": clock(), "group": self.group,
                    "client": self.client, "member": "", "generation": -1}
        g = m.generation               # (its fields, not the member's properties: a hot path)
        return {"v": SCHEMA_VERSION, "event": kind, "ts_ms": clock(), "group": self.group,
                "client": self.client, "member": g.member_id, "generation": g.generation_id}

    def started(self) -> None:
        self._last = None
        e = self._base("client.started")
        e.update(strategy=self.strategy, protocol=self.protocol, instance_id=self.instance_id)
        self.emit(e)

    def state(self, state: str, epoch: int) -> None:
        """The member's ``state_listener`` (consumer protocol): a client.state when either changed."""
        if (state, epoch) == self._last:
            return
        self._last = (state, epoch)
        e = self._base("client.state")
        e["state"] = state
        self.emit(e)

    def callback(self, kind: str, partitions) -> None:
        """kind: "assigned", "revoked" or "lost" (a RebalanceCallback action's ``kind``), at the
        moment the member hands the action out."""
        owned = self.member.assignment
        owned = owned | partitions if kind == "assigned" else owned - partitions
        e = self._base("client." + kind)
        e["partitions"] = tp_list(partitions)
        e["owned"] = tp_list(owned)
        self.emit(e)

    def committed(self, offsets: dict) -> None:
        if not offsets:
            return
        e = self._base("client.committed")
        e["offsets"] = [[tp[0], tp[1], om.offset] for tp, om in sorted(offsets.items())]
        emit = self.emit
        emit(e)

    def polled(self, records: list) -> None:
        """Records a poll handed to the application (ShareRecord or ConsumerRecord)."""
        e = self._base("client.records_polled")
        e["records"] = runs((r.topic, r.partition, r.offset, getattr(r, "delivery_count", 0)) for r in records)
        self.emit(e)

    def batch_processed(self, records: list, started_ms: int, busy_ms: int) -> None:
        e = self._base("client.batch_processed")
        e["records"] = runs((r.topic, r.partition, r.offset) for r in records)
        e["started_ms"] = started_ms
        e["busy_ms"] = busy_ms
        self.emit(e)

    def acknowledged(self, results: dict, types: dict) -> None:
        """A share member's AcknowledgementsCommitted: one event per outcome (error or None)."""
        by_error: dict = {}
        for tp, (offsets, error) in results.items():
            kinds = types.get(tp, {})
            name = None if error is None else getattr(getattr(error, "code", None), "name", None) or type(error).__name__
            by_error.setdefault(name, []).extend(
                (tp[0], tp[1], o, ACK_NAMES.get(kinds.get(o), "ACCEPT")) for o in offsets)
        for name in sorted(by_error, key=lambda n: (n is not None, n or "")):
            e = self._base("client.acknowledged")
            e["records"] = runs(by_error[name])
            e["error"] = name
            self.emit(e)

    def stopped(self, reason: str) -> None:
        e = self._base("client.stopped")
        e["reason"] = reason
        self.emit(e)


def stop_reason(error: Exception) -> str:
    """ "fenced" for FENCED_INSTANCE_ID, else "fatal"."""
    return "fenced" if getattr(error, "code", None) == ErrorCode.FENCED_INSTANCE_ID else "fatal"
