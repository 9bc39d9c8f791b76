"""What the real-time fleet and the virtual-time simulator share: the members of a scenario,
their consumer configs, the timeline's actions, the summary and the output files."""
from __future__ import annotations

import contextlib
import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .eventfile import EVENTS_DIR, EventWriter, write_parts
from .events import MemberEvents, producer_event
from .scenario import Event, GroupSpec, Scenario


@dataclass
class Client:
    """One member of the scenario, across its restarts."""
    name: str                      # "<group>/m<index>"
    group: str
    index: int
    spec: GroupSpec
    recorder: MemberEvents
    topics: list[str] = field(default_factory=list)
    alive: bool = False
    handle: object = None          # the driver's running member (None while down)
    generation: int = 0            # bumped per start: stale scheduled work checks it

    @property
    def instance_id(self) -> str | None:
        return f"{self.group}-m{self.index}" if self.spec.static else None


def client_name(group: str, index: int) -> str:
    return f"{group}/m{index:03d}"


def consumer_config(client: Client, bootstrap: str = "sim:9092") -> dict:
    """Kafka consumer configs of a scenario member."""
    s = client.spec
    cfg = {"bootstrap.servers": bootstrap, "group.id": client.group, "client.id": client.name}
    if s.consumer:      # KIP-848: the assignor is the coordinator's, the timeouts are group configs
        cfg["group.protocol"] = "consumer"
        if s.remote_assignor:
            cfg["group.remote.assignor"] = s.remote_assignor
    else:
        cfg.update({"partition.assignment.strategy": list(s.strategy), "session.timeout.ms": s.session_ms,
                    "heartbeat.interval.ms": s.heartbeat_ms})
    cfg.update({"max.poll.interval.ms": s.max_poll_interval_ms, "request.timeout.ms": s.request_timeout_ms,
                # a work queue's application commits itself (sim/work.py), after processing
                "enable.auto.commit": s.auto_commit and not s.work_queue,
                "auto.commit.interval.ms": s.auto_commit_interval_ms, "auto.offset.reset": "earliest",
                "max.poll.records": s.max_poll_records})
    if s.static:
        cfg["group.instance.id"] = client.instance_id
    cfg.update(s.config)
    return cfg


def share_config(client: Client, bootstrap: str = "sim:9092") -> dict:
    """Kafka share consumer configs of a share group's member."""
    s = client.spec
    cfg = {"bootstrap.servers": bootstrap, "group.id": client.group, "client.id": client.name,
           "share.acknowledgement.mode": s.acknowledgement_mode or "implicit",
           "max.poll.interval.ms": s.max_poll_interval_ms, "request.timeout.ms": s.request_timeout_ms,
           "max.poll.records": s.max_poll_records}
    cfg.update(s.config)
    return cfg


def follow(member, recorder: MemberEvents) -> None:
    """A consumer-protocol member's states and epochs into client.state events, from its current
    ones on."""
    member.state_listener = recorder.state
    recorder.state(member.membership.cstate.value, member.membership.epoch)


#: what every share group of a scenario gets, before its own configs: records produced before its
#: members first fetch are theirs too (Kafka's default, latest, would skip them)
SHARE_GROUP_DEFAULTS = {"share.auto.offset.reset": "earliest"}


def group_configs(spec: GroupSpec) -> dict:
    """The group configs a scenario's group gets."""
    return {**SHARE_GROUP_DEFAULTS, **spec.group_configs()} if spec.share else spec.group_configs()


def set_group_configs(service, scenario: Scenario) -> None:
    """The consumer and share groups' configs (session timeout, heartbeat interval, locks...) on an
    in-process coordinator, as ``kafka-configs --entity-type groups --alter`` sets them."""
    for spec in scenario.groups:
        configs = group_configs(spec)
        if configs:
            for gid in spec.group_ids():
                service.alter_group_configs(gid, configs)


