"""The floor of the simulator's steady state: what a virtual-time run must do at the least for its
heartbeats and auto-commits if a seed is to give one log whatever the design, written as one loop
with no member, coordinator or driver around it. ``python bench/fleet.py floor`` runs it beside the
simulator over the same scenario and prints both costs per request and their ratio.

Each request is still three items of a ms timing wheel (the member sends it, the coordinator takes
it, the member gets the answer: the coordinator must see the group as it is when the request
arrives), with two latency draws from the client's own random stream (one each way, in the order
the client's requests reach those points: as many draws as the simulator's, not the same ones),
the session deadline kept (45 s), the member's timers moved, and a commit's offsets copied and its
two events (the client's and the coordinator's) made, the cyclic garbage collector off as in the
simulator. Nothing else: no rebalance, no request object, no versions, no errors, every member in
one generation from the start. The groups of a scenario are taken with their members, partitions,
heartbeat (3 s where the coordinator sets it) and auto-commit intervals and poll period, and the
network's latency if uniform (else 1 to 3 ms)."""
from __future__ import annotations

import random
import time

_WHEEL = 1 << 13
_MASK = _WHEEL - 1
_SEND, _HEARTBEAT, _COMMIT, _HEARTBEAT_ANSWER, _COMMIT_ANSWER = range(5)


class _Member:
    __slots__ = ("rng", "group", "name", "heartbeat_at", "commit_at", "positions", "committed", "session_deadline",
                 "interval", "commit_interval", "records", "polled_at", "period",
                 # (kept=True: what a kernel of the steady state keeps to hand a member back exactly)
                 "ids", "wake_at", "hb_rid", "hb_deadline", "commit_rid", "commit_deadline", "quiet_until",
                 "req_at", "resp_at", "settled", "entry", "generation", "coordinator_member")


class _Entry:
    """The coordinator's session timer of a member, as coordinator/timer.py keeps it."""
    __slots__ = ("deadline", "seq", "queued_at")


class _Group:
    __slots__ = ("state", "generation_id", "members")


def _members(sc) -> list[_Member]:
    out = []
    seed = 0
    for spec in sc.groups:
        partitions = [(t, p) for t in spec.topics for p in range(sc.topics.get(t, 1))]
        for group in spec.group_ids():
            for k in range(spec.members):
                m = _Member()
                m.rng = random.Random(seed)
                seed += 1
                m.group, m.name = group, f"{group}-{k}"
                m.interval = spec.heartbeat_ms or 3000
                m.commit_interval = spec.auto_commit_interval_ms
                m.heartbeat_at = m.interval * k // spec.members
                m.commit_at = m.commit_interval * k // spec.members
                m.positions = {tp: 0 for i, tp in enumerate(partitions) if i % spec.members == k}
                m.committed, m.session_deadline = {}, 0
                m.records, m.period, m.polled_at = spec.records_per_poll, spec.processing_ms, 0
                out.append(m)
    return out


def run(sc, kept: bool = False) -> dict:
    """The floor over ``sc``'s duration: {"requests", "events", "items", "cpu_s", "us_per_request"}.
    ``kept``: with the bookkeeping a kernel of the steady state would keep besides, to hand a member
    back to the member's and the coordinator's cores at any ms (see _run_kept)."""
    from groupcoord.sim.simulate import _no_cyclic_gc
    latency = sc.network.latency
    lo, span = (latency["min_ms"], latency["max_ms"] - latency["min_ms"]) if latency["dist"] == "uniform" else (1, 2)
    wheel: list[list] = [[] for _ in range(_WHEEL)]
    log: list[dict] = []
    members = _members(sc)
    if any(max(m.interval, m.commit_interval) >= _WHEEL for m in members) or lo + span >= _WHEEL:
        raise ValueError(f"the floor's wheel holds {_WHEEL} ms: a timer or a latency beyond it")
    with _no_cyclic_gc():
        return (_run_kept if kept else _run)(sc, wheel, log, members, lo, span)


