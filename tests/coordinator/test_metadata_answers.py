"""Metadata answers shared within a cluster epoch: identical requests get one answer, built and
encoded once; anything a Metadata answer shows (nodes, leaders, topics, partitions, addresses)
starts a new epoch."""
from __future__ import annotations

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.service import Service
from groupcoord.protocol import frames

METADATA = 3


def _service(nodes=2):
    svc = Service(BrokerConfig({}, profile="test", environ={}), nodes=nodes, clock=lambda: 0, emit=lambda e: None)
    svc.create_topic("t", 4)
    return svc


def _ask(svc, topics=("t",), version=12, allow_auto=False):
    out = []
    body = {"topics": None if topics is None else [{"name": n} for n in topics],
            "allow_auto_topic_creation": allow_auto, "include_topic_authorized_operations": False}
    svc.handle(RequestContext(svc, 0, "c", "/127.0.0.1", METADATA, version, 1), body, out.append)
    return out[0]


def _decoded(answer, version=12, corr=7):
    wire = frames.encode_response(METADATA, version, corr, answer, framed=False)
    got_corr, body = frames.decode_response(METADATA, version, wire)
    assert got_corr == corr
    return body


def _leaders(answer):
    return [p["leader_id"] for p in answer["topics"][0]["partitions"]]


def test_identical_requests_share_one_answer_and_its_encoding():
    svc = _service()
    a, b = _ask(svc), _ask(svc)
    assert a is b
    first = frames.encode_response(METADATA, 12, 1, a, framed=False)
    assert a.encoded and frames.encode_response(METADATA, 12, 2, b, framed=False)[4:] == first[4:]
    assert _decoded(a, corr=9) == _decoded(dict(a), corr=9)          # the kept bytes are the real encoding
    assert _ask(svc, version=9) is not a                             # another version: its own answer
    assert _ask(svc, topics=None) is not a                           # all topics: its own answer


def test_every_change_a_metadata_answer_shows_starts_a_new_epoch():
    svc = _service(nodes=2)
    cluster = svc.cluster
    a = _ask(svc)
    assert _leaders(a) == [0, 1, 0, 1]
    cluster.node_down(1)                                             # leaders move, node 1 unlisted
    b = _ask(svc)
    assert b is not a and _leaders(b) == [0, 0, 0, 0] and [n["node_id"] for n in b["brokers"]] == [0]
    cluster.node_up(1)
    assert [n["node_id"] for n in _ask(svc)["brokers"]] == [0, 1]
    cluster.add_partitions("t", 6)
    assert len(_ask(svc)["topics"][0]["partitions"]) == 6
    old_id = _ask(svc)["topics"][0]["topic_id"]
    cluster.delete_topic("t")
    assert _ask(svc)["topics"][0]["error_code"] == 3                 # UNKNOWN_TOPIC_OR_PARTITION
    svc.create_topic("t", 2)
    again = _ask(svc)["topics"][0]
    assert again["topic_id"] != old_id and len(again["partitions"]) == 2
    svc.set_node_address(0, "elsewhere", 1234)
    assert ("elsewhere", 1234) in [(n["host"], n["port"]) for n in _ask(svc)["brokers"]]
    cluster.elect_preferred_leaders()
    before = _ask(svc)
    cluster.set_leader("t", 0, 1)
    assert _leaders(_ask(svc))[0] == 1 and _leaders(before)[0] == 0    # the old answer never changed


def test_a_request_that_creates_a_topic_is_answered_with_it_and_the_answer_is_kept():
    svc = Service(BrokerConfig({"auto.create.topics.enable": "true"}, profile="test", environ={}), nodes=1,
                  clock=lambda: 0, emit=lambda e: None)
    a = _ask(svc, topics=("fresh",), allow_auto=True)
    assert a["topics"][0]["error_code"] == 0 and "fresh" in svc.cluster.topics
    assert _ask(svc, topics=("fresh",), allow_auto=True) is a