class Driver:
    """The timeline logic over abstract primitives; subclasses run members and time.

    Subclasses implement ``now_ms()`` (scenario time), ``at(ms, fn)`` (at scenario time ms), ``start_member(client)``,
    ``stop_member(client, crash)``, ``freeze(client, ms)``, ``stall(client, ms)``,
    ``set_subscription(client, topics)``, ``add_partitions(topic, n)``,
    ``move_coordinator(group, node)``, ``node_down(node)``, ``node_up(node)`` and
    ``net_partition(client, ms)``.
    """

    mode = ""
    # slots, for the simulator's sake (see Simulator.__slots__); a subclass may have a __dict__
    __slots__ = ("scenario", "seed", "_picks", "events", "clients", "by_group", "next_index", "topics", "notes",
                 "only", "shard", "cluster_actions", "_produced")

    def __init__(self, scenario: Scenario, seed: int):
        self.scenario = scenario
        self.seed = seed
        self._picks: dict[str, random.Random] = {}      # per group: a group's picks are its own
        self.events: list[dict] = []
        self.clients: dict[str, Client] = {}
        self.by_group: dict[str, list[Client]] = {}
        self.next_index: dict[str, int] = {}
        self.topics: dict[str, int] = dict(scenario.topics)
        self.notes: list[str] = []             # what could not be done (printed in the summary)
        self.only: set[str] | None = None      # run only these groups (a shard of the scenario)
        # run only the members whose index is i mod n (a shard of the members, see owns()): the
        # others are followed as the timeline says (alive or not, for its picks) but never run
        self.shard: tuple[int, int] | None = None
        # whether this driver does the cluster-wide actions (add_partitions, move_coordinator,
        # node_down, node_up): one of the shards of a scenario does them, the others do not
        self.cluster_actions = True
        self._produced: dict[int, int] = {}    # [[produce]] index -> records produced (round robin)

    # ---- to implement --------------------------------------------------------------
    def now_ms(self) -> int: raise NotImplementedError        # scenario time (ms since the start)
    def ts_ms(self) -> int: return self.now_ms()               # the clock of the events
    def at(self, ms: int, fn: Callable[[], None]) -> None: raise NotImplementedError

    # ---- setting up --------------------------------------------------------------------
    def owns(self, c: Client) -> bool:
        """Whether this driver runs the client (with a shard (i, n): its index is i mod n)."""
        shard = self.shard
        return shard is None or c.index % shard[1] == shard[0]

    def owned_clients(self) -> list[Client]:
        return [c for c in self.clients.values() if self.owns(c)]

    def _new_client(self, group: str, spec: GroupSpec) -> Client:
        idx = self.next_index.get(group, 0)
        self.next_index[group] = idx + 1
        name = client_name(group, idx)
        if spec.share:
            strategy, protocol = [], "share"
        elif spec.consumer:
            strategy, protocol = [spec.remote_assignor] if spec.remote_assignor else [], "consumer"
        else:
            strategy, protocol = spec.strategy, spec.protocol
        rec = MemberEvents(self.events.append, self.ts_ms, group, name, strategy, protocol,
                           f"{group}-m{idx}" if spec.static else None)
        c = Client(name, group, idx, spec, rec, list(spec.topics))
        self.clients[name] = c
        self.by_group.setdefault(group, []).append(c)
        return c

    def plan(self) -> None:
        """Schedule the initial members and the timeline."""
        for spec in self.scenario.groups:
            for group in spec.group_ids():
                if self.only is not None and group not in self.only:
                    continue
                for i in range(spec.members):
                    c = self._new_client(group, spec)
                    self.at(i * spec.join_interval_ms, lambda c=c: self._start(c))
        for ev in self.scenario.events:
            self.at(ev.at_ms, lambda ev=ev: self.apply(ev))
        duration = self.scenario.duration_ms
        for i, spec in enumerate(self.scenario.produce):
            requests = spec.requests(duration)
            first = next(requests, None)
            if first is not None:
                self.at(first[0], lambda i=i, spec=spec, r=first, rest=requests: self._produce(i, spec, r, rest))

    # ---- producers ---------------------------------------------------------------------------
    def _produce(self, i: int, spec, request: tuple[int, int], rest) -> None:
        """One produce request of [[produce]] entry i (its records round robin over the topic's
        partitions now), then the next one is scheduled."""
        _, count = request
        n = self._produced.get(i, 0)
        self._produced[i] = n + count
        partitions = self.topics[spec.topic]
        per: dict[int, int] = {}
        for k in range(n, n + count):
            per[k % partitions] = per.get(k % partitions, 0) + 1
        for partition, k in sorted(per.items()):
            self.produce(f"{spec.topic}/p{i}", spec.topic, partition, k)
        nxt = next(rest, None)
        if nxt is not None:
            self.at(nxt[0], lambda: self._produce(i, spec, nxt, rest))

    def produce(self, producer: str, topic: str, partition: int, count: int) -> None:
        """Append count records to the partition (the subclass: then :meth:`produced`)."""
        raise NotImplementedError

    def emits_producers(self) -> bool:
        """Whether this driver writes the producer events: one of a scenario's shards does (each
        shard's cluster gets the records, as its groups read them)."""
        return self.only is None or self.scenario.group_ids()[0] in self.only

    def produced(self, producer: str, topic: str, partition: int, first: int, last: int) -> None:
        if self.emits_producers():
            self.events.append(producer_event(self.ts_ms(), producer, topic, partition, first, last))

    # ---- the timeline --------------------------------------------------------------------
    def _groups_of(self, ev: Event) -> list[str]:
        name = ev.params.get("group")
        if name is None:
            groups = self.scenario.group_ids()
        else:
            groups = next((spec.group_ids() for spec in self.scenario.groups if name == spec.name), [name])
        return groups if self.only is None else [g for g in groups if g in self.only]

    def _select(self, ev: Event, group: str) -> list[Client]:
        live = [c for c in self.by_group.get(group, []) if c.alive]
        if "members" in ev.params:
            wanted = set(ev.params["members"])
            return [c for c in live if c.index in wanted]
        if "count" in ev.params:
            n = min(ev.params["count"], len(live))
            rng = self._picks.get(group)
            if rng is None:
                rng = self._picks[group] = random.Random(f"{self.seed}/picks/{group}")
            return sorted(rng.sample(live, n), key=lambda c: c.index)
        return live

    def apply(self, ev: Event) -> None:
        p = ev.params
        a = ev.action
        if a == "add_partitions":
            if p["partitions"] > self.topics[p["topic"]]:
                self.topics[p["topic"]] = p["partitions"]
                if self.cluster_actions:
                    self.add_partitions(p["topic"], p["partitions"])
            return
        if a in ("node_down", "node_up"):
            if self.cluster_actions:
                (self.node_down if a == "node_down" else self.node_up)(p["node"])
            return
        if a == "move_coordinator":
            if self.cluster_actions:
                self.move_coordinator(p["group"], p.get("node"))
            return
        now = self.now_ms()
        for group in self._groups_of(ev):
            if a == "join":
                spec = self.scenario.spec_of(group)
                for i in range(p["count"]):
                    c = self._new_client(group, spec)
                    self.at(now + i * p.get("interval_ms", 0), lambda c=c: self._start(c))
                continue
            chosen = self._select(ev, group)
            for i, c in enumerate(chosen):
                if a == "restart":
                    t = now + i * p.get("interval_ms", 0)
                    self.at(t, lambda c=c: self._restart(c, p.get("down_ms", 0)))
                elif a == "crash":
                    self._stop(c, crash=True)
                    if "restart_after_ms" in p:
                        self.at(now + p["restart_after_ms"], lambda c=c: self._start(c))
                elif a == "leave":
                    self._stop(c, crash=False)
                elif a == "slow":
                    (self.freeze if p["kind"] == "heartbeat" else self.stall)(c, p["duration_ms"])
                elif a == "subscribe":
                    c.topics = list(p["topics"])
                    self.set_subscription(c, c.topics)
                elif a == "network_partition":
                    self.net_partition(c, p["duration_ms"])

    def _start(self, c: Client) -> None:
        if c.alive:
            return
        c.alive = True
        c.generation += 1
        if self.owns(c):
            self.start_member(c)

    def _stop(self, c: Client, crash: bool) -> None:
        if not c.alive:
            return
        c.alive = False
        if self.owns(c):
            self.stop_member(c, crash)

    def _restart(self, c: Client, down_ms: int) -> None:
        if not c.alive:
            return
        self._stop(c, crash=False)
        self.at(self.now_ms() + down_ms, lambda: self._start(c))

    # ---- output ----------------------------------------------------------------------------------
    def resolved(self) -> dict:
        d = self.scenario.to_dict()
        d["seed"] = self.seed
        d["mode"] = self.mode
        d["group_ids"] = self.scenario.group_ids()
        return d