def _run(sc, wheel, log, members, lo, span) -> dict:
    for m in members:
        wheel[min(m.heartbeat_at, m.commit_at) & _MASK].append((_SEND, m, None))
    end = sc.duration_ms
    items = requests = 0
    cpu0 = time.process_time()
    for now in range(end + 1):
        slot = wheel[now & _MASK]
        if not slot:
            continue
        for kind, m, arg in slot:        # (items scheduled for now are appended meanwhile and run too)
            if kind == _SEND:
                polls = (now - m.polled_at) // m.period      # the application's polls since the last look
                if polls and m.records:
                    m.polled_at += polls * m.period
                    step = polls * m.records
                    pos = m.positions
                    for tp in pos:
                        pos[tp] += step
                if now >= m.heartbeat_at:
                    m.heartbeat_at = now + m.interval
                    t = now + int(lo + span * m.rng.random() + 0.5)
                    wheel[t & _MASK].append((_HEARTBEAT, m, {"group_id": m.group, "generation_id": 1,
                                                             "member_id": m.name, "group_instance_id": None}))
                    requests += 1
                if now >= m.commit_at:
                    m.commit_at = now + m.commit_interval
                    t = now + int(lo + span * m.rng.random() + 0.5)
                    wheel[t & _MASK].append((_COMMIT, m, dict(m.positions)))
                    requests += 1
                wheel[min(m.heartbeat_at, m.commit_at) & _MASK].append((_SEND, m, None))
            elif kind == _HEARTBEAT:
                m.session_deadline = now + 45000
                t = now + int(lo + span * m.rng.random() + 0.5)
                wheel[t & _MASK].append((_HEARTBEAT_ANSWER, m, {"throttle_time_ms": 0, "error_code": 0}))
            elif kind == _COMMIT:
                m.session_deadline = now + 45000
                log.append({"v": 1, "event": "offset.committed", "ts_ms": now, "group": m.group, "generation": 1,
                            "partitions": len(arg)})
                t = now + int(lo + span * m.rng.random() + 0.5)
                wheel[t & _MASK].append((_COMMIT_ANSWER, m, arg))
            elif kind == _COMMIT_ANSWER:
                m.committed.update(arg)
                log.append({"v": 1, "event": "client.committed", "ts_ms": now, "group": m.group, "client": m.name,
                            "member": m.name, "generation": 1,
                            "offsets": [[t, p, o] for (t, p), o in arg.items()]})
            # (_HEARTBEAT_ANSWER: nothing moves; the next heartbeat's time was set when it went)
        items += len(slot)
        slot.clear()
    cpu = time.process_time() - cpu0
    return {"requests": requests, "events": len(log), "items": items, "cpu_s": cpu,
            "us_per_request": cpu / max(requests, 1) * 1e6}


