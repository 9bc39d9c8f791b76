"""Old data loads: tests/coordinator/data/old-datadir/ was written by the group coordinator before it
was split into a runtime and a package per group type (commit 755066c, with
tests/coordinator/data/make_old_datadir.py run on that commit); expected.json is that code's live
state before it closed the store. This code loads the dir and must find every group, member,
assignment and offset as they were."""
from __future__ import annotations

import base64
import json
import shutil
import uuid
from pathlib import Path

import pytest

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.cluster import Cluster, Node
from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.group.runtime import GroupCoordinator
from groupcoord.coordinator.timer import Timers

FIXTURE = Path(__file__).parent / "data" / "old-datadir"
CONFIG = {"group.initial.rebalance.delay.ms": 0, "group.consumer.heartbeat.interval.ms": 5000}


def _b(data):
    return None if data is None else base64.b64encode(bytes(data)).decode()


def _epoched(parts: dict) -> dict:
    return {str(t): sorted([p, e] for p, e in ps.items())
            for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0])) if ps}


def _partitions(parts: dict) -> dict:
    return {str(t): sorted(ps) for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0])) if ps}


def _offsets(gc, group_id: str) -> list:
    out = [{"topic": t, "partition": p, "offset": o.committed_offset, "leader_epoch": o.leader_epoch,
            "metadata": o.metadata, "commit_timestamp": o.commit_timestamp, "expire_timestamp": o.expire_timestamp}
           for t, parts in gc.offsets.of(group_id).items() for p, o in parts.items()]
    return sorted(out, key=lambda o: (o["topic"], o["partition"]))


def dump_classic(gc, g) -> dict:
    protocol = g.protocol_name
    return {
        "type": "classic", "state": g.state, "generation": g.generation_id, "protocol_type": g.protocol_type,
        "protocol": protocol, "leader": g.leader_id,
        "current_state_timestamp": g.current_state_timestamp if g.protocol_type is not None else None,
        "static_members": dict(sorted(g.static_members.items())),
        "subscribed_topics": None if g.subscribed_topics is None else sorted(g.subscribed_topics),
        "members": [{"member_id": m.member_id, "instance_id": m.group_instance_id, "client_id": m.client_id,
                     "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                     "session_timeout_ms": m.session_timeout_ms, "protocol_type": m.protocol_type,
                     "metadata": _b(m.metadata(protocol)) if protocol is not None else None,
                     "assignment": _b(m.assignment)} for m in g.members.values()],
        "offsets": _offsets(gc, g.group_id)}


def dump_consumer(gc, g) -> dict:
    members = {m.member_id: {
        "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
        "client_host": m.client_host, "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
        "state": m.state.value, "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "subscribed_topic_names": sorted(m.subscribed_topic_names), "subscribed_topic_regex": m.subscribed_topic_regex,
        "server_assignor": m.server_assignor, "assigned": _epoched(m.assigned),
        "pending_revocation": _epoched(m.pending_revocation), "target": _partitions(g.target.get(m.member_id, {})),
        "classic": None if m.classic is None else {"session_timeout_ms": m.classic.session_timeout_ms,
                                                   "protocols": [[n, _b(d)] for n, d in m.classic.protocols]}}
        for m in g.members.values()}
    return {
        "type": "consumer", "state": g.state, "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
        "members": dict(sorted(members.items())), "static_members": dict(sorted(g.static_members.items())),
        "target": {mid: _partitions(t) for mid, t in sorted(g.target.items())},
        "partition_epochs": _epoched(g.partition_epochs),
        "subscription_metadata": {n: {"topic_id": str(i.topic_id), "partitions": i.partitions}
                                  for n, i in sorted(g.subscription_metadata.items())},
        "subscribed_regexes": dict(sorted(g.subscribed_regexes.items())),
        "resolved_regexes": {r: {"topics": sorted(x.topics), "timestamp_ms": x.timestamp_ms}
                             for r, x in sorted(g.resolved_regexes.items())},
        "offsets": _offsets(gc, g.group_id)}


def load(directory: Path, now: int) -> tuple[GroupCoordinator, st.LogStore]:
    """As the service loads a data dir: the topics, then every offsets partition loading, then each
    completed with its records."""
    store = st.LogStore(str(directory))
    gc = GroupCoordinator(BrokerConfig(dict(CONFIG), environ={}), Timers(), lambda: now, emit=lambda e: None,
                          store=store)
    cluster = Cluster([Node(0, "localhost", 9092)], topic_id_factory=lambda name: uuid.uuid5(uuid.NAMESPACE_OID, name))
    state = store.load_topics()
    cluster.restore_topics(state.topics, state.end_offsets)
    gc.set_metadata_image(cluster)
    for p in store.partitions():
        gc.begin_loading(p)
    for p in store.partitions():
        gc.complete_loading(p, store.load(p))
    return gc, store


@pytest.mark.parametrize("later_ms", [0, 3_600_000])
def test_a_data_dir_of_the_old_coordinator_loads_as_it_was(tmp_path, later_ms):
    expected = json.loads((FIXTURE / "expected.json").read_text())
    directory = tmp_path / "data"
    shutil.copytree(FIXTURE, directory)            # loading may repair or compact: not the fixture
    gc, store = load(directory, expected["written_at_ms"] + later_ms)
    try:
        got = {}
        for g in gc.groups():
            got[g.group_id] = dump_classic(gc, g) if g.type == "classic" else dump_consumer(gc, g)
        got = json.loads(json.dumps(dict(sorted(got.items()))))
        assert set(got) == set(expected["groups"])
        for group_id, want in expected["groups"].items():
            assert got[group_id] == want, group_id
        for group_id in expected["absent_groups"]:
            assert group_id not in gc
    finally:
        store.close()
