"""Payloads of the "consumer" protocol type, carried opaquely by JoinGroup and SyncGroup.

- ``ConsumerProtocolSubscription`` (JoinGroup ``protocols[].metadata``): v0 topics and
  user data; v1 owned partitions; v2 generation id; v3 rack id.
- ``ConsumerProtocolAssignment`` (SyncGroup assignments): assigned partitions and
  user data, the same layout in every version.
- The StickyAssignor's user data (no version prefix): the previous assignment and,
  in its second layout, the generation.

Each payload starts with an int16 version. As Kafka does, a payload of a newer
version than we know is read with the newest we know and its trailing bytes are
ignored; an older one must be read exactly.
"""
from __future__ import annotations

import struct
from typing import Callable

from .errors import DecodeError
from .schema import A, F, MessageSpec, S

SUBSCRIPTION = MessageSpec("ConsumerProtocolSubscription", [
    F("Topics", "[]string"),
    F("UserData", "bytes", nullable="0+", default=None),
    F("OwnedPartitions", A(S(
        F("Topic", "string"),
        F("Partitions", "[]int32"),
    )), "1+"),
    F("GenerationId", "int32", "2+", default=-1),
    F("RackId", "string", "3+", nullable="3+", default=None),
], valid="0-3", flexible=None)

ASSIGNMENT = MessageSpec("ConsumerProtocolAssignment", [
    F("AssignedPartitions", A(S(
        F("Topic", "string"),
        F("Partitions", "[]int32"),
    ))),
    F("UserData", "bytes", nullable="0+", default=None),
], valid="0-3", flexible=None)

# StickyAssignor user data: "V1" has the generation, "V0" does not. No version prefix.
_STICKY_V1 = MessageSpec("StickyAssignorUserData", [
    F("PreviousAssignment", A(S(
        F("Topic", "string"),
        F("Partitions", "[]int32"),
    ))),
    F("Generation", "int32"),
], valid="0", flexible=None)
_STICKY_V0 = MessageSpec("StickyAssignorUserData", [
    F("PreviousAssignment", A(S(
        F("Topic", "string"),
        F("Partitions", "[]int32"),
    ))),
], valid="0", flexible=None)

_VERSION = struct.Struct(">h")


def kept(store: dict, key: bytes | tuple, make: Callable[[], object], limit: int):
    """make(), kept in ``store`` under ``key`` for the next call with an equal key (the store
    emptied when it holds ``limit``): for payloads read or written again and again alike (a
    rebalance's subscriptions and assignments). Made each time for a key neither bytes nor a tuple
    (a payload in a memoryview or bytearray) or an unhashable one (a custom assignor's user data)."""
    if type(key) is not bytes and type(key) is not tuple:
        return make()
    try:
        value = store.get(key)
    except (TypeError, ValueError):         # (ValueError: a writable memoryview's)
        return make()
    if value is None:
        value = make()
        if len(store) >= limit:
            store.clear()
        store[key] = value
    return value


def _decode_versioned(spec: MessageSpec, data: bytes) -> dict:
    if not isinstance(data, bytes):
        data = bytes(data)
    if len(data) < 2:
        raise DecodeError(spec.name, None, 0, f"a payload needs an int16 version, got {len(data)} bytes")
    version = _VERSION.unpack_from(data, 0)[0]
    if version < spec.valid[0]:
        raise DecodeError(spec.name, version, 0, f"unsupported version {version}")
    newer = version > spec.valid[1]
    codec = spec.codec(min(version, spec.valid[1]))
    obj = codec.decode(data, 2, allow_trailing=newer)
    obj["version"] = version
    return obj


def _encode_versioned(spec: MessageSpec, obj: dict, version: int) -> bytes:
    return _VERSION.pack(version) + spec.encode(obj, version)


def decode_subscription(data: bytes) -> dict:
    """{version, topics, user_data, owned_partitions?, generation_id?, rack_id?}"""
    return _decode_versioned(SUBSCRIPTION, data)


def encode_subscription(obj: dict, version: int = 3) -> bytes:
    return _encode_versioned(SUBSCRIPTION, obj, version)


def decode_assignment(data: bytes) -> dict:
    """{version, assigned_partitions: [{topic, partitions}], user_data}"""
    return _decode_versioned(ASSIGNMENT, data)


def encode_assignment(obj: dict, version: int = 3) -> bytes:
    return _encode_versioned(ASSIGNMENT, obj, version)


def subscribed_topics(metadata: bytes) -> list[str] | None:
    """The topics of a subscription as the coordinator reads them (version + v0 prefix).

    None when the bytes cannot be parsed, as Kafka treats an unparsable subscription.
    """
    try:
        if len(metadata) < 2:
            return None
        obj, _ = SUBSCRIPTION.codec(0).decode_from(bytes(metadata), 2)
        return obj["topics"]
    except DecodeError:
        return None


def decode_sticky_user_data(data: bytes | None) -> dict:
    """{previous_assignment: [{topic, partitions}], generation: int | None}.

    Tries the layout with the generation, then the one without; anything else is an
    empty assignment with no generation, as Kafka's StickyAssignor does.
    """
    if data:
        data = bytes(data)
        try:  # Kafka reads the layout and ignores what follows
            return _STICKY_V1.codec(0).decode(data, 0, allow_trailing=True)
        except DecodeError:
            pass
        try:
            obj = _STICKY_V0.codec(0).decode(data, 0, allow_trailing=True)
            obj["generation"] = None
            return obj
        except DecodeError:
            pass
    return {"previous_assignment": [], "generation": None}


def encode_sticky_user_data(previous_assignment: list[dict], generation: int | None) -> bytes:
    obj = {"previous_assignment": previous_assignment}
    if generation is None:
        return _STICKY_V0.encode(obj, 0)
    obj["generation"] = generation
    return _STICKY_V1.encode(obj, 0)


def group_partitions(pairs) -> list[dict]:
    """[(topic, partition), ...] -> [{topic, partitions}] grouped by topic, sorted."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": sorted(p)} for t, p in sorted(by_topic.items())]


def flatten_partitions(entries) -> list[tuple[str, int]]:
    """[{topic, partitions}] -> [(topic, partition), ...]"""
    return [(e["topic"], p) for e in entries for p in e["partitions"]]
