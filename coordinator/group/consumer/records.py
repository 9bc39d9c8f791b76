"""A consumer group's records (Kafka 4.x's ``GroupCoordinatorRecordHelpers`` for consumer
groups): what a change of the group writes to its offsets partition's log, and the group that
replaying them rebuilds.

The records are those of :mod:`..records` (kinds 3, 5 to 8, 16). Instead of each step of the
heartbeat naming its records, :func:`changes` compares the group with what was last written
for it: the group epoch, the target assignment's epoch, and the members the group marked as
changed (:attr:`~.consumer.ConsumerGroup.changed`), or every member's target after a new
target assignment. A heartbeat therefore writes what Kafka's writes, in its order: member
metadata (5), group epoch (3), targets (7), target epoch (6), current assignments (8); a member
that left has its 8, 7 and 5 tombstoned.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from groupcoord.coordinator import records as _rec
from groupcoord.coordinator.storage import ConsumerGroupKey

from .group import (ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, MemberState, OwnershipError,
                       ResolvedRegularExpression, uuid_order)

_STATE_CODE = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1,
               MemberState.UNRELEASED_PARTITIONS: 2, MemberState.UNKNOWN: 127}
_STATE_OF = {code: state for state, code in _STATE_CODE.items()}


@dataclass(slots=True)
class Written:
    """What the log holds for a group: its epochs, and per member the member and target
    objects last written (members are replaced, never changed in place)."""
    group_epoch: int = -1
    metadata_hash: int = 0
    assignment_epoch: int = -1
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    targets: dict[str, dict] = field(default_factory=dict)
    target_map: dict | None = None      # the group's ``target`` dict when last compared whole
    regexes: dict[str, object] = field(default_factory=dict)


def metadata_hash(subscription_metadata: dict) -> int:
    """A signed 64-bit hash of the subscribed topics' metadata (KIP-1101's MetadataHash, Kafka
    4.1+: it tells at load whether a topic changed while the coordinator was away). Kafka hashes
    with Murmur3 over its own layout; this one is ours, compared only with itself."""
    if not subscription_metadata:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for name, info in sorted(subscription_metadata.items()):
        h.update(f"{name}\0{info.topic_id}\0{info.partitions}\n".encode())
    return int.from_bytes(h.digest(), "big", signed=True)


def _metadata(m: ConsumerGroupMember) -> tuple:
    return (m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
            m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor, m.classic)


def _current(m: ConsumerGroupMember) -> tuple:
    return m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation


def member_metadata_value(m: ConsumerGroupMember) -> dict:
    return {"instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "server_assignor": m.server_assignor, "classic_member_metadata": None if m.classic is None else {
                "session_timeout_ms": m.classic.session_timeout_ms,
                "supported_protocols": [{"name": n, "metadata": d} for n, d in m.classic.protocols]}}


def _epoched(parts: dict) -> list[dict]:
    out = []
    for topic_id, ps in sorted(parts.items(), key=lambda kv: uuid_order(kv[0])):
        order = sorted(ps)
        out.append({"topic_id": topic_id, "partitions": order, "assignment_epochs": [ps[p] for p in order]})
    return out


def current_assignment_value(m: ConsumerGroupMember) -> dict:
    return {"member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "state": _STATE_CODE[m.state], "assigned_partitions": _epoched(m.assigned),
            "partitions_pending_revocation": _epoched(m.pending_revocation)}


def target_value(target: dict) -> dict:
    return {"topic_partitions": [{"topic_id": t, "partitions": sorted(ps)}
                                 for t, ps in sorted(target.items(), key=lambda kv: uuid_order(kv[0]))]}


def _key(kind: int, group: ConsumerGroup, name: str | None = None) -> ConsumerGroupKey:
    return ConsumerGroupKey(kind, group.group_id, name)


def changes(group: ConsumerGroup, written: Written) -> list[tuple]:
    """The records that bring the log from ``written`` to the group as it is now; updates
    ``written``. Clears the group's ``changed`` set."""
    metadata, targets, current, tombstones = [], [], [], []
    changed = group.changed
    if group.target is not written.target_map:
        changed = set(changed) | set(group.target) | set(written.targets)
        written.target_map = group.target
    for member_id in sorted(changed):
        member = group.members.get(member_id)
        old = written.members.get(member_id)
        if member is None:
            if old is not None or member_id in written.targets:
                tombstones.append((_key(_rec.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group, member_id), None))
                tombstones.append((_key(_rec.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group, member_id), None))
                tombstones.append((_key(_rec.CONSUMER_GROUP_MEMBER_METADATA, group, member_id), None))
                written.members.pop(member_id, None)
                written.targets.pop(member_id, None)
            continue
        if member is not old:
            if old is None or _metadata(member) != _metadata(old):
                metadata.append((_key(_rec.CONSUMER_GROUP_MEMBER_METADATA, group, member_id),
                                 member_metadata_value(member)))
            if old is None or _current(member) != _current(old):
                current.append((_key(_rec.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group, member_id),
                                 current_assignment_value(member)))
            written.members[member_id] = member
        target = group.target.get(member_id)
        if target is not None and target != written.targets.get(member_id):
            targets.append((_key(_rec.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group, member_id),
                            target_value(target)))
            written.targets[member_id] = target
    group.changed.clear()
    out = tombstones + metadata
    if group.group_epoch != written.group_epoch:
        digest = metadata_hash(group.subscription_metadata)
        out.append((_key(_rec.CONSUMER_GROUP_METADATA, group), {"epoch": group.group_epoch, "metadata_hash": digest}))
        written.group_epoch, written.metadata_hash = group.group_epoch, digest
    out += targets
    if group.assignment_epoch != written.assignment_epoch:
        out.append((_key(_rec.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group),
                    {"assignment_epoch": group.assignment_epoch, "assignment_timestamp": 0}))
        written.assignment_epoch = group.assignment_epoch
    out += current
    out += _regex_changes(group, written)
    return out