def sorted_events(events: list[dict]) -> list[dict]:
    """By ts_ms, then order of occurrence (a stable sort)."""
    return sorted(events, key=lambda e: e["ts_ms"])


#: How the event log is written: "parquet" (``events/``, typed columns: :mod:`.eventfile`), "jsonl"
#: (``events.jsonl``, one JSON object per line) or "both".
EVENT_FORMATS = ("parquet", "jsonl", "both")


class RunOutput:
    """A run's files in out_dir, its events given one by one in the log's order (:meth:`add`): the
    event log (``event_format``, :data:`EVENT_FORMATS`; a log of the other format left there by an
    earlier run is removed), then at :meth:`close` scenario.json and summary.json."""

    def __init__(self, out_dir, event_format: str = "jsonl") -> None:
        if event_format not in EVENT_FORMATS:
            raise ValueError(f"event format {event_format!r}: one of {', '.join(EVENT_FORMATS)}")
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self._lines = None
        if event_format in ("jsonl", "both"):
            self._lines = open(self.out / "events.jsonl", "w", encoding="utf-8")
        else:
            (self.out / "events.jsonl").unlink(missing_ok=True)
        self._columns = EventWriter(self.out) if event_format in ("parquet", "both") else None
        self._parts = None

    def add(self, e: dict) -> None:
        self.count += 1
        if self._lines is not None:
            self._lines.write(json.dumps(e, separators=(",", ":"), default=str))
            self._lines.write("\n")
        if self._columns is not None:
            self._columns.add(e)

    def add_parts(self, parts: list, keys: list) -> None:
        """The log given as the columns of its shards instead of event by event (Parquet only: see
        :func:`~.eventfile.write_parts`), written at :meth:`close`."""
        if self._lines is not None or self._columns is None:
            raise ValueError("the columns of shards make the Parquet log only")
        self._parts = (parts, keys)
        self.count = sum(map(len, keys))

    def abort(self) -> None:
        """The run failed: the files open are closed (what is written stays)."""
        if self._lines is not None:
            self._lines.close()

    def close(self, scenario_doc: dict, summary: dict | None) -> None:
        out = self.out
        if self._lines is not None:
            self._lines.close()
        elif not self.count:
            (out / "events.jsonl").write_text("")   # a log without events: an empty events.jsonl whatever
            # the format (a Parquet file has rows)
        if self._parts is not None:
            parts, self._parts = self._parts, None
            write_parts(self.out, *parts)
        elif self._columns is not None:
            self._columns.close()
        elif (out / EVENTS_DIR).is_dir():
            for old in (out / EVENTS_DIR).glob("*.parquet"):
                old.unlink()
            with contextlib.suppress(OSError):         # (left when it holds anything else)
                (out / EVENTS_DIR).rmdir()
        (out / "scenario.json").write_text(json.dumps(scenario_doc, indent=2, sort_keys=True) + "\n")
        if summary is not None:
            (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def write_outputs(out_dir, events, scenario_doc: dict, summary: dict | None,
                  event_format: str = "jsonl") -> None:
    """The run's files in out_dir (:class:`RunOutput`) of its events, in the log's order."""
    output = RunOutput(out_dir, event_format)
    try:
        for e in events:
            output.add(e)
    except BaseException:
        output.abort()
        raise
    output.close(scenario_doc, summary)


_WORK_EVENTS = frozenset(("client.records_polled", "client.batch_processed", "client.acknowledged"))


def _count_work(g: dict, kind: str, e: dict) -> None:
    """A work queue's counts (``work`` in its summary): records polled (redelivered: a share group's
    with a delivery count above 1), processed, acknowledged (ACCEPT, REJECT, RELEASE answered without
    an error) and failed acknowledgements."""
    w = g.get("work")
    if w is None:
        w = g["work"] = {"polls": 0, "records_polled": 0, "records_redelivered": 0, "records_processed": 0,
                         "busy_ms": 0, "accepted": 0, "rejected": 0, "released": 0, "acknowledgements_failed": 0}
    if kind == "client.records_polled":
        w["polls"] += 1
        for _, _, first, last, count in e["records"]:
            w["records_polled"] += last - first + 1
            if count > 1:
                w["records_redelivered"] += last - first + 1
    elif kind == "client.batch_processed":
        w["records_processed"] += sum(last - first + 1 for _, _, first, last in e["records"])
        w["busy_ms"] += e["busy_ms"]
    else:
        for _, _, first, last, kind_ in e["records"]:
            n = last - first + 1
            if e["error"] is not None:
                w["acknowledgements_failed"] += n
            elif kind_ in ("ACCEPT", "REJECT", "RELEASE"):
                w[{"ACCEPT": "accepted", "REJECT": "rejected", "RELEASE": "released"}[kind_]] += n


def summaries():
    """Per group: coordinator rebalances (a consumer group's: from an epoch bump to the group's next
    Stable or Empty at the coordinator, the bumps meanwhile included; ``analyze`` counts one per
    bump, each until its members have caught up), final generation and state, member-side assignments,
    moved partitions (assigned to a client other than its previous owner), commits, stops;
    ownership violations (a partition assigned while another client that is still a member of the
    group owns it); and zombie overlaps, which are expected, not violations: a partition assigned
    while a client the coordinator has removed from the group (expired, say: a frozen member; or
    left on a stalled poll) still
    believes it owns it, until that client finds out (its partitions are then lost).

    A generator: send it the log's events, a list at a time in the log's order, then None: it
    yields the summary (:func:`summarize`: of a whole log at once)."""
    groups: dict[str, dict] = defaultdict(lambda: {
        "rebalances": 0, "rebalance_ms_total": 0, "rebalance_ms_max": 0, "generation": -1, "state": None,
        "members": 0, "clients_started": 0, "assigned_callbacks": 0, "moved_partitions": 0,
        "revoked_partitions": 0, "lost_partitions": 0, "commits": 0, "stops": Counter(),
        "expired": 0, "ownership_violations": 0, "zombie_overlaps": 0})
    owner: dict[tuple, str] = {}                 # (group, topic, partition) -> client
    owned: dict[str, set] = defaultdict(set)     # client -> {(topic, p)}
    last_owner: dict[tuple, str] = {}
    member_of: dict[str, str] = {}               # client -> its latest member id
    removed: set[str] = set()                    # member ids the coordinator removed from their group
    bumped: dict[str, int] = {}                  # consumer group -> when its open rebalance began

    def completed(g: dict, duration: int) -> None:
        g["rebalances"] += 1
        g["rebalance_ms_total"] += duration
        g["rebalance_ms_max"] = max(g["rebalance_ms_max"], duration)

    while (events := (yield)) is not None:
        for e in events:
            kind = e["event"]
            if kind == "producer.produced":
                continue
            g = groups[e["group"]]
            if kind in _WORK_EVENTS:
                _count_work(g, kind, e)
                continue
            if not kind.startswith("client."):
                g["generation"] = e["generation"]
                g["state"] = e["state"]
                g["members"] = e["members"]
                if kind == "rebalance.completed":
                    completed(g, e["duration_ms"])
                elif kind == "consumer.group_epoch_bumped":
                    # a consumer group's rebalance: from an epoch bump to the group's next Stable
                    bumped.setdefault(e["group"], e["ts_ms"])
                elif kind == "group.state_change" and e["state_to"] in ("Stable", "Empty") and e["group"] in bumped:
                    completed(g, e["ts_ms"] - bumped.pop(e["group"]))
                elif kind in ("member.expired", "member.removed", "consumer.member_fenced"):
                    g["expired"] += kind != "member.removed"
                    removed.add(e.get("member"))
                elif kind in ("member.replaced", "consumer.member_replaced"):
                    removed.add(e.get("old_member"))
                elif kind in ("member.left", "consumer.member_left") and not e.get("pending") and not e.get("static"):
                    removed.add(e.get("member"))      # e.g. its poll stalled beyond max.poll.interval.ms
                continue
            client = e["client"]
            if e.get("member"):
                member_of[client] = e["member"]
            if kind == "client.started":
                g["clients_started"] += 1
            elif kind == "client.assigned":
                g["assigned_callbacks"] += 1
                for t, p in e["partitions"]:
                    key = (e["group"], t, p)
                    holder = owner.get(key)
                    if holder is not None and holder != client:
                        if member_of.get(holder) in removed:
                            g["zombie_overlaps"] += 1     # the holder is no longer a member
                        else:
                            g["ownership_violations"] += 1
                    prev = last_owner.get(key)
                    if prev is not None and prev != client:
                        g["moved_partitions"] += 1
                    owner[key] = last_owner[key] = client
                    owned[client].add((t, p))
            elif kind in ("client.revoked", "client.lost"):
                g["revoked_partitions" if kind == "client.revoked" else "lost_partitions"] += len(e["partitions"])
                for t, p in e["partitions"]:
                    key = (e["group"], t, p)
                    if owner.get(key) == client:
                        del owner[key]
                    owned[client].discard((t, p))
            elif kind == "client.committed":
                g["commits"] += 1
            elif kind == "client.stopped":
                g["stops"][e["reason"]] += 1
                for t, p in owned.pop(client, set()):
                    key = (e["group"], t, p)
                    if owner.get(key) == client:
                        del owner[key]
    out = {}
    for name in sorted(groups):
        g = groups[name]
        g["stops"] = dict(sorted(g["stops"].items()))
        out[name] = g
    yield out


def summarize(events) -> dict:
    """The summary of a whole log (:func:`summaries`)."""
    summary = summaries()
    next(summary)
    summary.send(events)
    return summary.send(None)
