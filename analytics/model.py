"""The per-group computation: one pass over a group's events in order (pure Python).

:func:`analyze_group` turns the time-ordered events of one group into rebalance rows, member
sessions, group totals, a compact timeline and invariant results. The definitions are in the
package docstring (:mod:`groupcoord.analytics`). Spark runs this once per group.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

OWNERSHIP_EVENTS = ("client.assigned", "client.revoked", "client.lost")

INVARIANTS = ("single_owner", "all_owned_when_stable", "generations_grow", "commits_kept")
INVARIANT_TITLES = {
    "single_owner": "no partition owned by two members at once",
    "all_owned_when_stable": "every partition owned once the group is Stable",
    "generations_grow": "generations only grow",
    "commits_kept": "no acknowledged commit lost",
    # work queues (:mod:`.share`)
    "share_single_holder": "no share-group record held by two consumers at once",
    "all_settled": "every record produced acknowledged or archived",
    "delivery_limit": "no delivery beyond the delivery limit",
}
#: Invariants that need member events.
MEMBER_INVARIANTS = ("single_owner", "all_owned_when_stable", "commits_kept")
#: Counterexamples kept per invariant and group (all are counted).
MAX_COUNTEREXAMPLES = 20
#: A run of commits given as one event at its first commit, with ``RUN`` the number of commits
#: and ``RUN_LAST_TS`` the time of the last: the ``client.committed`` of one client with one member
#: and generation, or the coordinator's ``offset.committed`` of one generation (the DataFrame
#: pipeline sends these after checking that no event among them could tell the difference; it
#: checks their offsets itself). Real events have neither.
RUN = "_commits"
RUN_LAST_TS = "_last_ts_ms"
#: Work-queue member events (:mod:`.share`): counted as member events, otherwise not read here.
RECORD_EVENTS = ("client.records_polled", "client.batch_processed", "client.acknowledged")
#: A group's record events given as one event (``RUN`` of them, the first at ``ts_ms``, the last at
#: ``RUN_LAST_TS``): the DataFrame pipeline counts them in the JVM.
RECORDS_RUN = "_records"
_RECORD_KINDS = frozenset(RECORD_EVENTS + (RECORDS_RUN,))

#: Timeline points kept per group for the report.
MAX_TIMELINE_POINTS = 400


class RunOutOfOrder(Exception):
    """A run of commits that would have to be taken commit by commit: it would start a session,
    or give its client a member id no earlier event gave it."""


def tp_set(pairs) -> frozenset:
    """[[topic, partition], ...] -> frozenset of (topic, partition)."""
    return frozenset((str(t), int(p)) for t, p in pairs)


def group_partitions(scenario: dict | None, group: str) -> frozenset:
    """The partitions of the topics a group subscribes to, from scenario.json (empty if unknown)."""
    if not scenario:
        return frozenset()
    topics = scenario.get("topics") or {}
    if isinstance(topics, list):
        topics = {t["name"]: t["partitions"] for t in topics}
    for g in scenario.get("groups") or []:
        ids = [g["id"]] if "id" in g else _group_ids(g)
        if group in ids:
            return frozenset((t, p) for t in g.get("topics", []) for p in range(int(topics.get(t, 0))))
    return frozenset()


def _group_ids(g: dict) -> list[str]:
    name, count = g.get("name", ""), int(g.get("count", 1))
    if count == 1:
        return [name]
    width = len(str(count - 1))
    return [f"{name}-{i:0{width}d}" for i in range(count)]


def min_moves(before: dict, members: list, universe) -> int:
    """The least number of partitions whose owner must change (no owner counting as an owner)
    to go from ``before`` (client -> owned partitions) to any balanced assignment of
    ``universe`` over ``members``: every member gets floor(P/N) or ceil(P/N) partitions, and a
    member keeps at most its share of what it had."""
    universe = frozenset(universe)
    if not members:
        return sum(len(s & universe) for s in before.values())
    n, total = len(members), len(universe)
    q, r = divmod(total, n)
    had = [len(before.get(m, frozenset()) & universe) for m in members]
    kept = sum(min(h, q) for h in had) + min(r, sum(1 for h in had if h > q))
    return total - kept


class Timeline:
    """A step function of time: (ts, value) change points; value None means 'not there'."""

    __slots__ = ("ts", "values")

    def __init__(self):
        self.ts: list[int] = []
        self.values: list = []

    def set(self, ts: int, value) -> None:
        if self.ts and self.ts[-1] == ts:
            self.values[-1] = value
        elif not self.values or self.values[-1] != value:
            self.ts.append(ts)
            self.values.append(value)

    def integrate(self, a: int, b: int, f) -> int:
        """Sum of f(value) * length over [a, b)."""
        if b <= a or not self.ts:
            return 0
        i = max(bisect_right(self.ts, a) - 1, 0)
        total = 0
        while i < len(self.ts):
            lo = max(self.ts[i], a)
            hi = min(self.ts[i + 1], b) if i + 1 < len(self.ts) else b
            if lo >= b:
                break
            if hi > lo and self.ts[i] <= lo:
                total += f(self.values[i]) * (hi - lo)
            i += 1
        return total


@dataclass
class _Rebalance:
    start_ms: int
    trigger: str | None
    trigger_member: str | None
    client_reason: str | None
    before: dict
    end_ms: int | None = None
    generation: int | None = None
    outcome: str | None = None
    rounds: int = 1
    protocol: str | None = None
    members: int | None = None
    member_ids: frozenset = frozenset()
    after: dict = field(default_factory=dict)  # client -> owned from its client.assigned of the generation
    revoked: int = 0
    lost: int = 0
    revoked_in_generation: bool = False        # a member revoked in this generation: cooperative follow-up
    settle_ms: int | None = None
    window_end: int | None = None
    universe: frozenset = frozenset()
    owned_at_end: dict = field(default_factory=dict)  # client -> owned when the window ends
    index: int = 0                                     # its place among the group's rebalances
    overtaken: bool = False                            # completed while a later one was under way


@dataclass
class _Session:
    client: str
    start_ms: int
    instance_id: str | None = None
    strategy: str | None = None
    protocol: str | None = None
    member_ids: list = field(default_factory=list)
    generations: set = field(default_factory=set)
    assignments: int = 0
    partitions_assigned: int = 0
    partitions_revoked: int = 0
    partitions_lost: int = 0
    commits: int = 0
    max_owned: int = 0
    end_ms: int | None = None
    end_reason: str | None = None


class _Invariants:
    def __init__(self, group: str):
        self.group = group
        self.checked = dict.fromkeys(INVARIANTS, 0)
        self.failed = dict.fromkeys(INVARIANTS, 0)
        self.examples: list[dict] = []
        self._kept = dict.fromkeys(INVARIANTS, 0)

    def check(self, name: str) -> None:
        self.checked[name] += 1

    def fail(self, name: str, ts: int, detail: dict) -> None:
        self.failed[name] += 1
        if self._kept[name] < MAX_COUNTEREXAMPLES:
            self._kept[name] += 1
            self.examples.append({"group": self.group, "invariant": name, "ts_ms": ts, "detail": detail})


def analyze_group(group: str, events: list[dict], partitions=frozenset(), log_start_ms: int | None = None) -> dict:
    """Analyse one group's events, sorted by time then order of occurrence.

    ``partitions``: the partitions of the group's topics (from scenario.json); partitions seen in
    member events are added from their first appearance. ``log_start_ms``: the ``ts_ms`` of the
    log's first event, the origin of ``start_ms_from_log_start`` (default: the group's first
    event). Returns a dict with ``rebalances``,
    ``sessions``, ``group`` (totals), ``timeline`` and ``invariants`` (``status``, ``checked``,
    ``failed`` per invariant, ``examples``).
    """
    return _GroupPass(group, partitions, log_start_ms).run(events)


class _GroupPass:
    def __init__(self, group: str, partitions, log_start_ms: int | None = None):
        self.group = group
        self.log_start_ms = log_start_ms
        self.universe = set(partitions)
        self.declared = frozenset(partitions)
        self.has_members = False
        self.client_of: dict[str, str] = {}       # member id -> client
        self.member_of: dict[str, str] = {}       # client -> its latest member id
        self.owned: dict[str, frozenset] = {}     # time based: a stopped client owns nothing
        self.zombies: dict[str, frozenset] = {}   # removed from the group, still believes it owns these
        self.zombie_overlaps = 0
        self.owners: dict[tuple, set] = {}
        self.n_owned = 0                          # partitions with at least one owner
        self.alive: set[str] = set()
        self.sizes: dict[str, Timeline] = {}      # client -> owned count (None: not running)
        self.unowned = Timeline()                 # partitions without an owner while a client runs
        self.members_tl = Timeline()              # coordinator member count
        self.coord_members: set[str] = set()
        self.coord_sessions: dict[str, dict] = {}
        self.coord_done: list[dict] = []
        self.sessions: dict[str, _Session] = {}
        self.sessions_done: list[_Session] = []
        self.rebalances: list[_Rebalance] = []
        self.current: _Rebalance | None = None    # the latest rebalance (open or completed)
        self.by_generation: dict[int, _Rebalance] = {}   # Stable rebalances by the generation they completed
        self.pending_revoked = 0
        self.pending_lost = 0
        self.inv = _Invariants(group)
        self.last_gen = None
        self.last_join_gen = None
        self.client_gen: dict[str, int] = {}
        self.committed: dict[tuple, tuple] = {}
        self.first_ts = None
        self.last_ts = None
        self.run_last_ts = None
        self.events = 0
        self.member_events = 0
        self.coordinator_events = 0
        # a consumer group (KIP-848): a rebalance per epoch bump, until every member is reconciled
        # at that epoch or a later one (they may overlap)
        self.consumer = False
        # clients whose member plays the consumer protocol, or a share group's (KIP-932): epoch 0 is joining
        self.consumer_clients: set[str] = set()
        self.cstates: dict[str, tuple] = {}       # running consumer-protocol client -> (state, epoch)
        self.open: list[_Rebalance] = []          # consumer rebalances not yet reconciled
        self.cdirty_ts: int | None = None         # a member state changed at this ms: look at self.open
        # partition without an owner -> the index of the rebalance that is to give it one: the
        # latest when a member gives it up reconciling, the next when one leaves or stops
        self.released: dict[tuple, int] = {}
        self.release_next = False

    # ------------------------------------------------------------------ driver
    def run(self, events: list[dict]) -> dict:
        for ev in events:
            ts = ev["ts_ms"]
            if self.first_ts is None:
                self.first_ts = ts
            kind = ev["event"]
            if kind in _RECORD_KINDS:             # counted; the rebalance model does not read them
                n = ev.get(RUN, 1)
                self.events += n
                self.member_events += n
                self.last_ts = ts
                if RUN_LAST_TS in ev and (self.run_last_ts is None or ev[RUN_LAST_TS] > self.run_last_ts):
                    self.run_last_ts = ev[RUN_LAST_TS]
                continue
            if self.cdirty_ts is not None and ts > self.cdirty_ts:
                self._reconciled(self.cdirty_ts)      # the members' states at the end of that ms
            self.last_ts = ts
            n = ev.get(RUN, 1)
            if RUN_LAST_TS in ev and (self.run_last_ts is None or ev[RUN_LAST_TS] > self.run_last_ts):
                self.run_last_ts = ev[RUN_LAST_TS]
            self.events += n
            if kind.startswith("client."):
                self.member_events += n
                self.has_members = True
                self._member_event(ev, kind, ts)
            else:
                self.coordinator_events += n
                self._coordinator_event(ev, kind, ts)
        if self.run_last_ts is not None and self.run_last_ts > self.last_ts:
            self.last_ts = self.run_last_ts     # a run of commits ends the group
        end = self.last_ts if self.last_ts is not None else 0
        if self.cdirty_ts is not None:
            self._reconciled(self.cdirty_ts)
        for r in self.open:                     # consumer rebalances never reconciled
            self._finalize(r, end)
        if self.current is not None and self.current.protocol != "consumer":
            self._finalize(self.current, end)
        for s in self.sessions.values():
            self.sessions_done.append(s)
        for s in self.coord_sessions.values():
            self.coord_done.append(s)
        return self._result(end)

    # ------------------------------------------------------------------ member events
    def _set_owned(self, client: str, new: frozenset, ts: int) -> None:
        old = self.owned.get(client, frozenset())
        if new == old:
            return
        for tp in old - new:
            s = self.owners.get(tp)
            if s:
                s.discard(client)
                if not s and tp in self.universe:
                    self.n_owned -= 1
                    if self.consumer:
                        self.released[tp] = len(self.rebalances) - (not self.release_next)
        for tp in new - old:
            if any(tp in z for c, z in self.zombies.items() if c != client):
                self.zombie_overlaps += 1         # expected: the other one is no longer a member
            holders = self.owners.setdefault(tp, set())
            counted = bool(holders) and tp in self.universe
            self.universe.add(tp)
            self.inv.check("single_owner")
            if holders:
                self.inv.fail("single_owner", ts, {"partition": list(tp), "owners": sorted(holders | {client}),
                                                   "taken_by": client})
            if not counted:
                self.n_owned += 1
            holders.add(client)
            self.released.pop(tp, None)
        self.owned[client] = new
        if client in self.alive:
            self.sizes[client].set(ts, len(new))
        self._mark(ts)

    def _mark(self, ts: int) -> None:
        self.unowned.set(ts, len(self.universe) - self.n_owned if self.alive else None)

    def _member_event(self, ev: dict, kind: str, ts: int) -> None:
        client = ev["client"]
        member = ev.get("member") or ""
        if RUN in ev and (client not in self.sessions or (member and self.member_of.get(client) != member)):
            raise RunOutOfOrder(client)
        if member:
            self.client_of[member] = client
            self.member_of[client] = member
        gen = ev.get("generation", -1)
        if kind == "client.started":
            if ev.get("protocol") in ("consumer", "share"):
                self.consumer_clients.add(client)
            else:
                self.consumer_clients.discard(client)
        # (a consumer- or share-protocol member's epoch 0 is joining again: outside, as a classic -1)
        if gen is not None and gen >= (1 if client in self.consumer_clients else 0):
            self.inv.checked["generations_grow"] += ev.get(RUN, 1)
            prev = self.client_gen.get(client)
            if prev is not None and gen < prev:
                self.inv.fail("generations_grow", ts, {"client": client, "generation": gen, "before": prev})
            self.client_gen[client] = gen
        if kind != "client.committed":
            self.zombies.pop(client, None)        # it says what it owns (or stops): no longer a zombie
        session = self.sessions.get(client)
        if member and session is not None and member not in session.member_ids:
            session.member_ids.append(member)
        if kind == "client.started":
            if session is not None:          # started again without a stop
                session.end_ms, session.end_reason = ts, "restarted"
                self.sessions_done.append(session)
            strategy = ev.get("strategy")
            self.sessions[client] = _Session(client, ts, ev.get("instance_id"),
                                             ",".join(strategy) if isinstance(strategy, list) else strategy,
                                             ev.get("protocol"), [member] if member else [])
            self.alive.add(client)
            self.sizes.setdefault(client, Timeline())
            self._set_owned(client, frozenset(), ts)
            self.sizes[client].set(ts, 0)
            self._mark(ts)
            return
        if session is None:                  # events of a client whose start is not in the log
            session = self.sessions[client] = _Session(client, ts, member_ids=[member] if member else [])
            self.alive.add(client)
            self.sizes.setdefault(client, Timeline()).set(ts, len(self.owned.get(client, ())))
        if kind == "client.state":
            self.cstates[client] = (ev.get("state"), gen if gen is not None else -1)
            if self.open:
                self.cdirty_ts = ts
        elif kind in OWNERSHIP_EVENTS and self.consumer:
            self._consumer_ownership(ev, kind, ts, session, client)
            if self.open:
                self.cdirty_ts = ts
        elif kind in OWNERSHIP_EVENTS:
            parts = tp_set(ev.get("partitions") or [])
            new = tp_set(ev.get("owned") or [])
            # the rebalance that completed this event's generation, even when the next one has
            # started meanwhile (the member's SyncGroup answer was on its way): its assignment
            # is that rebalance's "after", and the "before" of the rebalances started since
            r = self.by_generation.get(gen) if gen is not None and gen >= 0 else None
            if r is not None and (member not in r.member_ids or client in r.after):
                r = None
            if kind == "client.assigned":
                session.assignments += 1
                session.partitions_assigned += len(parts)
                if gen is not None and gen >= 0:
                    session.generations.add(gen)
                self._set_owned(client, new, ts)
                session.max_owned = max(session.max_owned, len(new))
                if r is not None:
                    r.after[client] = new
                    for later in reversed(self.rebalances):
                        if later is r:
                            break
                        if client not in later.after:
                            later.before[client] = new
                    if r.settle_ms is None and self._clients(r) <= set(r.after):
                        r.settle_ms = ts
                        if r is self.current:   # else a later rebalance has changed ownership since
                            self._check_stable(r, ts)
                return
            if r is None:
                r = self.current
            if kind == "client.revoked":
                session.partitions_revoked += len(parts)
            else:
                session.partitions_lost += len(parts)
            # a revocation belongs to the rebalance under way for this client (it has not yet taken
            # that rebalance's assignment), else to the next one (closing, subscription change)
            if r is not None and client not in r.after:
                if kind == "client.revoked":
                    r.revoked += len(parts)
                    if r.outcome == "Stable" and gen == r.generation and parts:
                        r.revoked_in_generation = True
                else:
                    r.lost += len(parts)
            elif kind == "client.revoked":
                self.pending_revoked += len(parts)
            else:
                self.pending_lost += len(parts)
            self._set_owned(client, new, ts)
        elif kind == "client.committed":
            session.commits += ev.get(RUN, 1)
            for t, p, off in ev.get("offsets") or []:
                key = (t, int(p))
                self.inv.check("commits_kept")
                prev = self.committed.get(key)
                if prev is not None and off < prev[0]:
                    self.inv.fail("commits_kept", ts, {"partition": [t, int(p)], "offset": off, "client": client,
                                                       "acknowledged_before": prev[0], "by": prev[1],
                                                       "at_ms": prev[2]})
                self.committed[key] = (off, client, ts)
        elif kind == "client.stopped":
            if self.cstates.pop(client, None) is not None and self.open:
                self.cdirty_ts = ts
            session.end_ms, session.end_reason = ts, ev.get("reason")
            self.sessions_done.append(self.sessions.pop(client))
            self.release_next = True                  # for the bump its leave or fencing brings
            self._set_owned(client, frozenset(), ts)
            self.release_next = False
            self.alive.discard(client)
            self.sizes[client].set(ts, None)
            self._mark(ts)

    def _consumer_ownership(self, ev: dict, kind: str, ts: int, session: _Session, client: str) -> None:
        """An ownership event in a consumer group: a revocation belongs to the latest rebalance not
        yet reconciled, else to the next one."""
        parts = tp_set(ev.get("partitions") or [])
        new = tp_set(ev.get("owned") or [])
        r = self.open[-1] if self.open else None
        if kind == "client.assigned":
            session.assignments += 1
            session.partitions_assigned += len(parts)
            gen = ev.get("generation")
            if gen is not None and gen > 0:
                session.generations.add(gen)
            session.max_owned = max(session.max_owned, len(new))
        elif kind == "client.revoked":
            session.partitions_revoked += len(parts)
            if r is not None:
                r.revoked += len(parts)
            else:
                self.pending_revoked += len(parts)
        else:
            session.partitions_lost += len(parts)
            if r is not None:
                r.lost += len(parts)
            else:
                self.pending_lost += len(parts)
        # a member already at the latest bump's epoch gives partitions up for what comes next (it
        # is closing, say); one behind it, reconciling to it
        gen = ev.get("generation")
        latest = self.rebalances[-1].generation if self.rebalances else None
        self.release_next = gen is not None and latest is not None and gen >= latest
        self._set_owned(client, new, ts)
        self.release_next = False

    def _reconciled(self, ts: int) -> None:
        """At the end of ms ``ts``: the consumer rebalances whose epoch every member has reached in
        state STABLE, every partition they are to give an owner having one, are complete (with no
        member: the group is Empty). A partition a member gives up reconciling is the latest
        rebalance's to place; one given up by a member already at the latest epoch (closing), or
        left by a member that stops, the next one's. Members are the running consumer-protocol
        clients whose member id the coordinator has (all running ones in a log without coordinator
        events): one it fenced, or that left, is not waited for. The members alone do not know of
        partitions assigned to them but not yet released by their owner (the coordinator keeps
        those pending): the ownership tells (:meth:`_first_waiting`)."""
        self.cdirty_ts = None
        if self.coordinator_events:
            members = {c: st for c, st in self.cstates.items() if self.member_of.get(c) in self.coord_members}
            if not members and self.coord_members:
                return                  # members without consumer-protocol events (classic ones)
        else:
            members = dict(self.cstates)
        states = members.values()
        if any(state != "STABLE" for state, _ in states):
            return
        block = self._first_waiting(members, ts) if members else None
        epoch = min((e for _, e in states), default=None)
        # complete: reached by every member, no partition it is to give an owner still without
        done = [r for r in self.open if (epoch is None or r.generation <= epoch) and (block is None or r.index < block)]
        if not done:
            return
        self.open = [r for r in self.open if r not in done]
        # the group's members, classic ones (in a mixed group) included: by client where known
        group = ({self.client_of.get(m, m) for m in self.coord_members} if self.coordinator_events
                 else set(members))
        for r in done:
            r.end_ms = r.settle_ms = ts
            r.outcome = "Stable" if group else "Empty"
            r.members = len(group)
            r.member_ids = frozenset(group)        # (clients: _clients maps an unknown id to itself)
            r.after = {c: self.owned.get(c, frozenset()) for c in group}
            # a later change under way: what they own now is no assignment of its own to measure
            r.overtaken = block is not None or r is not self.rebalances[-1]
            self._finalize(r, ts)
        if group and block is None:               # (else partitions are on their way to a later target)
            self._check_stable(done[-1], ts)

    def _first_waiting(self, members: dict, ts: int) -> int | None:
        """The index of the first rebalance that is to give an owner to a partition without one
        (None: every partition has one); a topic none of them owns, given up for a subscription
        change, is dropped from the group first (no longer subscribed)."""
        if self.n_owned >= len(self.universe):
            return None
        held = set()
        for c in members:
            held |= self.owned.get(c, frozenset())
        for c in self.owned:                     # classic members of a mixed group
            if c not in self.cstates and self.member_of.get(c) in self.coord_members:
                held |= self.owned[c]
        missing = self.universe - held
        topics = {t for t, _ in held}
        rebalances = self.rebalances
        # a topic none of them owns, given up for a subscription change: no longer subscribed
        dropped = [tp for tp in missing if tp[0] not in topics and tp in self.released
                   and rebalances[min(self.released[tp], len(rebalances) - 1)].trigger == "subscription_changed"]
        if dropped:
            for tp in dropped:
                self.universe.discard(tp)
                self.released.pop(tp, None)
            missing.difference_update(dropped)
            self._mark(ts)
        if not missing:
            return None
        return min(self.released.get(tp, 0) for tp in missing)   # (never owned: the first's)

    def _check_stable(self, r: _Rebalance, ts: int) -> None:
        """At the moment every member of a Stable generation has taken its assignment."""
        if r.revoked_in_generation:
            return                           # cooperative: the follow-up rebalance assigns the rest
        self.inv.check("all_owned_when_stable")
        held = set()
        for c in self._clients(r):
            held |= self.owned.get(c, frozenset())
        topics = {t for t, _ in held}
        if topics:   # a topic the members own nothing of is no longer subscribed
            dropped = [tp for tp in self.universe if tp[0] not in topics]
            for tp in dropped:
                self.universe.discard(tp)
                if self.owners.get(tp):
                    self.n_owned -= 1
            if dropped:
                self._mark(ts)
        missing = sorted(self.universe - held)
        if missing:
            self.inv.fail("all_owned_when_stable", ts, {"generation": r.generation,
                                                        "unowned": [list(tp) for tp in missing[:50]],
                                                        "count": len(missing)})

    # ------------------------------------------------------------------ coordinator events
    def _coordinator_event(self, ev: dict, kind: str, ts: int) -> None:
        gen = ev.get("generation")
        if gen is not None:
            n = ev.get(RUN, 1)
            self.inv.checked["generations_grow"] += n
            if self.last_gen is not None and gen < self.last_gen:
                for _ in range(n):
                    self.inv.fail("generations_grow", ts, {"event": kind, "generation": gen, "before": self.last_gen})
            self.last_gen = gen if self.last_gen is None else max(gen, self.last_gen)
        if kind.startswith("consumer."):
            self.consumer = True
            self._consumer_event(ev, kind, ts, gen)
        elif kind == "group.created":
            self.consumer = ev.get("cause") in ("consumer_group_heartbeat", "upgrade")
            if ev.get("cause") == "downgrade":
                for r in self.open:                   # the consumer group's, never reconciled
                    r.end_ms = r.settle_ms = ts
                    r.outcome = "converted"
                    self._finalize(r, ts)
                self.open = []
        elif kind == "group.state_change" and self.consumer:
            if ev.get("state_to") in ("Stable", "Empty"):
                self._consumer_completed(ev, ts)
        elif kind == "member.joined":
            self._coord_join(ev["member"], ev, ts)
        elif kind == "member.replaced":
            self._coord_leave(ev.get("old_member"), ts, "replaced")
            self._coord_join(ev["member"], ev, ts)
        elif kind == "member.left":
            if not ev.get("pending"):
                self._coord_leave(ev.get("member"), ts, "left")
        elif kind in ("member.removed", "member.expired"):
            self._coord_leave(ev.get("member"), ts, kind.split(".")[1] + ":" + str(ev.get("reason")))
        elif kind == "group.deleted":
            converted = ev.get("reason") == "converted"   # its members and offsets go to the new one
            if not converted:
                for m in list(self.coord_members):
                    self._coord_leave(m, ts, "group_deleted")
                self.committed.clear()
            self.last_gen = self.last_join_gen = None
            self.by_generation.clear()
            self.client_gen.clear()
        elif kind in ("offsets.expired", "offsets.deleted"):
            self.committed.clear()            # which partitions is not said: forget them all
        elif kind == "rebalance.join_completed":
            if gen is not None:
                if self.last_join_gen is not None and gen <= self.last_join_gen:
                    self.inv.fail("generations_grow", ts, {"event": kind, "generation": gen,
                                                           "before": self.last_join_gen})
                self.last_join_gen = gen
        elif kind == "rebalance.started":
            r = self.current
            if r is not None and r.end_ms is None and (ev.get("round") or 1) > 1:
                r.rounds = ev.get("round")
                return
            if r is not None:
                self._finalize(r, ts)
            r = _Rebalance(ts, ev.get("reason"), ev.get("member"), ev.get("client_reason"), dict(self.owned))
            r.revoked, r.lost = self.pending_revoked, self.pending_lost
            self.pending_revoked = self.pending_lost = 0
            self.current = r
            self.rebalances.append(r)
        elif kind == "rebalance.completed":
            r = self.current
            if r is None or r.end_ms is not None:    # its start is not in the log
                r = _Rebalance(ts - (ev.get("duration_ms") or 0), None, None, None, dict(self.owned))
                self.current = r
                self.rebalances.append(r)
            r.end_ms = ts
            r.generation = gen
            r.outcome = ev.get("outcome")
            r.rounds = ev.get("rounds") or r.rounds
            r.protocol = ev.get("protocol")
            r.members = ev.get("members")
            r.member_ids = frozenset(self.coord_members)
            if r.outcome != "Stable":
                r.settle_ms = ts
            elif gen is not None:
                self.by_generation[gen] = r
        self.members_tl.set(ts, len(self.coord_members))

    def _consumer_event(self, ev: dict, kind: str, ts: int, gen) -> None:
        """A consumer group's member events, and its epoch bumps: each starts a rebalance (its
        trigger: the bump's reason), open until :meth:`_reconciled` finds it complete."""
        if kind == "consumer.member_joined":
            self._coord_join(ev["member"], ev, ts)
        elif kind == "consumer.member_replaced":
            self._coord_leave(ev.get("old_member"), ts, "replaced")
            self._coord_join(ev["member"], ev, ts)
        elif kind == "consumer.member_left":
            if not ev.get("static"):            # a static member keeps its place until its session ends
                self._coord_leave(ev.get("member"), ts, "left")
        elif kind == "consumer.member_fenced":
            self._coord_leave(ev.get("member"), ts, "fenced:" + str(ev.get("reason")))
        elif kind == "consumer.group_epoch_bumped":
            if self.current is not None and self.current.protocol != "consumer":
                self._finalize(self.current, ts)      # the classic group's last (an upgrade)
            r = _Rebalance(ts, ev.get("reason"), ev.get("member"), None, dict(self.owned))
            r.protocol = "consumer"
            r.generation = gen                   # the epoch its members must reach
            r.index = len(self.rebalances)
            r.revoked, r.lost = self.pending_revoked, self.pending_lost
            self.pending_revoked = self.pending_lost = 0
            self.current = r
            self.rebalances.append(r)
            self.open.append(r)
            self.cdirty_ts = ts                       # (with no member left, it ends Empty)

    def _consumer_completed(self, ev: dict, ts: int) -> None:
        """A consumer group without member events in the log: its rebalances complete when the
        coordinator finds every member at the target (Stable), or the group Empty."""
        if self.has_members:
            return
        for r in self.open:
            r.end_ms = r.settle_ms = ts
            r.outcome = ev.get("state_to")
            r.members = ev.get("members")
            r.member_ids = frozenset(self.coord_members)
            self._finalize(r, ts)
        self.open = []

    def _coord_join(self, member: str, ev: dict, ts: int) -> None:
        self.coord_members.add(member)
        self.coord_sessions[member] = {"member": member, "instance_id": ev.get("instance_id"),
                                       "start_ms": ts, "end_ms": None, "end_reason": None,
                                       "client_id": ev.get("client_id")}

    def _coord_leave(self, member, ts: int, reason: str) -> None:
        if member is None:
            return
        client = self.client_of.get(member)
        if client is not None and self.member_of.get(client) == member and self.owned.get(client):
            # out of the group: what it still holds (a frozen member, say) is no longer owned by a
            # member of the group, until it finds out (client.lost) or rejoins: a zombie
            zombie = self.owned[client]
            self._set_owned(client, frozenset(), ts)
            self.zombies[client] = zombie
        self.coord_members.discard(member)
        s = self.coord_sessions.pop(member, None)
        if s is not None:
            s["end_ms"], s["end_reason"] = ts, reason
            self.coord_done.append(s)

    # ------------------------------------------------------------------ results
    def _finalize(self, r: _Rebalance, window_end: int) -> None:
        r.window_end = window_end
        r.universe = frozenset(self.universe)
        if r.outcome == "Stable":           # for the members that never take its assignment
            r.owned_at_end = dict(self.owned)

    def _clients(self, r: _Rebalance) -> set:
        """The members of the rebalance's generation as clients (member id where none is known)."""
        return {self.client_of.get(m, m) for m in r.member_ids}

    def _origin(self) -> int:
        if self.log_start_ms is not None:
            return self.log_start_ms
        return self.first_ts if self.first_ts is not None else 0

    def _rebalance_row(self, r: _Rebalance) -> dict:
        row = {"group": self.group, "generation": r.generation, "trigger": r.trigger,
               "trigger_member": r.trigger_member, "client_reason": r.client_reason,
               "start_ms": r.start_ms, "start_ms_from_log_start": r.start_ms - self._origin(), "end_ms": r.end_ms,
               "duration_ms": r.end_ms - r.start_ms if r.end_ms is not None else None,
               "rounds": r.rounds, "outcome": r.outcome or "incomplete", "protocol": r.protocol,
               "members": r.members, "member_events": self.has_members}
        keys = ("settled", "settle_ms", "partitions_moved", "min_moves", "partitions_revoked",
                "partitions_lost", "member_idle_ms", "max_member_idle_ms", "unowned_partition_ms", "balance")
        if not self.has_members:
            row.update(dict.fromkeys(keys))
            return row
        members = sorted(self._clients(r)) if r.outcome == "Stable" else []
        after = {c: r.after[c] if c in r.after else r.owned_at_end.get(c, frozenset()) for c in members}
        settled = r.settle_ms is not None
        settle = r.settle_ms if settled else r.window_end
        universe = r.universe
        owner_before = {}
        for c, s in r.before.items():
            for tp in s:
                owner_before[tp] = c
        owner_after = {}
        for c, s in after.items():
            for tp in s:
                owner_after[tp] = c
        moved = sum(1 for tp in universe if owner_before.get(tp) != owner_after.get(tp))
        idle = {}
        for c in sorted(set(r.before) | set(after)):
            tl = self.sizes.get(c)
            if tl is not None and (c in after or _at(tl, r.start_ms) is not None
                                   or tl.integrate(r.start_ms, settle, lambda v: v is not None)):
                idle[c] = tl.integrate(r.start_ms, settle, lambda v: 1 if v == 0 else 0)
        sizes = [len(after[c]) for c in members]
        row.update({"settled": settled, "settle_ms": settle, "partitions_moved": moved,
                    "min_moves": min_moves(r.before, members, universe),
                    "partitions_revoked": r.revoked, "partitions_lost": r.lost,
                    "member_idle_ms": idle, "max_member_idle_ms": max(idle.values()) if idle else 0,
                    "unowned_partition_ms": self.unowned.integrate(r.start_ms, settle, lambda v: v or 0),
                    "balance": max(sizes) - min(sizes) if sizes else None})
        if r.overtaken:
            row.update(partitions_moved=None, min_moves=None, balance=None)
        return row

    def _result(self, end: int) -> dict:
        rebalances = [self._rebalance_row(r) for r in self.rebalances]
        sessions = []
        if self.has_members:
            for s in sorted(self.sessions_done, key=lambda s: (s.start_ms, s.client)):
                stop = s.end_ms if s.end_ms is not None else end
                tl = self.sizes.get(s.client)
                idle = tl.integrate(s.start_ms, stop, lambda v: 1 if v == 0 else 0) if tl else 0
                sessions.append({"group": self.group, "source": "client", "client": s.client,
                                 "member": s.member_ids[0] if s.member_ids else None,
                                 "member_ids": list(s.member_ids), "instance_id": s.instance_id,
                                 "strategy": s.strategy, "protocol": s.protocol,
                                 "start_ms": s.start_ms, "end_ms": s.end_ms, "duration_ms": stop - s.start_ms,
                                 "end_reason": s.end_reason, "generations": len(s.generations),
                                 "assignments": s.assignments, "partitions_assigned": s.partitions_assigned,
                                 "partitions_revoked": s.partitions_revoked, "partitions_lost": s.partitions_lost,
                                 "commits": s.commits, "max_owned": s.max_owned,
                                 "time_without_partitions_ms": idle})
        else:
            for s in sorted(self.coord_done, key=lambda s: (s["start_ms"], s["member"])):
                stop = s["end_ms"] if s["end_ms"] is not None else end
                sessions.append({"group": self.group, "source": "coordinator", "client": None,
                                 "member": s["member"], "member_ids": [s["member"]],
                                 "instance_id": s["instance_id"], "strategy": None, "protocol": None,
                                 "start_ms": s["start_ms"], "end_ms": s["end_ms"],
                                 "duration_ms": stop - s["start_ms"], "end_reason": s["end_reason"],
                                 "generations": None, "assignments": None, "partitions_assigned": None,
                                 "partitions_revoked": None, "partitions_lost": None, "commits": None,
                                 "max_owned": None, "time_without_partitions_ms": None})
        status = {}
        for name in INVARIANTS:
            if name in MEMBER_INVARIANTS and not self.has_members:
                status[name] = "skipped"
            else:
                status[name] = "fail" if self.inv.failed[name] else "pass"
        start = self.first_ts if self.first_ts is not None else 0
        unowned_ms = self.unowned.integrate(start, end, lambda v: v or 0) if self.has_members else None
        group = {"group": self.group, "events": self.events, "member_events": self.member_events,
                 "coordinator_events": self.coordinator_events, "first_ms": self.first_ts, "last_ms": self.last_ts,
                 "partitions": len(self.universe) if self.has_members else None,
                 "unowned_partition_ms": unowned_ms, "rebalances": len(rebalances),
                 "zombie_overlaps": self.zombie_overlaps if self.has_members else None}
        return {"rebalances": rebalances, "sessions": sessions, "group": group,
                "timeline": self._timeline(end),
                "invariants": {"status": status, "checked": dict(self.inv.checked),
                               "failed": dict(self.inv.failed), "examples": self.inv.examples}}

    def _timeline(self, end: int) -> list[dict]:
        """(ts, members, unowned partitions) change points, thinned to MAX_TIMELINE_POINTS."""
        points = sorted(set(self.members_tl.ts) | set(self.unowned.ts))
        if len(points) > MAX_TIMELINE_POINTS:
            step = len(points) / MAX_TIMELINE_POINTS
            points = [points[int(i * step)] for i in range(MAX_TIMELINE_POINTS)]
        if points and points[-1] < end:
            points.append(end)
        out = []
        for ts in points:
            out.append({"group": self.group, "ts_ms": ts, "members": _at(self.members_tl, ts) or 0,
                        "unowned": _at(self.unowned, ts) if self.has_members else None})
        return out


