"""Share groups across a restart of the service on its data dir (issue #30): the share-partition state
(start offset, each batch's state and delivery count) is kept in ``__share_group_state.log`` as Kafka's
share coordinator keeps it in ``__share_group_state``, and the records themselves in segment files, so
no acknowledged record is delivered again and every other one is. ACQUIRED is never written (as in
Kafka): a record held when the service stopped comes back available, its count as last written."""
from __future__ import annotations

from test_share_fetch_api import ACCEPT, REJECT, RELEASE, Clock, World, acquired, ok, offsets_in

from groupcoord.coordinator.share.partition import PersisterStateBatch, RecordState


def restarted(world: World, directory) -> World:
    """The same data dir, a new service (the members join again: a restarted coordinator knows them, but
    their share sessions are gone with the old service)."""
    world.svc.store.close()
    return World(directory=directory, clock=world.clock, members=("m1", "m2"))


def test_acknowledged_records_are_not_delivered_again_after_a_restart(tmp_path):
    w = World(directory=tmp_path)
    w.produce(10)
    first = ok(w.fetch("m1", 0, max_records=10))
    assert acquired(first) == [(0, 9, 1)]
    # accept 0-3, release 4-5 (delivered again, count 1 kept), reject 6, hold 7-9 (acquired: not written)
    ok(w.acknowledge("m1", 1, {0: [(0, 3, ACCEPT), (4, 5, RELEASE), (6, 6, REJECT)]}))
    key = ("q", w.topic_id, 0)
    kept = w.svc.share_partitions.states.read(key)
    # (the write carries the start offset it was made at, as Kafka's: the SPSO moves to 4 once it is written)
    assert kept.start_offset == 0 and kept.state_batches == (
        PersisterStateBatch(0, 3, RecordState.ACKNOWLEDGED, 1), PersisterStateBatch(4, 5, RecordState.AVAILABLE, 1),
        PersisterStateBatch(6, 6, RecordState.ARCHIVED, 1))

    again = restarted(w, tmp_path)
    assert again.svc.share_partitions.states.read(key) == kept
    resp = ok(again.fetch("m2", 0, max_records=10))
    # 4-5 again (count 2), 6 archived, 7-9 held when the service stopped: delivered again
    got = acquired(resp)
    assert got == [(4, 5, 2), (7, 9, 1)], got
    assert set(offsets_in(entry_records(resp))) >= {4, 5, 7, 8, 9}
    # none of 0-3 (accepted) and not 6 (rejected), whoever asks
    ok(again.acknowledge("m2", 1, {0: [(4, 5, ACCEPT), (7, 9, ACCEPT)]}))
    assert acquired(ok(again.fetch("m1", 0, max_records=10))) == []
    assert again.svc.share_partitions.share_partitions()[key].start_offset == 10


def test_records_produced_while_the_share_partition_was_unloaded_are_delivered(tmp_path):
    w = World(directory=tmp_path)
    w.produce(3)
    resp = ok(w.fetch("m1", 0, max_records=10))
    ok(w.acknowledge("m1", 1, {0: [(0, 2, ACCEPT)]}))
    assert acquired(resp) == [(0, 2, 1)]
    again = restarted(w, tmp_path)
    again.produce(2)
    assert acquired(ok(again.fetch("m1", 0, max_records=10))) == [(3, 4, 1)]


def test_share_state_log_is_compacted_to_the_latest_state_of_each_share_partition(tmp_path):
    w = World(directory=tmp_path, clock=Clock())
    w.produce(40, batches=40)
    for n in range(40):         # one write per acknowledgement: 40 snapshots of the one share-partition
        resp = ok(w.fetch("m1", 0 if n == 0 else 2 * n, max_records=1))
        first = acquired(resp)[0][0]
        ok(w.acknowledge("m1", 2 * n + 1, {0: [(first, first, ACCEPT)]}))
    store = w.svc.store
    store.compact_min_bytes = 0
    states = store.load_share_states()       # (at load: compacted when mostly dead records)
    assert store.compactions >= 1 and [b.last_offset for b in states[("q", w.topic_id, 0)].state_batches][-1:] == [39]


def entry_records(resp: dict) -> bytes:
    return resp["responses"][0]["partitions"][0]["records"]
