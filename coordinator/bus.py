"""A fan-out of the coordinator's structured events.

The group coordinator reports every event through one ``emit`` callable; the
:class:`EventBus` is that callable for a :class:`~groupcoord.coordinator.service.Service`
and hands each event to every subscriber in order: the structlog logger, an
events file, the metrics, the fault scheduler, live streams of the admin API.
A subscriber that raises is logged and kept; it never breaks the core.
"""
from __future__ import annotations

import itertools
from typing import Callable

import structlog

log = structlog.get_logger("groupcoord.bus")

Subscriber = Callable[[dict], None]


class EventBus:
    def __init__(self) -> None:
        self._subs: dict[int, Subscriber] = {}
        self._ids = itertools.count()
        self.published = 0

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        key = next(self._ids)
        self._subs[key] = fn
        return lambda: self._subs.pop(key, None)

    def __len__(self) -> int:
        return len(self._subs)

    def publish(self, event: dict) -> None:
        self.published += 1
        for fn in list(self._subs.values()):
            try:
                fn(event)
            except Exception:
                log.exception("subscriber_failed", event_type=event.get("event"))

    __call__ = publish