def _at(tl: Timeline, ts: int):
    i = bisect_right(tl.ts, ts) - 1
    return tl.values[i] if i >= 0 else None


#: Kafka's default metadata.max.age.ms: members see partitions added to a topic within this long.
METADATA_MAX_AGE_MS = 300000


def expected_notes(scenario: dict | None, zombie_overlaps: int | None) -> list[str]:
    """Why a run shows what looks like a violation but is not (for the report): zombie overlaps,
    and partitions added late (from scenario.json's ``add_partitions`` events)."""
    notes = []
    if zombie_overlaps:
        notes.append(f"{zombie_overlaps} zombie overlap(s): partitions given to a member while a member the "
                     "coordinator had removed from the group (a frozen member expired at its session timeout, "
                     "or one that left when its poll stalled beyond max.poll.interval.ms) still believed it "
                     "owned them. Expected, not a violation: the removed member is a zombie, no longer in the "
                     "group, until it finds out (its partitions are then lost); Kafka fences its commits by "
                     "generation.")
    for ev in (scenario or {}).get("events") or []:
        if ev.get("action") != "add_partitions":
            continue
        ages = {int((g.get("config") or {}).get("metadata.max.age.ms", METADATA_MAX_AGE_MS))
                for g in scenario.get("groups") or []}
        age = " or ".join(f"{a / 1000:g} s" for a in sorted(ages)) or f"{METADATA_MAX_AGE_MS / 1000:g} s"
        at_s = (ev.get("at_ms") or 0) / 1000
        notes.append(f"Topic {ev.get('topic')} grows to {ev.get('partitions')} partitions at {at_s:g} s: members "
                     f"see the new partitions at their next metadata refresh (metadata.max.age.ms: {age}), and "
                     "until then nobody owns them. Expected, not a violation: the analysis counts a new "
                     "partition from the moment a member owns one (the simulator's final check says "
                     "'unsettled: N partitions unowned' when the run ends before that).")
    return notes

