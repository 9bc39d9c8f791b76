"""Metadata (3): brokers, topics, partitions and leaders; auto-creation of topics.

Only live nodes are listed as brokers; leaders are the cluster's current ones (they change
when a node goes down, see :mod:`..cluster`; leader epochs stay 0)."""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.frames import SharedBody

from ..cluster import validate_topic_name
from ..group.runtime import AUTHORIZED_OPERATIONS_OMITTED

API_KEY = ApiKey.METADATA
VERSIONS = {"3.9": (0, 12), "4.1": (0, 13)}     # v13 (top-level ErrorCode) came with Kafka 4.0


def _topic_entry(cluster, topic, version) -> dict:
    parts = []
    nodes = cluster.nodes
    for p in range(topic.partition_count):
        leader = cluster.leader_for(topic.name, p)
        if nodes[leader].up:
            parts.append({"error_code": 0, "partition_index": p, "leader_id": leader, "leader_epoch": 0,
                          "replica_nodes": [leader], "isr_nodes": [leader], "offline_replicas": []})
        else:   # no live replica left (every node is down)
            parts.append({"error_code": ErrorCode.LEADER_NOT_AVAILABLE, "partition_index": p, "leader_id": -1,
                          "leader_epoch": 0, "replica_nodes": [leader], "isr_nodes": [],
                          "offline_replicas": [leader]})
    return {"error_code": 0, "name": topic.name, "topic_id": topic.topic_id,
            "is_internal": topic.internal, "partitions": parts,
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


def _error_entry(name, code) -> dict:
    return {"error_code": code, "name": name, "is_internal": False, "partitions": [],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


_ANSWERS_KEPT = 64


def _answers(cluster) -> dict:
    """The answers kept for the cluster's current epoch (request key -> answer)."""
    epoch, answers = cluster.metadata_answers
    if epoch != cluster.epoch or len(answers) >= _ANSWERS_KEPT:
        answers = {}
        cluster.metadata_answers = (cluster.epoch, answers)
    return answers


def handle(ctx, version, body, respond):
    service = ctx.service
    cluster = service.cluster
    requested = body.get("topics")
    if version == 0 and requested == []:
        requested = None  # v0: an empty list means every topic
    allow_auto = body.get("allow_auto_topic_creation", True) if version >= 4 else True
    # identical requests of one cluster epoch get one shared answer, built and encoded once (a
    # fleet of thousands of members asks for the same topics; each answer lists every partition).
    # Answers do not depend on the principal: topic ACLs are not applied to Metadata.
    key = None
    if requested is None or all(e.get("name") is not None for e in requested):
        key = (version, None if requested is None else tuple(e["name"] for e in requested), allow_auto,
               bool(service.config["auto.create.topics.enable"]))
        hit = _answers(cluster).get(key)
        if hit is not None:
            respond(hit)
            return
    answer = _build(service, cluster, version, requested, allow_auto)
    if key is not None:
        _answers(cluster)[key] = answer          # at the epoch after any topic this request created
    respond(answer)


def _build(service, cluster, version, requested, allow_auto) -> dict:
    topics = []
    if requested is None:
        topics = [_topic_entry(cluster, t, version) for t in cluster.topics.values() if not t.internal]
    else:
        for entry in requested:
            name = entry.get("name")
            if name is None:  # lookup by topic id (v12+) is not spoken: we cap Metadata topic ids at use
                topic = cluster.topics_by_id.get(entry.get("topic_id"))
                topics.append(_topic_entry(cluster, topic, version) if topic else
                              {**_error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID), "topic_id": entry.get("topic_id")})
                continue
            topic = cluster.topics.get(name)
            if topic is None:
                problem = validate_topic_name(name)
                if problem is not None:
                    topics.append(_error_entry(name, ErrorCode.INVALID_TOPIC_EXCEPTION))
                    continue
                if allow_auto and service.config["auto.create.topics.enable"]:
                    service.create_topic(name)
                    # Kafka answers LEADER_NOT_AVAILABLE while a new topic's leaders are elected;
                    # ours are there at once
                    topic = cluster.topics[name]
                else:
                    topics.append(_error_entry(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
            topics.append(_topic_entry(cluster, topic, version))
    brokers = [{"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
               for n in cluster.nodes.values() if n.up]
    return SharedBody({"throttle_time_ms": 0, "brokers": brokers, "cluster_id": cluster.cluster_id,
                       "controller_id": cluster.controller_id, "topics": topics,
                       "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED, "error_code": 0})


def error_response(version: int, body: dict, code: int) -> dict:
    """No brokers, every requested topic failed (v13: also the top level)."""
    return {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1,
            "error_code": code, "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED, "topics": [
                {"error_code": code, "name": t.get("name") or "", "topic_id": t.get("topic_id"),
                 "is_internal": False, "partitions": [], "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
                for t in body.get("topics") or ()]}
