"""Keyed timers driven from outside (sans-I/O).

The core schedules callbacks by key at absolute deadlines (milliseconds of the
injected clock); scheduling a key again replaces its timer, as Kafka's timer keys
do. A driver asks :meth:`Timers.next_deadline` when to wake up and calls
:meth:`Timers.advance` with the current time; due callbacks run in deadline order,
ties in the order of their keys' last :meth:`Timers.schedule` calls. That order
depends only on the calls made, not on when the heap was last tidied, so timers of
unrelated keys (two groups) never change each other's order (the sharded simulator
relies on it).

Pushing a key further into the future (a heartbeat re-arming a session timer) costs
an attribute update, not a heap push: the heap item stays where it is and is moved
to the real deadline only when its old deadline comes (so next_deadline() may be early).
"""
from __future__ import annotations

import heapq
import itertools
from typing import Callable, Hashable


class _Entry:
    __slots__ = ("deadline", "seq", "callback", "queued_at", "queued_seq")

    def __init__(self, deadline: int, seq: int, callback: Callable[[], None]):
        self.deadline = deadline
        self.seq = seq                 # order among equal deadlines: the last schedule() call
        self.callback = callback
        self.queued_at = deadline      # the deadline of this entry's heap item
        self.queued_seq = seq          # and its seq (identifies the live heap item)


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, _Entry] = {}
        self._seq = itertools.count()
        #: bumped whenever next_deadline() may answer otherwise (a driver that saw the same
        #: number need not ask again); a timer pushed further on leaves it as it is
        self.changes = 0

    def schedule(self, key: Hashable, deadline_ms: int, callback: Callable[[], None]) -> None:
        entry = self._live.get(key)
        seq = next(self._seq)
        if entry is not None and deadline_ms >= entry.queued_at:
            entry.deadline = deadline_ms
            entry.seq = seq
            entry.callback = callback
            return
        self._live[key] = _Entry(deadline_ms, seq, callback)
        heapq.heappush(self._heap, (deadline_ms, seq, key))
        self.changes += 1

    def cancel(self, key: Hashable) -> bool:
        if self._live.pop(key, None) is None:
            return False
        self.changes += 1
        return True

    def is_scheduled(self, key: Hashable) -> bool:
        return key in self._live

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry.deadline

    def __len__(self) -> int:
        return len(self._live)

    def _settle(self) -> None:
        """Drop cancelled heap items and move postponed ones to their real deadline."""
        heap, live = self._heap, self._live
        while heap:
            queued, seq, key = heap[0]
            entry = live.get(key)
            if entry is None or entry.queued_seq != seq:
                heapq.heappop(heap)
            elif entry.seq != seq:
                entry.queued_at, entry.queued_seq = entry.deadline, entry.seq
                heapq.heapreplace(heap, (entry.deadline, entry.seq, key))
            else:
                return

    def next_deadline(self) -> int | None:
        """When to call :meth:`advance` next: no timer is due before it. It may come early: a
        postponed timer is moved to its real deadline only when this time is reached (a session
        timer that every heartbeat pushes on costs one heap move per session timeout, not one per
        heartbeat), and that call of advance() then runs nothing."""
        heap, live = self._heap, self._live
        while heap:
            _, seq, key = heap[0]
            entry = live.get(key)
            if entry is not None and entry.queued_seq == seq:
                return heap[0][0]
            heapq.heappop(heap)               # cancelled or replaced
        return None

    def advance(self, now_ms: int) -> int:
        """Run every callback due at or before now_ms; returns how many ran."""
        fired = 0
        heap, live = self._heap, self._live
        self.changes += 1
        while True:
            self._settle()
            if not heap or heap[0][0] > now_ms:
                return fired
            _, _, key = heapq.heappop(heap)
            entry = live.pop(key)
            fired += 1
            entry.callback()
