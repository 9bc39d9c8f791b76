"""Rebalance and work-queue analytics: event logs in, Parquet tables and an HTML report out (PySpark).

``groupcoord analyze LOG... --out OUT [--master URL]`` reads logs (a directory with ``events/``, the
typed Parquet log of :mod:`.eventfile`, or ``events.jsonl``, and ``scenario.json`` from the fleet or the
simulator, or an events file of ``groupcoord serve --events``) and writes under OUT the Parquet tables ``rebalances``, ``sessions``, ``groups`` (totals per
group), ``invariants`` (per group and invariant), ``violations`` (counterexamples), ``summary``
(per log) and ``report.html``; when a log has work queues (below), also ``deliveries`` (per
record), ``consumers`` (per client), ``redeliveries``, ``archived`` and ``work`` (per group).
``groupcoord sweep GRID --out OUT`` simulates a parameter grid as Spark tasks and analyses the
cells (:mod:`.sweep`). Every table starts with ``log``, ``cell`` (sweeps), ``scenario``, ``seed``.

Definitions
-----------
**Time**: columns named ``*_ms`` that are instants (``start_ms``, ``end_ms``, ``settle_ms``,
``ts_ms``, ``first_ms``...) are the log's own ``ts_ms``: virtual milliseconds from 0 for
``simulate``, epoch milliseconds for ``fleet`` and ``serve --events``. One log has one time base;
to compare logs, ``start_ms_from_log_start`` (rebalances) counts from the ``ts_ms`` of the log's
first line, and the report shows times from each log's start only.
Events of a group are taken in time order, ties in the order of the log. Member identity is the
fleet's ``client`` name (stable across restarts); coordinator member ids are mapped to it through
the member events (a member id with no member events stands for itself). A member owns what its
last ``client.assigned`` / ``client.revoked`` / ``client.lost`` says it owns; it owns nothing once
stopped, or once the coordinator has removed its member id from the group (until it rejoins).

- A **rebalance** runs from ``rebalance.started`` of its first round to ``rebalance.completed``;
  its **trigger** is the first round's ``reason`` (``trigger_member``: the member that caused it),
  ``duration_ms = end - start``, ``members`` the count at completion, ``generation`` the one it
  completed with. A rebalance still open at the end of the log has outcome ``incomplete``.
- Its **window** lasts until the next rebalance of the group starts (or the log ends).
- **Before**: who owns what when it starts, except that a member whose ``client.assigned`` of the
  previous generation arrives after this rebalance started counts with that assignment (it is
  what the member brings into this rebalance). **After**: for each member of the completed
  generation, what it owns after its ``client.assigned`` of that generation, whenever that comes,
  even after the next rebalance started (the member's SyncGroup answer was on its way: a member
  whose revocation starts the follow-up of a cooperative rebalance does so before the others have
  taken theirs); a member that never takes it (it stopped, was removed, or took a later
  generation's first): what it owns when the window ends; nothing for an outcome ``Empty``.
  Members are mapped to clients with every member event of the log, so a member whose first
  event comes after the rebalance still counts as its client. The rebalance is **settled**
  (``settle_ms``) when every member of the generation has taken its assignment; ``settle_ms``
  may fall after the window's end. Partitions a member revokes in a generation it has not yet
  taken the assignment of belong to that generation's rebalance.
- A **consumer group** (KIP-848, ``group.protocol=consumer``) has a rebalance per group epoch bump
  (``consumer.group_epoch_bumped``; its reason is the **trigger**, ``generation`` the epoch,
  ``rounds`` 1), from the bump to the end of the first millisecond at which every member is
  STABLE (``client.state``) at that epoch or a later one and every partition it is to give an
  owner has one. Members are the running consumer-protocol clients whose member id the
  coordinator has (one it fenced, or that left, is not waited for). A partition a member gives up
  while reconciling is the latest bump's to place; one given up by a member already at the
  latest epoch (closing), or left by a member that stops, the next bump's (the members alone do
  not know of partitions assigned to them but not yet released: the ownership tells); a topic
  none of them owns, given up for a subscription change, counts as unsubscribed. With no member left it ends ``Empty``;
  cut short by a downgrade to a classic group, ``converted``. Bumps come while earlier ones are
  still being reconciled (members pick up a new epoch at their next heartbeat), so rebalances
  overlap; *after* is what the members own at the end, and one that completes while a later
  change is under way has no assignment of its own: its partitions moved, minimum and balance
  are empty (so a group under constant churn has few measured). Partition-ms without an owner
  count per rebalance over its own window (overlapping windows count a moment in each); the
  group's total counts each moment once. Revocations belong to the latest rebalance not yet
  reconciled (one before any bump, e.g. of a member closing, to the next). Logs without member
  events end them when the coordinator finds the group Stable (``group.state_change``).
- **Partitions moved**: partitions of the group whose owner after differs from the owner before,
  "no owner" counting as an owner. A cooperative hand-over therefore moves a partition twice (to no
  owner in the first round, to its new owner in the follow-up), and so does the minimum below.
- **Minimum necessary movement** (``min_moves``): the least number of partitions whose owner must
  change to go from *before* to any balanced assignment of the partitions over the members after
  (each gets floor(P/N) or ceil(P/N)); computed exactly: a remaining member keeps at most its share
  of what it had, so min = P - (sum min(had, floor) + min(P mod N, #members with had > floor)).
  Hence ``partitions_moved >= min_moves`` whenever the after is balanced, and in a cooperative
  first round (which gives up every partition that has to move); it can only be lower when the
  assignor leaves the members unbalanced (``balance`` > 1). Before and after as defined above
  matter here: with an after cut at the next rebalance's start, a cooperative revocation arriving
  just after it was missed and moved fell below the minimum.
- **Partitions revoked / lost**: partitions in ``client.revoked`` / ``client.lost`` events that
  belong to the rebalance: those of a member that has not yet taken this rebalance's assignment;
  one that has (closing, subscription change) belongs to the next rebalance.
- **Time without partitions** (``member_idle_ms``, per member): time in [start, settle) during
  which the member runs and owns nothing. **Balance**: max - min owned count over the members after.
- **Partition-ms without an owner**: the integral over time of the number of the group's
  partitions that no member owns, counted while at least one member of the group runs; per
  rebalance over [start, settle), per group over the whole log. The group's partitions are those
  of its topics in scenario.json plus any partition seen in member events from its first appearance;
  a topic of which the members of a settled generation own nothing is dropped from then on (the
  subscription changed) until a member owns one of its partitions again.
- **Zombie overlaps** (``groups.zombie_overlaps``): partitions given to a member while a client
  the coordinator had removed from the group (expired: a frozen member; or left on a poll stalled
  beyond ``max.poll.interval.ms``) still believed it owned them, until that client's next event
  says what it owns. Expected, not a violation: the removed client is no longer a member (Kafka
  fences its commits by generation). The simulator's summary counts them the same way
  (``zombie_overlaps``, apart from ``ownership_violations``).
- **Sessions**: one per member process (``client.started`` to ``client.stopped``) from member
  events; from the coordinator's ``member.joined`` to its leaving when the log has none (then
  ``source = "coordinator"`` and the ownership columns are empty).
- **Summary** per log: p50/p95 (linear interpolation) and max rebalance duration,
  partition-seconds without an owner, partitions moved and the minimum summed over rebalances,
  their ratio, and the number of invariant violations (the work-queue invariants' included).
  ``events`` counts every event of the log, a producer's and the transaction coordinator's
  (``transaction.*``: no group, read no further) included; a group's ``events`` and
  ``coordinator_events`` count its transactional offset events (``offsets.transactional_commit``,
  ``offsets.transaction_committed``, ``offsets.transaction_aborted``) as ``offset.committed``: the
  model reads only their generation (``generations_grow``), no table counts them as commits. A group's
  ``events`` and ``member_events`` count its record events (``client.records_polled``,
  ``client.batch_processed``, ``client.acknowledged``), which the rebalance model reads no
  further (they are the work-queue tables').

Work queues
-----------
A **work-queue group** is a share group (KIP-932: scenario.json's ``group_type = "share"``, or a
member started with ``protocol`` "share", or one with ``client.acknowledged`` events) or a consumer
group used as one (scenario.json gives it ``job_ms``, or its members poll records:
``client.records_polled``); its **type** is "share" or "consumer". Its records are those produced
(``producer.produced``, offsets ``first``..``last``) to the topics it subscribes to (scenario.json's
``topics`` for the group; without it, the topics its members polled), and any other record its
members polled. A record is (log, group, topic, partition, offset); every record event's runs
``[topic, partition, first, last, ...]`` stand for each offset of first..last. Events are taken in
time order, ties in the order of the log ("before"/"after" below). These tables come from member and
producer events: a coordinator events file has none.

- A **delivery** is a poll that returned the record (``client.records_polled``); its **delivery
  count** is the run's (a share group's broker count, 1 the first time; 0 from a consumer group's
  members); deliveries are numbered 1, 2... in time order. ``deliveries``: how many, ``consumers``:
  distinct clients among them, ``first_delivery_ms`` / ``last_delivery_ms``, ``max_delivery_count``,
  ``duplicates`` = max(deliveries - 1, 0).
- **Acknowledged** (``acknowledged_ms``): a share group's first successful (``error`` null) ACCEPT of
  the record by any member; a consumer group's first ``client.committed`` of its partition whose
  offset is above the record's (a commit acknowledges every offset below it; of commits in time
  order only those above every earlier one cover new offsets). ``latency_ms`` = acknowledged_ms -
  produced_ms (``produced_ms``: its ``producer.produced``; null for a record the log does not show
  produced).
- **Archived** (share groups; ``archived_ms``, table ``archived`` with its ``reason``): not acknowledged
  and either successfully rejected (``reason`` "rejected": a REJECT; "gap": a GAP) by a member, or its
  last delivery had a delivery count at or above the group's **delivery limit** (scenario.json's
  ``delivery_limit``, else the coordinator's ``share.delivery.count.limit`` /
  ``group.share.delivery.count.limit`` in scenario.json, else 5) and that delivery ended without an
  ACCEPT or REJECT (``reason`` "delivery_limit"): at the holder's successful RELEASE of it, when the
  holder's client stopped, or when its lock expired (the delivery + the group's **lock duration**:
  ``lock_duration_ms``, else ``share.record.lock.duration.ms`` / ``group.share.record.lock.duration.ms``,
  else 30 s), whichever came first, within the log. ``outcome``: "acknowledged", else "archived",
  else "unfinished"; archived ``client``: who rejected it, or the last holder.
- A **holder's own acknowledgement** of a delivery is the first successful acknowledgement of the
  record by the client that polled it, after the poll and before that client polls it again. A
  client's **session** runs from ``client.started`` (or its first event, when the log does not show
  it start) to its next ``client.stopped`` (whose ``reason`` it ends with) or ``client.started``
  (ending as a crash), or the log's end (the last event of the log); a delivery's holder **stopped**
  when its session ended after the poll.
- **Redeliveries** (table ``redeliveries``): every delivery after the first, ``from_client`` the
  previous delivery's client, ``to_client`` this one's, ``gap_ms`` between the two polls. ``cause``, for
  a share group, from how the previous delivery ended: "release" (its holder's own acknowledgement was
  a RELEASE, before this delivery and before the holder stopped), "crash" (the holder stopped with
  reason "crash", or started again without a stop, before this delivery and before any own
  acknowledgement), "close" (stopped otherwise: close, fenced, fatal), else "lock_expiry". For a
  consumer group, a record polled again (by anyone) is a duplicate: "crash" / "close" when the
  previous client stopped before this delivery and before the record was acknowledged (committed),
  else "rebalance".
- **Consumers** (per client of a work-queue group): ``sessions`` (client.started), ``crashes``
  (sessions ending in a crash), ``alive_ms`` (its sessions' time, summed), ``busy_ms`` (the sum of its
  ``client.batch_processed`` ``busy_ms``), ``idle_ms`` = alive_ms - busy_ms, ``utilisation`` =
  busy_ms / alive_ms, ``polls`` (polls with records), ``records_polled``, ``records_processed``,
  ``redeliveries_received`` (records polled with a delivery count above 1), share groups'
  ``records_accepted`` (successful ACCEPTs) and ``acknowledgements_failed`` (records in failed
  acknowledgements).
- **Work** (per work-queue group): ``group_type``, ``clients`` (its rows in ``consumers``), ``records``
  (rows of ``deliveries``; of them ``records_produced``) =
  ``acknowledged`` + ``archived`` (``archived_rejected``, ``archived_delivery_limit``, gaps) +
  ``unfinished``; ``deliveries``, ``duplicate_deliveries`` (the sum of
  duplicates), ``redeliveries`` and ``redeliveries_<cause>``; ``latency_p50_ms`` / ``latency_p99_ms``
  (linear interpolation, acknowledged records); ``active_ms`` from the group's first record produced or
  delivered to its last acknowledgement and ``throughput_per_s`` = acknowledged / active seconds;
  ``mean_utilisation`` (the mean of its clients'), ``busy_worker_s`` and ``idle_worker_s`` (summed over
  its clients), ``idle_workers`` (its clients that processed no record: a consumer group's members
  beyond its partition count, say); ``delivery_limit`` and ``lock_duration_ms`` (share groups), ``last_produced_ms`` (the
  last ``producer.produced`` of its topics), ``log_end_ms``, ``all_settled_checked``.
- Work-queue invariants (``share_single_holder``, ``delivery_limit``, ``all_settled``): see
  :mod:`.invariants`.

A log whose scenario.json has no share group, no group with ``job_ms`` and no ``[[produce]]`` is
not read for work queues; when no log has record or producer events, the five work-queue tables
are not written.

Logs with coordinator events only leave every ownership-derived column empty (``member_events``
is false) and the report says so. The invariants are in :mod:`.invariants`.
"""
from .invariants import check_invariants, check_log
from .model import analyze_group, min_moves

__all__ = ["analyze_group", "check_invariants", "check_log", "min_moves"]
