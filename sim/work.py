"""Work queues in a scenario: the producers of ``[[produce]]``, and what a work-queue member's
application does (a group with ``job_ms``, every share group).

The application of a work-queue member polls, processes the records of the poll one after the
other (each for a time drawn from ``job_ms``), then polls again; a poll that finds nothing waits
in the poll until records come. What it acknowledges:

- a share group's member: every record of a poll, ACCEPT (implicit mode: at the next poll;
  explicit mode: each acknowledged when processed, sent at the next poll);
- a consumer group's member: the positions it consumed, by an asynchronous commit after each
  poll's records are processed, or with ``auto_commit`` at the first poll after every
  ``auto_commit_interval_ms`` (Kafka's auto-commit happens inside poll, so it commits what the
  previous polls returned, processed by then). Records of partitions revoked meanwhile are
  processed all the same (the application does not know) and not committed: their new owner
  processes them again.

A ``slow`` event of kind ``poll`` makes the application hang for its ``duration_ms`` (a job that
hangs): the records it holds stay unprocessed meanwhile.
"""
from __future__ import annotations

import math
import random
from typing import Callable

from groupcoord.client.member.share_actions import GAP, RELEASE, REJECT

ACK_NAMES = {GAP: "GAP", 1: "ACCEPT", RELEASE: "RELEASE", REJECT: "REJECT"}


def job_sampler(spec: dict, rng: random.Random) -> Callable[[], int]:
    """A function drawing one record's processing time (whole ms, >= 0) from job_ms."""
    d = spec["dist"]
    if d == "constant":
        ms = max(0, int(round(spec["ms"])))
        return lambda: ms
    if d == "uniform":
        lo, hi = spec["min_ms"], spec["max_ms"]
        return lambda: int(lo + (hi - lo) * rng.random() + 0.5)
    if d == "exponential":
        rate = 1.0 / max(spec["mean_ms"], 1e-9)
        return lambda: int(rng.expovariate(rate) + 0.5)
    if d == "lognormal":
        mu, sigma = math.log(max(spec["median_ms"], 1e-9)), spec["sigma"]
        return lambda: int(rng.lognormvariate(mu, sigma) + 0.5)
    if d == "pareto":
        scale, alpha = spec["scale_ms"], spec["alpha"]
        return lambda: int(scale * rng.paretovariate(alpha) + 0.5)
    raise ValueError(f"unknown job distribution {d!r}")


def runs(items) -> list[list]:
    """[[topic, partition, first, last, *extra], ...] of (topic, partition, offset, *extra) items:
    runs of consecutive offsets of one partition with the same extra values, sorted."""
    out: list[list] = []
    last = None
    for item in sorted(items):
        t, p, o, *extra = item
        if last is not None and last[0] == t and last[1] == p and last[3] == o - 1 and last[4:] == extra:
            last[3] = o
            continue
        last = [t, p, o, o, *extra]
        out.append(last)
    return out


class Work:
    """One running work-queue member's application. ``waiting``: inside a poll that found
    nothing; ``busy_until``: when the records of the last poll are processed (None when not busy);
    ``token``: bumped when the batch's end moves (a stall), so a stale wake-up is told apart."""

    __slots__ = ("share", "explicit", "job", "waiting", "busy_until", "batch", "started", "busy_ms", "token",
                 "auto_commit", "auto_commit_interval_ms", "last_commit", "hang_until", "max_records")

    def __init__(self, spec, rng: random.Random, now: int):
        self.share = spec.share
        self.explicit = spec.acknowledgement_mode == "explicit"
        self.job = job_sampler(spec.job_ms, rng)
        self.waiting = True
        self.busy_until: int | None = None
        self.batch: list = []
        self.started = now
        self.busy_ms = 0
        self.token = 0
        self.auto_commit = spec.auto_commit
        self.auto_commit_interval_ms = spec.auto_commit_interval_ms
        self.last_commit = now
        self.hang_until = -1
        self.max_records = spec.max_poll_records

    def take(self, member, now: int) -> list:
        """The application's poll: the member's records (none: it waits in the poll)."""
        if self.share:
            return member.take_records(now, self.max_records)
        return member.take_records(self.max_records)

    def start_batch(self, records: list, now: int) -> int:
        """Process the records of a poll: when that ends."""
        self.waiting = False
        self.batch = records
        self.started = now
        job = self.job
        self.busy_ms = sum(job() for _ in records)
        self.busy_until = now + self.busy_ms
        self.token += 1
        return self.busy_until

    def end_batch(self, member, now: int) -> list:
        """The records of the poll are processed: what to acknowledge or commit; the application
        polls again. Returns the batch."""
        batch, self.batch = self.batch, []
        self.busy_until = None
        if self.share:
            if self.explicit:
                for r in batch:
                    member.acknowledge(r)
        elif not self.auto_commit:
            member.commit(None, now, sync=False)
            self.last_commit = now
        self.waiting = True
        return batch

    def polled(self, member, now: int) -> None:
        """A poll of the application (the member's poll timer restarts; auto-commit when due)."""
        member.application_poll(now)
        if not self.share and self.auto_commit and now - self.last_commit >= self.auto_commit_interval_ms:
            member.commit(None, now, sync=False)
            self.last_commit = now