def _regex_changes(group: ConsumerGroup, written: Written) -> list[tuple]:
    resolved = group.resolved_regexes
    out = []
    for regex in sorted(set(written.regexes) - set(resolved)):
        out.append((_key(_rec.CONSUMER_GROUP_REGULAR_EXPRESSION, group, regex), None))
        del written.regexes[regex]
    for regex, r in sorted(resolved.items()):
        if written.regexes.get(regex) is not r:
            out.append((_key(_rec.CONSUMER_GROUP_REGULAR_EXPRESSION, group, regex),
                        {"topics": sorted(r.topics), "version": r.version, "timestamp": r.timestamp_ms}))
            written.regexes[regex] = r
    return out


def deletion(group: ConsumerGroup, written: Written) -> list[tuple]:
    """The tombstones of every record the log holds for the group (``createGroupTombstoneRecords``)."""
    out = []
    for member_id in sorted(set(written.members) | set(written.targets)):
        out.append((_key(_rec.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group, member_id), None))
        out.append((_key(_rec.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group, member_id), None))
        out.append((_key(_rec.CONSUMER_GROUP_MEMBER_METADATA, group, member_id), None))
    for regex in sorted(written.regexes):
        out.append((_key(_rec.CONSUMER_GROUP_REGULAR_EXPRESSION, group, regex), None))
    out.append((_key(_rec.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group), None))
    out.append((_key(_rec.CONSUMER_GROUP_METADATA, group), None))
    written.members.clear()
    written.targets.clear()
    written.regexes.clear()
    written.group_epoch = written.assignment_epoch = -1
    group.changed.clear()
    return out


def _classic(value: dict | None) -> ClassicMemberMetadata | None:
    if value is None:
        return None
    return ClassicMemberMetadata(value["session_timeout_ms"],
                                 tuple((p["name"], p["metadata"]) for p in value["supported_protocols"]))


def _targets(entries) -> dict:
    return {e["topic_id"]: frozenset(e["partitions"]) for e in entries if e["partitions"]}


