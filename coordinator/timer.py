"""Keyed timers driven from outside (sans-I/O).

The core schedules callbacks by key at absolute deadlines (milliseconds of the
injected clock); scheduling a key again replaces its timer, as Kafka's timer keys
do. A driver asks :meth:`Timers.next_deadline` when to wake up and calls
:meth:`Timers.advance` with the current time; due callbacks run in deadline order
(ties in scheduling order).
"""
from __future__ import annotations

import heapq
import itertools
from typing import Callable, Hashable


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int, Callable[[], None]]] = {}
        self._seq = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int, callback: Callable[[], None]) -> None:
        seq = next(self._seq)
        self._live[key] = (deadline_ms, seq, callback)
        heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: Hashable) -> bool:
        return self._live.pop(key, None) is not None

    def is_scheduled(self, key: Hashable) -> bool:
        return key in self._live

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def __len__(self) -> int:
        return len(self._live)

    def _prune(self) -> None:
        heap, live = self._heap, self._live
        while heap:
            deadline, seq, key = heap[0]
            entry = live.get(key)
            if entry is not None and entry[1] == seq:
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._prune()
        return self._heap[0][0] if self._heap else None

    def advance(self, now_ms: int) -> int:
        """Run every callback due at or before now_ms; returns how many ran."""
        fired = 0
        heap, live = self._heap, self._live
        while True:
            self._prune()
            if not heap or heap[0][0] > now_ms:
                return fired
            deadline, seq, key = heapq.heappop(heap)
            _, _, callback = live.pop(key)
            fired += 1
            callback()
