"""Kafka's CooperativeStickyAssignor ("cooperative-sticky", KIP-429).

The sticky algorithm with the cooperative protocol: members keep their partitions across the
rebalance and report them as the subscription's owned partitions (v1+) with the generation
(v2+; older subscriptions carry it as an int32 in the user data). A partition that the
algorithm moves from one member to another is left out of this rebalance's assignment: its old
owner revokes it, rejoins, and the follow-up rebalance assigns it to the new owner.
"""
from __future__ import annotations

import struct

from .abstract_sticky import AbstractStickyAssignor, MemberData, _Result
from .base import Assignment, ConsumerGroupMetadata, RebalanceProtocol, Subscription

_GENERATION = struct.Struct(">i")


class CooperativeStickyAssignor(AbstractStickyAssignor):
    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def __init__(self) -> None:
        super().__init__()
        self.generation: int = self.DEFAULT_GENERATION

    def on_assignment(self, assignment: Assignment, metadata: ConsumerGroupMetadata) -> None:
        self.generation = metadata.generation_id

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        return _GENERATION.pack(self.generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        owned = subscription.owned_partitions or []
        if subscription.generation_id is not None and subscription.generation_id >= 0:
            return MemberData(owned, subscription.generation_id, subscription.rack_id)
        data = subscription.user_data
        if data is None:
            generation = None
        else:
            try:
                generation = _GENERATION.unpack_from(bytes(data), 0)[0]
            except struct.error:
                generation = self.DEFAULT_GENERATION
        return MemberData(owned, generation, subscription.rack_id)

    def _previous(self, layout, members, subs, member_data):
        """As the base class, without building ``MemberData`` objects (same values)."""
        if member_data is not None or type(self).member_data is not CooperativeStickyAssignor.member_data:
            return super()._previous(layout, members, subs, member_data)
        pids = layout.pids
        where = layout._where.get
        claimed = []
        generations = []
        for sub in subs:
            owned = sub.owned_partitions
            if not owned:
                claimed.append([])
            elif type(owned) is list and len(owned) <= 32:
                mine = []       # as PartitionLayout.pids, inline
                for t, p in owned:
                    w = where(t)
                    if w is not None and type(p) is int and 0 <= p < w[1]:
                        mine.append(w[0] + p)
                claimed.append(mine)
            else:
                claimed.append(pids(owned))
            g = sub.generation_id
            generations.append(g if g is not None and g >= 0 else self.member_data(sub).generation)
        return claimed, generations, True

    def _adjust(self, result: _Result, subscriptions: dict[str, Subscription]) -> None:
        """Kafka's adjustAssignment: drop the partitions that change owner."""
        transferring = result.transferring
        if transferring is None:
            # computed afresh; like Kafka, ``partitions_transferring_ownership`` stays None
            transferring = self._compute_transferring(result, subscriptions)
        if not transferring:
            return
        by_member: dict[int, set[int]] = {}
        for pid, mi in transferring.items():
            by_member.setdefault(mi, set()).add(pid)
        for mi, drop in by_member.items():
            result.lists[mi] = [pid for pid in result.lists[mi] if pid not in drop]

    @staticmethod
    def _compute_transferring(result: _Result, subscriptions) -> dict[int, int]:
        """Partitions newly assigned to a member that another member owned and loses."""
        layout = result.layout
        new_owner: dict[int, int] = {}
        owner = result.owner
        if result.owned_pids is not None and owner is not None:
            # (a member's list holds exactly the pids whose owner it is)
            revoked_pids = [pid for mi, mine in enumerate(result.owned_pids)
                            for pid in mine if owner[pid] != mi]
            if not revoked_pids:
                return {}
            owned_sets = list(map(set, result.owned_pids))
            for pid in set(revoked_pids):
                mi = owner[pid]
                if mi >= 0 and pid not in owned_sets[mi]:
                    new_owner[pid] = mi
            return new_owner
        owned_by = [set(layout.pids(subscriptions[m].owned_partitions or []))
                    for m in result.members]
        revoked: set[int] = set()
        for mi, mine in enumerate(owned_by):
            if mine:
                revoked.update(mine.difference(result.lists[mi]))
        if not revoked:
            return {}
        for mi, lst in enumerate(result.lists):
            for pid in revoked.intersection(lst):
                if pid not in owned_by[mi]:
                    new_owner[pid] = mi
        return new_owner
