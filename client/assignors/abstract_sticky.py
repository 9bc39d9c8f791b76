"""Kafka's AbstractStickyAssignor: the algorithm shared by "sticky" and "cooperative-sticky".

Goals, in order: (1) balance -- the partition counts of members differ by at most one, or no
partition can move to a member with two or more fewer partitions; (2) stickiness -- keep as many
previously owned partitions where they are.

As in Kafka (KAFKA-9987 and later fixes) there are two paths:

- **constrained** (every member subscribes to the same topics): each member keeps up to its
  quota (``floor``/``ceil`` of partitions/members, the number of ``ceil`` members fixed) of
  what it owned, then the unowned partitions are dealt round-robin to the members under
  ``minQuota``, then one each to the members at ``minQuota`` that may still reach ``maxQuota``.
  Linear in the number of partitions.
- **general**: keep every still-valid owned partition, give each unassigned partition to the
  least loaded member subscribed to its topic, then move partitions from members with two or
  more partitions over some other potential owner while that improves balance, preferring to
  move a partition back to its previous owner, and keep the result only if its balance score is
  better.

The previous assignment comes from each member's ``MemberData`` (owned partitions + generation).
A partition claimed by several members: the member with the higher generation keeps it; two
members of the same generation both lose it (and, in the constrained path, any later claimant
too), and it is treated as "transferring ownership" so the cooperative assignor does not hand
it out before it is revoked.

Implementation: partitions are dense ints (``PartitionLayout`` pids), owners live in a list
indexed by pid, consumers are ints (their rank in member-id order, which is also Kafka's
tie-break order); nothing is kept per (consumer, partition) pair. Small groups spend most of
their time in fixed costs, so the hot loops are plain Python loops over lists (quicker on
CPython 3.11 than ``map`` over bound methods for short runs) and work that cannot change the
outcome (the balancer on an already balanced assignment) is skipped.
"""
from __future__ import annotations

import heapq
import logging
from abc import abstractmethod
from itertools import chain, compress, repeat
from typing import Iterable, NamedTuple

from .base import (AbstractPartitionAssignor, Assignment, ClusterMetadata, GroupAssignment,
                   GroupSubscription, PartitionLayout, Subscription, TopicPartition, _make_tp,
                   java_hashmap_order, java_sorted, java_string_hash)

log = logging.getLogger(__name__)

DEFAULT_GENERATION = -1


class MemberData(NamedTuple):
    """What a member reports it owned: (topic, partition) pairs and the generation (or None)."""

    partitions: Iterable[tuple[str, int]]
    generation: int | None
    rack_id: str | None = None


class StickyAssignmentError(RuntimeError):
    """An internal inconsistency of the assignment (Kafka's IllegalStateException)."""


class _Result:
    """The outcome of one run, in pids: ``lists[i]`` is member ``members[i]``'s partitions."""

    __slots__ = ("layout", "members", "lists", "transferring", "constrained", "sorted",
                 "owned_pids", "owner")

    def __init__(self, layout, members, lists, transferring, constrained, sorted_=False):
        self.layout: PartitionLayout = layout
        self.members: list[str] = members
        self.lists: list[list[int]] = lists
        # pid -> member index, or None when the general path ran (computed by the caller)
        self.transferring: dict[int, int] | None = transferring
        self.constrained: bool = constrained
        #: every list is in ascending order
        self.sorted: bool = sorted_
        #: each member's subscription's owned partitions as pids, when already computed
        self.owned_pids: list[list[int]] | None = None
        #: pid -> member index or -1, matching ``lists`` (general path only)
        self.owner: list[int] | None = None