def _epoched_parts(entries, default_epoch: int) -> dict:
    """Partitions with their assignment epochs; a record written before KIP-1251 has none, and the
    member's epoch stands in for them."""
    out = {}
    for e in entries:
        ps = e["partitions"]
        if ps:
            epochs = e.get("assignment_epochs")
            if epochs is None or len(epochs) != len(ps):
                epochs = [default_epoch] * len(ps)
            out[e["topic_id"]] = dict(zip(ps, epochs))
    return out


def restore(group_id: str, values: dict, now: int) -> tuple[ConsumerGroup, Written, list[str]]:
    """The group that its live records (``(kind, name) -> value``, as :class:`~..storage.ReplayState`
    keeps them) describe, what the log holds for it, and warnings about records that could not be
    applied (a partition owned twice). Subscription metadata is left to the caller (the metadata
    image of now)."""
    group = ConsumerGroup(group_id, now)
    written = Written()
    warnings = []
    rewrite = []
    meta = values.get((_rec.CONSUMER_GROUP_METADATA, None))
    group.group_epoch = meta["epoch"] if meta is not None else 0
    written.metadata_hash = meta["metadata_hash"] if meta is not None else 0
    target_meta = values.get((_rec.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, None))
    group.assignment_epoch = target_meta["assignment_epoch"] if target_meta is not None else 0
    member_ids = sorted({name for (kind, name) in values
                         if kind in (_rec.CONSUMER_GROUP_MEMBER_METADATA, _rec.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT)})
    for member_id in member_ids:
        md = values.get((_rec.CONSUMER_GROUP_MEMBER_METADATA, member_id)) or {}
        cur = values.get((_rec.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, member_id))
        member = ConsumerGroupMember(
            member_id, instance_id=md.get("instance_id"), rack_id=md.get("rack_id"),
            client_id=md.get("client_id", ""), client_host=md.get("client_host", ""),
            rebalance_timeout_ms=md.get("rebalance_timeout_ms", -1),
            subscribed_topic_names=tuple(sorted(set(md.get("subscribed_topic_names", ())))),
            subscribed_topic_regex=md.get("subscribed_topic_regex"), server_assignor=md.get("server_assignor"),
            joined_ms=now, classic=_classic(md.get("classic_member_metadata")))
        if cur is not None:
            epoch = cur["member_epoch"]
            member.member_epoch = epoch
            member.previous_member_epoch = cur["previous_member_epoch"]
            member.state = _STATE_OF.get(cur["state"], MemberState.UNKNOWN)
            member.assigned = _epoched_parts(cur["assigned_partitions"], epoch)
            member.pending_revocation = _epoched_parts(cur["partitions_pending_revocation"], epoch)
        try:
            group.update_member(member)
            written.members[member_id] = member
        except OwnershipError as e:          # a log written by something else
            warnings.append(f"member {member_id}: {e}; loaded without partitions")
            member.assigned, member.pending_revocation = {}, {}
            member.state = MemberState.UNKNOWN if cur is not None else MemberState.STABLE
            group.update_member(member)
            rewrite.append(member_id)
        target = values.get((_rec.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, member_id))
        if target is not None:
            group.target[member_id] = _targets(target["topic_partitions"])
            written.targets[member_id] = group.target[member_id]
    written.target_map = group.target
    written.group_epoch, written.assignment_epoch = group.group_epoch, group.assignment_epoch
    for (kind, name), v in values.items():
        if kind == _rec.CONSUMER_GROUP_REGULAR_EXPRESSION:
            # version -1: resolved again at the first heartbeat, as after Kafka's load; one no member
            # has is only in the log (tombstoned at the group's next write)
            resolved = ResolvedRegularExpression(frozenset(v["topics"]), -1, v["timestamp"])
            if name in group.subscribed_regexes:
                group.resolved_regexes[name] = resolved
            written.regexes[name] = resolved
        elif kind == _rec.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER and name not in group.members:
            written.targets[name] = _targets(v["topic_partitions"])     # a target without its member
            rewrite.append(name)
    group.changed.clear()
    group.changed.update(rewrite)          # their records are written again at the group's next change
    return group, written, warnings