def _run_kept(sc, wheel, log, members, lo, span) -> dict:
    """The floor with what a kernel of the steady state must keep besides to hand a member back
    exactly: the member's request ids, its requests' deadlines and its quiet bound checked, the
    connection's order (a request never overtakes the one before it, either way), the run's
    counters, the correlation ids, the group's state looked at and the session re-armed as the
    coordinator's timers keep it (a sequence number each), a commit's records (a key and a value a
    partition, replayed into the offsets), the member's wake-ups as the simulator pushes them (the
    next at the auto-commit while a heartbeat is out, the heartbeat's pushed at its answer, the
    overtaken ones skipped) and its session deadline. Nothing of the general machinery."""
    import itertools
    session_ms, timeout_ms = 45000, 30000
    corr, seqs = itertools.count(1), itertools.count()
    groups: dict[str, _Group] = {}
    offsets: dict = {}
    for m in members:
        g = groups.get(m.group)
        if g is None:
            g = groups[m.group] = _Group()
            g.state, g.generation_id, g.members = "Stable", 1, {}
        g.members[m.name] = m.coordinator_member = object()
        m.ids, m.generation = itertools.count(1), 1
        m.hb_rid = m.commit_rid = None
        m.hb_deadline = m.commit_deadline = 0
        m.quiet_until, m.req_at, m.resp_at, m.settled = 300_000, 0, 0, 0
        e = m.entry = _Entry()
        e.deadline = e.queued_at = session_ms
        e.seq = next(seqs)
        m.wake_at = min(m.heartbeat_at, m.commit_at)
        wheel[m.wake_at & _MASK].append((_SEND, m, None))
    end = sc.duration_ms
    items = requests = polls = skipped = 0
    loss = 0.0                  # (the simulator's look at its network's loss, none here)
    cpu0 = time.process_time()
    for now in range(end + 1):
        slot = wheel[now & _MASK]
        if not slot:
            continue
        for kind, m, arg in slot:
            if kind == _SEND:
                if m.wake_at != now:
                    continue                          # overtaken
                if now >= m.quiet_until:
                    m.quiet_until = now + 300_000     # (a kernel hands the member back here)
                polls_due = (now - m.polled_at) // m.period
                if polls_due and m.records:
                    m.polled_at += polls_due * m.period
                    step = polls_due * m.records
                    pos = m.positions
                    for tp in pos:
                        pos[tp] += step
                if now >= m.commit_at:
                    m.commit_at = now + m.commit_interval
                    polls += 1
                    if m.positions:
                        m.commit_rid = rid = next(m.ids)
                        m.commit_deadline = now + timeout_ms
                        requests += 1
                        if not (loss and m.rng.random() < loss):
                            t = now + int(lo + span * m.rng.random() + 0.5)
                            if t < m.req_at:
                                t = m.req_at
                            m.req_at = t
                            wheel[t & _MASK].append((_COMMIT, m, (rid, dict(m.positions))))
                if m.hb_rid is None and now >= m.heartbeat_at:
                    m.hb_rid = rid = next(m.ids)
                    m.hb_deadline = now + timeout_ms
                    m.heartbeat_at = now + m.interval
                    polls += 1
                    requests += 1
                    if not (loss and m.rng.random() < loss):
                        t = now + int(lo + span * m.rng.random() + 0.5)
                        if t < m.req_at:
                            t = m.req_at
                        m.req_at = t
                        wheel[t & _MASK].append((_HEARTBEAT, m, rid))
                best = m.commit_at
                if m.hb_rid is None and m.heartbeat_at < best:
                    best = m.heartbeat_at
                m.wake_at = best
                wheel[best & _MASK].append((_SEND, m, None))
            elif kind == _HEARTBEAT:
                next(corr)
                g = groups[m.group]
                if g.state == "Stable" and g.generation_id == m.generation and \
                        g.members.get(m.name) is m.coordinator_member:
                    e = m.entry
                    seq = next(seqs)
                    d = now + session_ms
                    if d >= e.queued_at:
                        e.deadline, e.seq = d, seq
                t = now + int(lo + span * m.rng.random() + 0.5)
                if t < m.resp_at:
                    t = m.resp_at
                m.resp_at = t
                wheel[t & _MASK].append((_HEARTBEAT_ANSWER, m, arg))
            elif kind == _COMMIT:
                next(corr)
                rid, offs = arg
                g = groups[m.group]
                if g.state == "Stable" and g.generation_id == m.generation and \
                        g.members.get(m.name) is m.coordinator_member:
                    e = m.entry
                    seq = next(seqs)
                    d = now + session_ms
                    if d >= e.queued_at:
                        e.deadline, e.seq = d, seq
                records = [((m.group, tp[0], tp[1]), (o, -1, "", now, None)) for tp, o in offs.items()]
                for key, value in records:
                    offsets[key] = value
                log.append({"v": 1, "event": "offset.committed", "ts_ms": now, "group": m.group, "generation": 1,
                            "partitions": len(offs)})
                t = now + int(lo + span * m.rng.random() + 0.5)
                if t < m.resp_at:
                    t = m.resp_at
                m.resp_at = t
                wheel[t & _MASK].append((_COMMIT_ANSWER, m, arg))
            elif kind == _COMMIT_ANSWER:
                rid, offs = arg
                if rid == m.commit_rid:
                    m.commit_rid = None
                    m.committed.update(offs)
                    skipped += 1
                    log.append({"v": 1, "event": "client.committed", "ts_ms": now, "group": m.group,
                                "client": m.name, "member": m.name, "generation": 1,
                                "offsets": [[t, p, o] for (t, p), o in offs.items()]})
            else:                                     # _HEARTBEAT_ANSWER
                if arg == m.hb_rid:
                    m.hb_rid = None
                    m.session_deadline = now + session_ms
                    m.settled = d = m.heartbeat_at
                    skipped += 1
                    if d < m.wake_at:
                        m.wake_at = d
                        wheel[d & _MASK].append((_SEND, m, None))
        items += len(slot)
        slot.clear()
    cpu = time.process_time() - cpu0
    return {"requests": requests, "events": len(log), "items": items, "cpu_s": cpu,
            "us_per_request": cpu / max(requests, 1) * 1e6, "polls": polls + skipped}