class AbstractStickyAssignor(AbstractPartitionAssignor):
    DEFAULT_GENERATION = DEFAULT_GENERATION

    #: As Kafka's (test-only) ``preferRackAwareLogic``: match racks even when every partition
    #: has replicas on every rack.
    prefer_rack_aware: bool = False

    def __init__(self) -> None:
        #: partitions moving from one owner to another in the last assign (constrained path);
        #: None after a general-path assign, as in Kafka.
        self.partitions_transferring_ownership: dict[TopicPartition, str] | None = {}
        #: the highest generation seen in the last assign
        self.max_generation: int = DEFAULT_GENERATION
        self._movements: _PartitionMovements | None = None

    @abstractmethod
    def member_data(self, subscription: Subscription) -> MemberData:
        ...

    # -- public entry points ------------------------------------------------------------------

    def assign(self, cluster: ClusterMetadata, group_subscription: GroupSubscription) -> GroupAssignment:
        """As AbstractPartitionAssignor.assign, without copying the lists once more."""
        subscriptions = group_subscription.subscriptions
        topics: set[str] = set()
        for sub in subscriptions.values():
            topics.update(sub.topics)
        count = cluster.partition_count
        partitions_per_topic = {}
        for topic in topics:
            n = count(topic)
            if n:
                partitions_per_topic[topic] = n
        raw = self.assign_pairs(partitions_per_topic, subscriptions, cluster, _make_tp)
        return GroupAssignment({member: Assignment(raw[member]) for member in subscriptions})

    def assign_partitions(self, partitions_per_topic, subscriptions, cluster=None):
        return self.assign_pairs(partitions_per_topic, subscriptions, cluster, _make_tp)

    def assign_pairs(self, partitions_per_topic: dict[str, int],
                     subscriptions: dict[str, Subscription],
                     cluster: ClusterMetadata | None = None, factory=None,
                     member_data: dict[str, MemberData] | None = None) -> dict[str, list]:
        """{member: sorted [(topic, partition)]}; ``factory`` builds each pair (default: tuple).

        ``member_data`` overrides what ``member_data(subscription)`` would decode.
        """
        result = self._assign_ids(partitions_per_topic, subscriptions, member_data, cluster)
        self._adjust(result, subscriptions)
        result.owned_pids = result.owner = None     # let them go before the conversion
        lists = result.lists
        if not result.sorted:
            for pids in lists:
                pids.sort()
        layout = result.layout
        if layout.total <= 4096:
            # every pair built once, then picked (cheaper than one conversion per member)
            pairs = zip(chain.from_iterable(map(repeat, layout.topics, layout.counts)),
                        chain.from_iterable(map(range, layout.counts)))
            pick = (list(pairs) if factory is None else list(map(factory, pairs))).__getitem__
            out = {}
            for m, pids in zip(result.members, lists):
                out[m] = list(map(pick, pids))
            return out
        to_pairs = layout.to_pairs
        return {m: to_pairs(pids, factory) for m, pids in zip(result.members, lists)}

    def _previous(self, layout: PartitionLayout, members: list[str], subs: list[Subscription],
                  member_data: dict[str, MemberData] | None) -> tuple[list[list[int]], list, bool]:
        """Each member's claimed partitions (pids, in the order reported) and generation (or
        None), from ``member_data`` or else from ``self.member_data``; and whether the claimed
        partitions are exactly the subscriptions' owned partitions."""
        if member_data is None:
            mds = list(map(self.member_data, subs))
        else:
            mds = list(map(member_data.__getitem__, members))
        pids = layout.pids
        return [pids(md.partitions) for md in mds], [md.generation for md in mds], False

    def is_sticky(self) -> bool:
        """Kafka's ``isSticky``: no partition of a topic moved A->B while another moved B->A
        (in the last general-path assign)."""
        return self._movements is None or self._movements.is_sticky()

    def _adjust(self, result: _Result, subscriptions: dict[str, Subscription]) -> None:
        """Hook for the cooperative assignor."""

    # -- the algorithm -------------------------------------------------------------------------

    def _assign_ids(self, partitions_per_topic, subscriptions, member_data, cluster=None) -> _Result:
        layout = PartitionLayout(partitions_per_topic)
        # consumers are numbered in Java's String order (Kafka's TreeSet tie-break); maps keyed
        # by member id are iterated in java.util.HashMap order, as in Kafka
        arrival = list(subscriptions)
        members = java_sorted(arrival)
        nm = len(members)
        if members == arrival:
            iter_order = java_hashmap_order(arrival)
        else:
            index = dict(zip(members, range(nm)))
            iter_order = [index[arrival[i]] for i in java_hashmap_order(arrival)]
        subs = list(map(subscriptions.__getitem__, members))
        total = layout.total

        claimed, generation, from_owned = self._previous(layout, members, subs, member_data)
        sub_generation = [DEFAULT_GENERATION if g is None or g < 0 else g
                          for g in [s.generation_id for s in subs]]
        # allSubscriptionsEqual
        equal = True
        if subs:
            first_list = subs[0].topics
            first = frozenset(first_list)
            for sub in subs:
                topics = sub.topics
                if topics is not first_list and topics != first_list and frozenset(topics) != first:
                    equal = False
                    break
        max_generation = max([DEFAULT_GENERATION if g is None else g for g in generation],
                             default=DEFAULT_GENERATION)
        self.max_generation = max_generation

        # allPreviousPartitionsToOwner: pid -> member index
        claimant = [-1] * total
        owned: list[list[int]] = [[] for _ in range(nm)]
        multiple: set[int] = set()
        for mi in iter_order:
            pids = claimed[mi]
            if not pids:
                continue
            gen = generation[mi]
            gen = DEFAULT_GENERATION if gen is None else gen
            mine = owned[mi]
            for pid in pids:
                other = claimant[pid]
                if other < 0:
                    mine.append(pid)
                    claimant[pid] = mi
                    continue
                other_gen = sub_generation[other]    # as Kafka: the other's *subscription* generation
                if gen == other_gen:
                    log.error("partition %s claimed by %s and %s in the same generation %d; "
                              "invalidating it", layout.to_pairs([pid])[0], members[mi],
                              members[other], gen)
                    multiple.add(pid)
                    _remove(owned[other], pid)
                    claimant[pid] = mi
                elif gen > other_gen:
                    mine.append(pid)
                    _remove(owned[other], pid)
                    claimant[pid] = mi
                # else: the other (newer) claimant keeps it
        del claimant

        if nm == 0:
            self.partitions_transferring_ownership = {}
            return _Result(layout, members, [], {}, True)
        racks = _RackInfo(layout, members, subs, cluster, self.prefer_rack_aware)
        if equal:
            self._movements = None
            result = self._constrained(layout, members, iter_order, owned, multiple, racks)
        else:
            result = self._general(layout, members, iter_order, subs, claimed, generation,
                                   owned, max_generation, racks)
        if from_owned:
            result.owned_pids = claimed
        return result

    # -- constrained path (identical subscriptions) ----------------------------------------------

    def _constrained(self, layout, members, iter_order, owned, multiple, racks) -> _Result:
        nm = len(members)
        total = layout.total
        min_quota, over = divmod(total, nm)
        max_quota = min_quota + 1 if over else min_quota
        expected_over = over
        current_over = 0

        maybe_revoked: dict[int, int] = {}
        under: list[int] = []           # unfilledMembersWithUnderMinQuotaPartitions
        exact: list[int] = []           # unfilledMembersWithExactlyMinQuotaPartitions
        kept: list[list[int]] = [None] * nm   # type: ignore[list-item]
        key = None

        for mi in iter_order:
            mine = owned[mi]
            if racks.enabled:
                # owned partitions without a replica on the member's rack may be revoked
                keep = []
                for pid in mine:
                    if racks.mismatch(mi, pid):
                        maybe_revoked[pid] = mi
                    else:
                        keep.append(pid)
                mine = keep
            if multiple:
                mine = [pid for pid in mine if pid not in multiple]
            n = len(mine)
            if n < min_quota:
                kept[mi] = mine
                under.append(mi)
                continue
            if n >= max_quota and current_over < expected_over:
                current_over += 1
                if current_over == expected_over:
                    exact.clear()
                quota = max_quota
            else:
                quota = min_quota
                if current_over < expected_over:
                    exact.append(mi)
            if n > quota:
                # Kafka keeps the first ones ordered by (partition, topic)
                if key is None:
                    key = _partition_then_topic_key(layout)
                mine = sorted(mine, key=key)
                for pid in mine[quota:]:
                    maybe_revoked[pid] = mi
                mine = mine[:quota]
            kept[mi] = mine

        under.sort()
        exact.sort()
        unowned = bytearray(b"\x01") * total
        for mine in kept:
            for pid in mine:
                unowned[pid] = 0
        unassigned = list(compress(range(total), unowned))
        del unowned

        added: list[list[int]] = [[] for _ in range(nm)]
        if racks.enabled:
            unassigned.sort(key=racks.num_consumers.__getitem__)
            unassigned, current_over = self._rack_aware_round_robin(
                racks, unassigned, under, exact, kept, added, min_quota, max_quota,
                expected_over, current_over)

        # round-robin to the members under minQuota (sorted), in passes; a member leaves the
        # circle (and queues for one more partition) on reaching minQuota
        need = {mi: min_quota - len(kept[mi]) - len(added[mi]) for mi in under}
        active = under
        done = 0
        pos = 0
        while active:
            level = min(need[mi] for mi in active)
            k = len(active)
            width = (level - done) * k
            block = unassigned[pos:pos + width]
            if len(block) < width:
                raise StickyAssignmentError(
                    "some consumers are under minQuota but all partitions have been assigned")
            for j, mi in enumerate(active):
                added[mi].extend(block[j::k])
            pos += width
            done = level
            still = []
            for mi in active:
                if need[mi] == level:
                    exact.append(mi)
                else:
                    still.append(mi)
            active = still
        rest = unassigned[pos:]
        if len(rest) > len(exact):
            raise StickyAssignmentError("no more unfilled consumers to be assigned")
        for mi, pid in zip(exact, rest):
            added[mi].append(pid)
        current_over += len(rest)

        transferring: dict[int, int] = {}
        if maybe_revoked or multiple:
            candidates = set(maybe_revoked)
            candidates.update(multiple)
            for mi in range(nm):
                if added[mi]:
                    for pid in candidates.intersection(added[mi]):
                        if pid in multiple or maybe_revoked[pid] != mi:
                            transferring[pid] = mi
        lists = []
        for mi in range(nm):
            mine = kept[mi]
            if added[mi]:
                mine = mine + added[mi]
            elif mine is owned[mi]:
                mine = list(mine)
            lists.append(mine)
        self.partitions_transferring_ownership = _to_tp_map(layout, members, transferring)
        return _Result(layout, members, lists, transferring, True)

    @staticmethod
    def _rack_aware_round_robin(racks, unassigned, under, exact, kept, added, min_quota,
                                max_quota, expected_over, current_over):
        """Kafka's assignRackAwareRoundRobin: give each partition, if possible, to the next
        member (round-robin) under minQuota on a rack with one of its replicas, else to the
        first member at minQuota (still allowed one more) on such a rack. Returns the
        partitions left over and the updated count of members above minQuota."""
        rest = []
        nxt = 0
        for pid in unassigned:
            consumer = -1
            idx = racks.next_rack_consumer(pid, under, nxt)
            if idx >= 0:
                consumer = under[idx]
                count = len(kept[consumer]) + len(added[consumer]) + 1
                if count >= min_quota:
                    del under[idx]
                    if count < max_quota and current_over < expected_over:
                        exact.append(consumer)
                else:
                    idx += 1
                nxt = idx % len(under) if under else 0
            elif exact:
                first = racks.next_rack_consumer(pid, exact, 0)
                if first >= 0:
                    consumer = exact[first]
                    if len(kept[consumer]) + len(added[consumer]) + 1 == max_quota:
                        del exact[first]
                        current_over += 1
                        if current_over == expected_over:
                            exact.clear()
            if consumer >= 0:
                added[consumer].append(pid)
            else:
                rest.append(pid)
        return rest, current_over

    # -- general path -------------------------------------------------------------------------

    def _general(self, layout, members, iter_order, subs, claimed, generation, owned,
                 max_generation, racks) -> _Result:
        nm = len(members)
        nt = len(layout.topics)
        total = layout.total
        counts = layout.counts
        starts = layout._starts
        if total <= 4096:
            topic_of = list(chain.from_iterable(map(repeat, range(nt), counts)))
        else:
            topic_of = layout.topic_of_array()

        potential: list[list[int]] = [[] for _ in range(nt)]
        member_topics: list[set[int]] = []
        max_size = []
        tindex = layout._topic_index
        for mi, sub in enumerate(subs):
            tis = set()
            size = 0
            for t in sub.topics:
                ti = tindex.get(t)
                if ti is not None and ti not in tis:
                    tis.add(ti)
                    potential[ti].append(mi)
                    size += counts[ti]
            member_topics.append(tis)
            max_size.append(size)

        # assignOwnedPartitions: drop partitions of topics the member no longer subscribes to
        owner = [-1] * total
        sizes = [0] * nm
        revocation_required = False
        rack_aware = racks.enabled
        for mi in range(nm):
            mine = owned[mi]
            if not mine:
                continue
            subscribed = member_topics[mi]
            n = 0
            if rack_aware:
                for pid in mine:
                    if topic_of[pid] in subscribed and not racks.mismatch(mi, pid):
                        owner[pid] = mi
                        n += 1
                    else:
                        revocation_required = True
            else:
                for pid in mine:
                    if topic_of[pid] in subscribed:
                        owner[pid] = mi
                        n += 1
                    else:
                        revocation_required = True
            sizes[mi] = n

        # previous owners (members of older generations) for stickiness
        prev: dict[int, tuple[int, int]] = {}
        for mi in iter_order:
            gen = generation[mi]
            if gen is not None and gen < max_generation:
                pass
            elif gen is None and max_generation > DEFAULT_GENERATION:
                gen = DEFAULT_GENERATION
            else:
                continue
            for pid in claimed[mi]:
                old = prev.get(pid)
                if old is None or gen > old[1]:
                    prev[pid] = (mi, gen)

        # topics by (number of potential consumers, name); partitions in that order
        topic_order = sorted(range(nt), key=list(map(len, potential)).__getitem__)
        initializing = not any(sizes)

        # maybeAssign: each unassigned partition to the least loaded potential consumer (first
        # one on a rack with a replica of it, if rack-aware)
        left = owner.count(-1)
        if left == total:
            unassigned_runs: list = [(ti, range(starts[ti], starts[ti] + counts[ti]))
                                     for ti in topic_order]
        else:
            by_topic: dict[int, list[int]] = {}
            pid = -1
            for _ in range(left):
                pid = owner.index(-1, pid + 1)
                run = by_topic.get(topic_of[pid])
                if run is None:
                    by_topic[topic_of[pid]] = [pid]
                else:
                    run.append(pid)
            unassigned_runs = [(ti, by_topic[ti]) for ti in topic_order if ti in by_topic]
        if racks.enabled:
            remaining = []
            for ti, run in unassigned_runs:
                left = racks.assign_matching(run, potential[ti], sizes, owner)
                if left:
                    remaining.append((ti, left))
        else:
            remaining = unassigned_runs
        for ti, run in remaining:
            cands = potential[ti]
            if not cands:
                continue
            if len(cands) == 1:
                c = cands[0]
                for pid in run:
                    owner[pid] = c
                sizes[c] += len(run)
                continue
            if len(run) <= 2:
                key = sizes.__getitem__
                for pid in run:
                    c = min(cands, key=key)     # the first of the least loaded
                    owner[pid] = c
                    sizes[c] += 1
                continue
            heap = [sizes[c] * nm + c for c in cands]
            heapq.heapify(heap)
            replace = heapq.heapreplace
            for pid in run:
                k = heap[0]
                c = k % nm
                owner[pid] = c
                replace(heap, k + nm)
            for k in heap:
                c = k % nm
                sizes[c] = k // nm

        # narrow the reassignment scope
        movable_topic = [len(c) >= 2 for c in potential]
        fixed = [False] * nm
        for mi in range(nm):
            if sizes[mi] < max_size[mi]:
                continue
            if sizes[mi] > max_size[mi]:
                log.error("consumer %s is assigned more partitions than the maximum possible",
                          members[mi])
            if not any(movable_topic[ti] for ti in member_topics[mi]):
                fixed[mi] = True

        # performReassignments moves nothing when the movable members' sizes differ by <= 1
        movable_sizes = [n for n, f in zip(sizes, fixed) if not f]
        if not movable_sizes or max(movable_sizes) - min(movable_sizes) <= 1:
            self._movements = None
        else:
            topic_hash = [java_string_hash(t) for t in layout.topics]

            def tp_hash(pid: int) -> int:     # Java's TopicPartition.hashCode
                ti = topic_of[pid]
                return ((31 + pid - starts[ti]) * 31 + topic_hash[ti]) & 0xFFFFFFFF

            potential_sets = [frozenset(c) for c in potential] if prev else None
            balancer = _Balancer(nm, sizes, owner, topic_of, potential, potential_sets, fixed,
                                 prev, tp_hash)
            reassignable_all = [(ti, range(starts[ti], starts[ti] + counts[ti]))
                                for ti in topic_order if movable_topic[ti]]
            reassignable_new = [(ti, run) for ti, run in unassigned_runs if movable_topic[ti]]
            pre_sizes = list(sizes)
            if not revocation_required:
                balancer.perform(reassignable_new)
            performed = balancer.perform(reassignable_all)
            if (not initializing and performed
                    and balancer.balance_score() >= balancer.balance_score(pre_sizes)):
                balancer.revert()
            self._movements = balancer.movements

        self.partitions_transferring_ownership = None
        if total <= 4096:
            # group the pids by owner (a stable sort: each member's in ascending order)
            order = sorted(range(total), key=owner.__getitem__)
            pos = total - sum(sizes)        # those owned by nobody (-1) come first
            lists = []
            for n in sizes:
                lists.append(order[pos:pos + n])
                pos += n
        else:
            lists = [[] for _ in range(nm)]
            appends = [lst.append for lst in lists]
            for pid, o in enumerate(owner):
                if o >= 0:
                    appends[o](pid)
        result = _Result(layout, members, lists, None, False, True)
        result.owner = owner
        return result


