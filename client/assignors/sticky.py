"""Kafka's StickyAssignor ("sticky", eager protocol).

Each member puts its previous assignment and generation in its subscription user data
(``StickyAssignorUserData``, see ``protocol/consumer.py``); the leader always reads the previous
assignment from there (never from the subscription's owned partitions), which keeps it working
with members that only send v0 subscriptions.
"""
from __future__ import annotations

import struct

from groupcoord.protocol.consumer import (decode_sticky_user_data, encode_sticky_user_data,
                                          group_partitions)
from groupcoord.protocol.types import unpack_array

from .abstract_sticky import AbstractStickyAssignor, MemberData
from .base import (Assignment, ConsumerGroupMetadata, RebalanceProtocol, Subscription, TopicPartition,
                   TopicPartitionGroups)


class StickyAssignor(AbstractStickyAssignor):
    name = "sticky"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def __init__(self) -> None:
        super().__init__()
        self.member_assignment: list[TopicPartition] | None = None
        self.generation: int = self.DEFAULT_GENERATION

    def on_assignment(self, assignment: Assignment, metadata: ConsumerGroupMetadata) -> None:
        self.member_assignment = list(assignment.partitions)
        self.generation = metadata.generation_id

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        if self.member_assignment is None:
            return None
        return encode_sticky_user_data(group_partitions(self.member_assignment), self.generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        data = subscription.user_data
        if not data:
            return MemberData([], None, subscription.rack_id)
        # Kafka: V1 (with generation), else V0 (no generation), else an empty assignment
        fast = _decode_v1(data)
        if fast is not None:
            groups, generation = fast
        else:
            decoded = decode_sticky_user_data(data)
            groups = [(e["topic"], e["partitions"]) for e in decoded["previous_assignment"]]
            generation = decoded["generation"]
        return MemberData(TopicPartitionGroups(groups), generation, subscription.rack_id)

    def _previous(self, layout, members, subs, member_data):
        """As the base class, reading V1 user data straight into pids (anything else, or
        a partition not in ``layout``, goes through ``member_data``)."""
        if member_data is not None or type(self).member_data is not StickyAssignor.member_data:
            return super()._previous(layout, members, subs, member_data)
        where = {}
        for topic, w in layout._where.items():
            try:
                name = topic.encode()
            except UnicodeEncodeError:      # (a lone surrogate) never matches valid UTF-8
                continue
            if len(name) <= 0x7FFF:         # a longer one has a negative int16 length
                where[name] = w
        claimed = []
        generations = []
        for sub in subs:
            data = sub.user_data
            fast = _v1_pids(data, where) if data else None
            if fast is None:
                md = self.member_data(sub)
                claimed.append(layout.pids(md.partitions))
                generations.append(md.generation)
            else:
                claimed.append(fast[0])
                generations.append(fast[1])
        return claimed, generations, False


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_II = struct.Struct(">ii")


def _decode_v1(data) -> tuple[list, int] | None:
    """A fast reader for user data that is exactly the V1 layout (the common case); None for
    anything else, which then goes through ``decode_sticky_user_data``."""
    try:
        buf = bytes(data)
        size = len(buf)
        text = buf.decode("ascii") if buf.isascii() else None     # topic names by slicing
        i16 = _I16.unpack_from
        i32 = _I32.unpack_from
        ii = _II.unpack_from
        (count,) = i32(buf, 0)
        pos = 4
        if count < 0:
            return None
        groups = []
        append = groups.append
        for _ in range(count):
            (n,) = i16(buf, pos)
            if n < 0:
                return None
            end = pos + 2 + n
            topic = text[pos + 2:end] if text is not None else buf[pos + 2:end].decode("utf-8")
            if end + 8 <= size:
                k, first = ii(buf, end)
            else:
                (k,) = i32(buf, end)
                first = None
            pos = end + 4
            if k == 1:
                append((topic, (first,)))
            elif k >= 0:
                append((topic, unpack_array("i", k, buf, pos)))
            else:
                return None
            pos += 4 * k
        (generation,) = i32(buf, pos)
        if pos + 4 != size:
            return None
        return groups, generation
    except (struct.error, UnicodeDecodeError):
        return None


_SMALL_ARRAYS = [struct.Struct(f">{k}i").unpack_from for k in range(64)]


def _v1_pids(data, where) -> tuple[list[int], int] | None:
    """User data of exactly the V1 layout whose partitions all exist -> (pids in the order
    given, generation); None for anything else. ``where`` maps UTF-8 topic names to
    (first pid, partition count)."""
    buf = data if type(data) is bytes else bytes(data)
    try:
        (count,) = _I32.unpack_from(buf, 0)
        if count < 0:
            return None
        ii = _II.unpack_from
        get = where.get
        out: list[int] = []
        append = out.append
        pos = 4
        for _ in range(count):
            end = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
            w = get(buf[pos + 2:end])
            if w is None:
                return None
            off, n = w
            k, first = ii(buf, end)
            pos = end + 4
            if k == 1:
                if not 0 <= first < n:
                    return None
                append(off + first)
                pos += 4
            elif k > 1:
                parts = (_SMALL_ARRAYS[k](buf, pos) if k < 64
                         else struct.unpack_from(f">{k}i", buf, pos))
                pos += 4 * k
                for p in parts:
                    if not 0 <= p < n:
                        return None
                    append(off + p)
            elif k < 0:
                return None
        (generation,) = _I32.unpack_from(buf, pos)
        if pos + 4 != len(buf):
            return None
        return out, generation
    except (struct.error, IndexError):
        return None
