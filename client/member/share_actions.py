"""What a share consumer hands out beyond the member's actions: its records, with their delivery
counts, the acknowledgement types, and the results of acknowledgements."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .actions import Action, ConsumerRecord

GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4


class AcknowledgeType(enum.IntEnum):
    """Kafka's AcknowledgeType (the wire's AcknowledgeTypes values; GAP is the client's own, for
    offsets no record came for)."""
    ACCEPT = ACCEPT
    RELEASE = RELEASE
    REJECT = REJECT


@dataclass(frozen=True)
class ShareRecord(ConsumerRecord):
    """A record delivered by a share group: ``delivery_count`` is how many times the leader has
    handed it out (1 the first time)."""
    delivery_count: int = 1


@dataclass
class AcknowledgementsCommitted(Action):
    """Acknowledgements answered by a leader (or failed before they could be sent): ``results``
    TP -> (offsets, error or None), as Kafka's AcknowledgementCommitCallback gets them; ``types``
    TP -> {offset: acknowledge type}."""
    results: dict
    types: dict = field(default_factory=dict)


@dataclass
class ShareCommitCompleted(Action):
    """A commit (``ShareMember.commit``) finished: every acknowledgement pending when it was asked
    was answered. ``results``: TP -> (offsets, error or None), as commitSync returns them;
    ``error``: the member failed or closed before."""
    handle: int
    results: dict
    error: Exception | None = None