class _RackInfo:
    """Kafka's AbstractStickyAssignor.RackInfo (KIP-881).

    Rack-aware when members report racks, partitions have replicas on some of those racks, and
    not every partition has replicas on the same set of racks (or ``prefer`` says so). Racks
    of members are numbered; ``mask[pid]`` has the bits of the member racks holding a replica.
    """

    def __init__(self, layout, members, subs, cluster, prefer=False):
        self.enabled = False
        if cluster is None or not getattr(cluster, "has_racks", False):
            return
        rack_of = {mi: s.rack_id for mi, s in enumerate(subs) if s.rack_id}
        if not rack_of:
            return
        from .range import use_rack_aware_assignment
        bit = {r: i for i, r in enumerate(sorted(set(rack_of.values())))}
        per_partition = []
        all_racks: set[str] = set()
        for t, n in zip(layout.topics, layout.counts):
            for p in range(n):
                r = cluster.partition_racks(TopicPartition(t, p))
                per_partition.append(r)
                all_racks.update(r)
        if not use_rack_aware_assignment(set(bit), all_racks, per_partition, prefer):
            return
        self.enabled = True
        self.bit = [-1] * len(members)
        for mi, r in rack_of.items():
            self.bit[mi] = bit[r]
        in_rack = [0] * len(bit)
        for b in self.bit:
            if b >= 0:
                in_rack[b] += 1
        masks = []
        num_consumers = []
        for r in per_partition:
            mask = 0
            for name in r:
                b = bit.get(name)
                if b is not None:
                    mask |= 1 << b
            masks.append(mask)
            num_consumers.append(sum(in_rack[b] for b in range(len(bit)) if mask >> b & 1))
        self.mask = masks
        self.num_consumers = num_consumers

    def mismatch(self, mi: int, pid: int) -> bool:
        """racksMismatch: the member has a rack and no replica of the partition is on it."""
        b = self.bit[mi]
        return b >= 0 and not self.mask[pid] >> b & 1

    def next_rack_consumer(self, pid: int, consumers: list[int], first: int) -> int:
        """Index of the next member (cyclically from ``first``) on a rack of the partition."""
        mask = self.mask[pid]
        if not mask:
            return -1
        n = len(consumers)
        bits = self.bit
        for i in range(n):
            idx = (first + i) % n
            b = bits[consumers[idx]]
            if b >= 0 and mask >> b & 1:
                return idx
        return -1

    def assign_matching(self, run, cands, sizes, owner) -> list[int]:
        """maybeAssign with rack matching for one topic's unassigned partitions: each goes to
        the least loaded (then first by member id) candidate without a rack or on one of its
        replicas' racks. Returns the partitions no candidate matched."""
        nm = len(sizes)
        groups: dict[int, list[int]] = {}
        for c in cands:
            groups.setdefault(self.bit[c], []).append(sizes[c] * nm + c)
        for h in groups.values():
            heapq.heapify(h)
        left = []
        for pid in run:
            mask = self.mask[pid]
            best = None
            best_group = None
            for b, h in groups.items():
                if b >= 0 and not mask >> b & 1:
                    continue
                while h:
                    k = h[0]
                    c = k % nm
                    if k // nm == sizes[c]:
                        break
                    heapq.heappop(h)
                if h and (best is None or h[0] < best):
                    best, best_group = h[0], b
            if best is None:
                left.append(pid)
                continue
            c = best % nm
            owner[pid] = c
            sizes[c] += 1
            heapq.heapreplace(groups[best_group], best + nm)
        return left


