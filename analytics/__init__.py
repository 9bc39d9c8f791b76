"""Rebalance analytics: event logs in, Parquet tables and an HTML report out (PySpark).

``groupcoord analyze LOG... --out OUT [--master URL]`` reads logs (a directory with
``events.jsonl`` and ``scenario.json`` from the fleet, or an events file of ``groupcoord serve
--events``) and writes under OUT the Parquet tables ``rebalances``, ``sessions``, ``groups`` (totals per
group), ``invariants`` (per group and invariant), ``violations`` (counterexamples), ``summary``
(per log) and ``report.html``.
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
  their ratio, and the number of invariant violations.

Logs with coordinator events only leave every ownership-derived column empty (``member_events``
is false) and the report says so. The invariants are in :mod:`.invariants`.
"""
from .invariants import check_invariants, check_log
from .model import analyze_group, min_moves

__all__ = ["analyze_group", "check_invariants", "check_log", "min_moves"]
