"""Keyed timers: deadline order, ties by the keys' last scheduling, independent of other keys."""
from __future__ import annotations

import random

from groupcoord.coordinator.timer import Timers


def _fire_order(ops, now):
    timers = Timers()
    fired = []
    for op in ops:
        if op[0] == "schedule":
            _, key, deadline = op
            timers.schedule(key, deadline, lambda key=key: fired.append(key))
        elif op[0] == "cancel":
            timers.cancel(op[1])
        else:                                   # "tidy": what a driver's next_deadline() does
            timers.next_deadline()
    timers.advance(now)
    return fired


def test_ties_fire_in_the_order_of_the_last_scheduling():
    ops = [("schedule", "a", 100), ("schedule", "b", 100), ("schedule", "a", 100)]
    assert _fire_order(ops, 100) == ["b", "a"]
    ops = [("schedule", "a", 50), ("schedule", "b", 100), ("tidy",), ("schedule", "a", 100)]
    assert _fire_order(ops, 100) == ["b", "a"]
    ops = [("schedule", "a", 200), ("schedule", "b", 100), ("schedule", "a", 100)]   # pulled earlier
    assert _fire_order(ops, 150) == ["b", "a"]
    assert _fire_order([("schedule", "a", 90), ("schedule", "b", 80), ("cancel", "b")], 100) == ["a"]


def test_the_order_of_one_set_of_keys_does_not_depend_on_other_keys_or_on_tidying():
    # the sharded simulator's premise: the timers of one group fire in the same order whether or
    # not another group's timers (and the driver's tidying) are interleaved with them
    rng = random.Random(7)
    for _ in range(300):
        mine = []
        t = 0
        for _ in range(rng.randrange(2, 12)):
            t += rng.randrange(0, 3)
            mine.append(("schedule", f"g:{rng.randrange(4)}", t + rng.randrange(0, 6)))
        alone = _fire_order(mine, 10_000)
        mixed = []
        for op in mine:
            for _ in range(rng.randrange(0, 3)):
                mixed.append(rng.choice([("tidy",), ("schedule", f"h:{rng.randrange(4)}", rng.randrange(0, 20))]))
            mixed.append(op)
        got = [k for k in _fire_order(mixed, 10_000) if k.startswith("g:")]
        assert got == alone, (mine, mixed)


def test_next_deadline_is_never_after_a_due_timer_and_a_postponed_one_fires_at_its_new_deadline():
    # a session timer pushed on by every heartbeat: next_deadline() may name its old deadline
    # (the driver then wakes for nothing), never a time after a timer is due
    timers = Timers()
    fired = []
    timers.schedule("hb", 45_000, lambda: fired.append(("hb", now)))
    timers.schedule("other", 70_000, lambda: fired.append(("other", now)))
    now = 0
    for now in range(3_000, 60_000, 3_000):       # heartbeats until 57 s: the session ends at 102 s
        timers.schedule("hb", now + 45_000, lambda: fired.append(("hb", now)))
        d = timers.next_deadline()
        assert d <= now + 45_000 and d <= 70_000
    wakes = 0
    while len(fired) < 2:
        now = timers.next_deadline()
        wakes += 1
        timers.advance(now)
        assert wakes < 10
    assert fired == [("other", 70_000), ("hb", 102_000)]
    assert timers.next_deadline() is None


def test_next_deadline_answers_the_same_while_changes_stays_the_same():
    """Timers.changes: a driver that saw the same number may keep the answer it had (the
    simulator's coordinator wake-up relies on it); postponing a timer leaves it as it is."""
    rng = random.Random(3)
    for _ in range(200):
        timers = Timers()
        now = 0
        seen, answer = timers.changes, timers.next_deadline()
        bumped = kept = 0
        for _ in range(60):
            op = rng.random()
            key = rng.randrange(6)
            if op < 0.5:
                timers.schedule(key, now + rng.randrange(1, 200), lambda: None)
            elif op < 0.65:
                timers.cancel(key)
            elif op < 0.8:
                now += rng.randrange(0, 80)
                timers.advance(now)
            if timers.changes == seen:
                assert timers.next_deadline() == answer
                kept += 1
            else:
                bumped += 1
            seen, answer = timers.changes, timers.next_deadline()
        assert bumped and kept