class _Balancer:
    """performReassignments of Kafka's GeneralAssignmentBuilder, on ints.

    Kafka checks ``isBalanced()`` (an O(consumers x partitions) scan) before every partition.
    Here only its O(1) fast path (max - min <= 1 over the movable consumers) is checked: when the
    full check says balanced no partition can satisfy the move condition, so scanning on yields
    the same moves. Per topic, a lazy heap keyed by (size, consumer) gives Kafka's
    "first consumer in sortedCurrentSubscriptions subscribed to the topic".

    Kafka's loop can go on forever (this port, which makes its choices, does on a group the random
    tests found): a partition to be moved from an overloaded consumer A to B, which came to A from
    C earlier in the loop while another of its topic went from B to C, is swapped for that other
    one (moved back from C to B: getTheActualPartitionToBeMoved); A stays overloaded, the next pass
    moves that partition from B to C again, and so on. After 1,000 passes the balancer says so and
    goes on moving the partitions it picks themselves: each such move lowers the sum of the squared
    sizes, so the loop ends, with the balance Kafka's criterion asks for (before balance()'s own
    check of the score, which may still revert it all). Such moves can leave two partitions of a
    topic swapped between two members, which Kafka's isSticky forbids: they are given back after.
    """

    def __init__(self, nm, sizes, owner, topic_of, potential, potential_sets, fixed, prev,
                 tp_hash=None):
        self.nm = nm
        self.sizes = sizes
        self.owner = owner
        self.topic_of = topic_of
        self.potential = potential
        self.potential_sets = potential_sets
        self.fixed = fixed
        self.prev = prev
        self.undo: list[tuple[int, int]] = []
        self.movements = _PartitionMovements(tp_hash)
        self.exact = False           # after the livelock guard: no stickiness substitution
        hist: dict[int, int] = {}
        for mi in range(nm):
            if not fixed[mi]:
                s = sizes[mi]
                hist[s] = hist.get(s, 0) + 1
        self.hist = hist
        self.lo = min(hist) if hist else 0
        self.hi = max(hist) if hist else 0

    def balance_score(self, sizes=None) -> int:
        """Sum over pairs of movable consumers of |size difference| (Kafka's getBalanceScore)."""
        vals = sorted(s for s, f in zip(self.sizes if sizes is None else sizes, self.fixed) if not f)
        n = len(vals)
        return sum(v * (2 * i - n + 1) for i, v in enumerate(vals))

    def _resize(self, mi: int, delta: int) -> None:
        hist = self.hist
        old = self.sizes[mi]
        new = old + delta
        self.sizes[mi] = new
        c = hist[old] - 1
        if c:
            hist[old] = c
        else:
            del hist[old]
        hist[new] = hist.get(new, 0) + 1
        if new > self.hi:
            self.hi = new
        if new < self.lo:
            self.lo = new
        if not c:
            if old == self.hi:
                self.hi = old - 1 if (old - 1) in hist else max(hist)
            if old == self.lo:
                self.lo = old + 1 if (old + 1) in hist else min(hist)

    def _move(self, pid: int, new: int) -> tuple[int, int]:
        """reassignPartition(partition, newConsumer): returns (moved pid, its old owner)."""
        owner = self.owner
        actual = pid if self.exact else self.movements.actual_partition_to_move(
            pid, self.topic_of[pid], owner[pid], new)
        old = owner[actual]
        self.movements.move(actual, self.topic_of[actual], old, new)
        owner[actual] = new
        self.undo.append((actual, old))
        self._resize(old, -1)
        self._resize(new, +1)
        return actual, old

    def revert(self) -> None:
        owner = self.owner
        for pid, old in reversed(self.undo):
            cur = owner[pid]
            owner[pid] = old
            self._resize(cur, -1)
            self._resize(old, +1)
        self.undo.clear()

    def perform(self, runs) -> bool:
        """Repeat passes over ``runs`` [(topic, pids)] until a pass moves nothing."""
        sizes = self.sizes
        owner = self.owner
        nm = self.nm
        prev = self.prev
        performed = False
        passes = 0
        while True:
            modified = False
            passes += 1
            for ti, run in runs:
                if self.hi - self.lo <= 1:
                    break
                cands = self.potential[ti]
                floor = min([sizes[c] for c in cands])
                if max([sizes[o] for o in map(owner.__getitem__, run)]) <= floor + 1:
                    continue
                potential = self.potential_sets[ti] if prev else None
                heap = [sizes[c] * nm + c for c in cands]
                heapq.heapify(heap)
                for pid in run:
                    if self.hi - self.lo <= 1:
                        break
                    o = owner[pid]
                    if prev:
                        pp = prev.get(pid)
                        if pp is not None:
                            po = pp[0]
                            if po in potential and sizes[o] > sizes[po] + 1:
                                moved, src = self._move(pid, po)
                                heapq.heappush(heap, sizes[po] * nm + po)
                                heapq.heappush(heap, sizes[src] * nm + src)
                                performed = modified = True
                                continue
                    while True:
                        k = heap[0]
                        c = k % nm
                        if k // nm == sizes[c]:
                            break
                        heapq.heappop(heap)
                    if sizes[o] > sizes[c] + 1:
                        moved, src = self._move(pid, c)
                        heapq.heappush(heap, sizes[c] * nm + c)
                        heapq.heappush(heap, sizes[src] * nm + src)
                        performed = modified = True
            if not modified:
                if self.exact:
                    self._unswap()
                return performed
            if passes > 1000 and not self.exact:       # Kafka's loop would not have ended (see the class)
                log.error("sticky balancing did not converge after %d passes: balancing on without "
                          "undoing earlier moves", passes)
                self.exact = True

    def _unswap(self) -> None:
        """Give back each pair of a topic's partitions that the exact moves left swapped (one moved
        A->B, another B->A: what Kafka's isSticky forbids); each goes back to the member that had
        it, and every member keeps its size."""
        for per_topic in list(self.movements.by_topic.values()):
            for src, dst in list(per_topic):        # (a pair given back is gone from per_topic)
                while (src, dst) in per_topic and (dst, src) in per_topic:
                    there = next(iter(per_topic[(src, dst)][0]))     # at dst, from src
                    back = next(iter(per_topic[(dst, src)][0]))      # at src, from dst
                    self._move(there, src)          # (exact: the partition itself)
                    self._move(back, dst)


