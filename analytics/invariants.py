"""Invariant checks over any event log, without Spark.

- ``single_owner``: no partition owned by two members at once (cooperative hand-overs included);
  ownership comes from the members' assigned/revoked/lost events; a stopped member owns nothing,
  nor does one the coordinator removed from the group (expired, say) until it rejoins.
- ``all_owned_when_stable``: once every member of a Stable generation has taken its assignment
  (a consumer group: whenever a rebalance completes, at every member's STABLE),
  each partition of the group's topics is owned by one of them (a generation in which a member
  revoked partitions is a cooperative first round: its follow-up rebalance is checked instead; a
  topic of which they own nothing at all counts as unsubscribed).
- ``generations_grow``: the coordinator's generation (a consumer group's epoch) never goes down
  within a group (a deleted group starts again), each join phase ends with a higher generation,
  and no member's generation (member epoch) goes down; a consumer- or share-protocol member's epoch 0
  (joining again) is outside, as a classic member's -1.
- ``commits_kept``: the acknowledged offset of a partition never goes back (unless offsets were
  deleted or expired, or the group was deleted, in between).

Ownership invariants need member events; on a coordinator events file they are "skipped".

Work queues (share groups, consumer groups with ``job_ms``) have three more, checked by the Spark job
(``groupcoord analyze``, :mod:`.share`: they need every record's deliveries, exploded from the
runs of offsets) into the same ``invariants`` and ``violations`` tables, one row per work-queue
group and invariant that applies to it:

- ``share_single_holder`` (share groups): each record's deliveries, in time order, have strictly
  increasing delivery counts. A record handed out twice from one delivery count (a copy of a
  delivery, or a count not kept) shows the same count or a lower one. What it does not see: a
  broker that increments the count on a wrong hand-out too (a record delivered again after it was
  accepted) passes it. Checked: every delivery; counterexample: the delivery, the one before it
  (client, count, time).
- ``delivery_limit`` (share groups): no delivery count above the group's delivery limit
  (scenario.json's ``delivery_limit``, else the coordinator's ``share.delivery.count.limit`` /
  ``group.share.delivery.count.limit`` there, else Kafka's 5). Checked: every delivery.
- ``all_settled`` (every work queue): each record produced to the group's topics ends
  acknowledged or archived. Only when the group's producers stopped early enough: the log's end is
  at least the group's grace (a share group's lock duration, scenario.json's ``lock_duration_ms``,
  else the coordinator's ``share.record.lock.duration.ms`` / ``group.share.record.lock.duration.ms``,
  else 30 s; a consumer group's session timeout, else 45 s) + 10 s after the last
  ``producer.produced`` of its topics; otherwise it is "skipped" (the ``work`` table still counts
  the unfinished records). Checked: every record produced; counterexample: the record, its
  deliveries, last client and delivery.

A work-queue invariant with nothing to check (no deliveries, no producer) is "skipped" too.
:func:`check_invariants` here (no Spark) checks the rebalance invariants only; events without a
group (a producer's) are not a group's.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from .model import INVARIANTS, INVARIANT_TITLES, MEMBER_INVARIANTS, analyze_group, group_partitions
from .share import WORK_INVARIANTS

__all__ = ["INVARIANTS", "INVARIANT_TITLES", "MEMBER_INVARIANTS", "WORK_INVARIANTS", "check_invariants",
           "check_log"]


def check_invariants(events, scenario: dict | None = None) -> dict:
    """Check the invariants over events (dicts; sorted here by ``ts_ms``, ties kept in order).

    Returns ``{invariant: {"status": "pass" | "fail" | "skipped", "checked": n, "failed": n,
    "counterexamples": [{"group", "invariant", "ts_ms", "detail"}, ...]}}``; ``scenario`` (the
    scenario.json dict) gives each group's partitions.
    """
    by_group = defaultdict(list)
    for ev in sorted(events, key=lambda e: e["ts_ms"]):
        if ev.get("group") is not None:        # a producer's events have none
            by_group[ev["group"]].append(ev)
    result = {name: {"status": "skipped", "checked": 0, "failed": 0, "counterexamples": []} for name in INVARIANTS}
    for group, evs in sorted(by_group.items()):
        inv = analyze_group(group, evs, group_partitions(scenario, group))["invariants"]
        for name in INVARIANTS:
            r = result[name]
            r["checked"] += inv["checked"][name]
            r["failed"] += inv["failed"][name]
            if inv["status"][name] != "skipped" and r["status"] == "skipped":
                r["status"] = "pass"
            if inv["failed"][name]:
                r["status"] = "fail"
        for ex in inv["examples"]:
            result[ex["invariant"]]["counterexamples"].append(ex)
    return result


def check_log(path) -> dict:
    """:func:`check_invariants` of a log directory (events/ or events.jsonl, scenario.json) or events file."""
    from . import eventfile
    path = Path(path)
    scenario = None
    if path.is_dir():
        if (path / "scenario.json").is_file():
            scenario = json.loads((path / "scenario.json").read_text(encoding="utf-8"))
        if eventfile.is_events_dir(path / eventfile.EVENTS_DIR):
            return check_invariants(eventfile.read_events(path / eventfile.EVENTS_DIR), scenario)
        path = path / "events.jsonl"
    with open(path, encoding="utf-8") as f:
        events = [json.loads(line) for line in f if line.strip()]
    return check_invariants(events, scenario)