class _PartitionMovements:
    """Kafka's PartitionMovements: per topic, which partitions moved between which consumers,
    so a partition moved A->B is preferred over moving another one of its topic B->A.

    Which partition of a (topic, A->B) set Kafka picks is ``HashSet.iterator().next()``; the set
    is emulated (bucket of ``TopicPartition.hashCode``, then insertion order) to pick the same.
    """

    __slots__ = ("moves", "by_topic", "tp_hash", "seq")

    def __init__(self, tp_hash=None) -> None:
        self.moves: dict[int, tuple[int, int]] = {}
        # topic -> (src, dst) -> [ {pid: insertion seq}, table capacity ]
        self.by_topic: dict[int, dict[tuple[int, int], list]] = {}
        self.tp_hash = tp_hash
        self.seq = 0

    def _remove(self, pid: int, ti: int) -> tuple[int, int]:
        pair = self.moves.pop(pid)
        per_topic = self.by_topic[ti]
        bucket = per_topic[pair]
        del bucket[0][pid]
        if not bucket[0]:
            del per_topic[pair]
            if not per_topic:
                del self.by_topic[ti]
        return pair

    def _add(self, pid: int, ti: int, pair: tuple[int, int]) -> None:
        self.moves[pid] = pair
        bucket = self.by_topic.setdefault(ti, {}).get(pair)
        if bucket is None:
            bucket = self.by_topic[ti][pair] = [{}, 16]
        self.seq += 1
        bucket[0][pid] = self.seq
        if len(bucket[0]) > bucket[1] * 3 // 4:
            bucket[1] *= 2

    def move(self, pid: int, ti: int, old: int, new: int) -> None:
        if pid in self.moves:
            src, _dst = self._remove(pid, ti)
            if src != new:
                self._add(pid, ti, (src, new))
        else:
            self._add(pid, ti, (old, new))

    def actual_partition_to_move(self, pid: int, ti: int, old: int, new: int) -> int:
        per_topic = self.by_topic.get(ti)
        if per_topic is None:
            return pid
        pair = self.moves.get(pid)
        if pair is not None:
            old = pair[0]
        bucket = per_topic.get((new, old))
        if not bucket:
            return pid
        members, cap = bucket
        if len(members) == 1 or self.tp_hash is None:
            return next(iter(members))
        mask = cap - 1
        tp_hash = self.tp_hash

        def java_order(item):
            h = tp_hash(item[0])
            return ((h ^ (h >> 16)) & mask, item[1])
        return min(members.items(), key=java_order)[0]

    def is_sticky(self) -> bool:
        for per_topic in self.by_topic.values():
            for src, dst in per_topic:
                if (dst, src) in per_topic:
                    return False
        return True


def _remove(lst: list[int], pid: int) -> None:
    try:
        lst.remove(pid)
    except ValueError:
        pass


def _partition_then_topic_key(layout: PartitionLayout):
    """Sort key of pids by (partition, topic), Kafka's order for trimming owned partitions."""
    nt = len(layout.topics)
    topic_of = layout.topic_of_array()
    part_of = layout.part_of_array()
    return lambda pid: part_of[pid] * nt + topic_of[pid]


def _to_tp_map(layout: PartitionLayout, members: list[str], by_pid: dict[int, int]) -> dict:
    out = {}
    for pid, mi in by_pid.items():
        ti = layout.topic_of(pid)
        out[TopicPartition(layout.topics[ti], pid - layout.start(ti))] = members[mi]
    return out
