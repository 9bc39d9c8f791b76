"""The admin API's view of a consumer group (``/api/groups``): what its summary adds to every
group's (its group epoch and assignment epoch), and per member its epochs, its reconciliation state
(Kafka's ``MemberState``), what it owns, what it must still revoke and its target assignment,
partitions by topic name."""
from __future__ import annotations

from ..assignors.spec import kafka_uuid_str
from .group import ConsumerGroup, ConsumerGroupMember


def summary_json(group: ConsumerGroup, manager) -> dict:
    return {"protocol_type": "consumer", "protocol": group.preferred_assignor(manager.default_assignor),
            "generation": group.group_epoch, "leader": None, "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch}


def partitions_json(cluster, parts) -> dict:
    """{"partitions": [...]} of {topic id: partitions}: by topic name (None once the topic is gone)."""
    out = []
    for topic_id, ps in parts.items():
        topic = cluster.topics_by_id.get(topic_id)
        name = topic.name if topic is not None else None
        out.extend({"topic": name, "topic_id": kafka_uuid_str(topic_id), "partition": p} for p in ps)
    out.sort(key=lambda tp: (tp["topic"] or "", tp["topic_id"], tp["partition"]))
    return {"partitions": out}


def member_json(cluster, group: ConsumerGroup, m: ConsumerGroupMember) -> dict:
    return {"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "member_epoch": m.member_epoch,
            "previous_member_epoch": m.previous_member_epoch, "state": m.state.value,
            "rebalance_timeout_ms": m.rebalance_timeout_ms, "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex, "server_assignor": m.server_assignor,
            "assignment": partitions_json(cluster, m.assigned),
            "pending_revocation": partitions_json(cluster, m.pending_revocation),
            "target_assignment": partitions_json(cluster, group.target.get(m.member_id, {}))}


def members_json(group: ConsumerGroup, cluster) -> list[dict]:
    return [member_json(cluster, group, m) for m in group.members.values()]


# ---- the OpenAPI schemas of the above (the admin API's document)
_NULLABLE_STRING = {"type": "string", "nullable": True}
_TP = {"type": "object", "required": ["topic", "topic_id", "partition"],
       "properties": {"topic": {**_NULLABLE_STRING, "description": "null once the topic is gone"},
                      "topic_id": {"type": "string"}, "partition": {"type": "integer"}}}
_PARTITIONS = {"type": "object", "required": ["partitions"],
               "properties": {"partitions": {"type": "array", "items": _TP}}}
#: what a group's summary has beyond every group's
SUMMARY_FIELDS = {
    "group_epoch": {"type": "integer", "description": "consumer groups: bumped by every change of members or of "
                                                      "what they subscribe to"},
    "assignment_epoch": {"type": "integer", "description": "consumer groups: the group epoch the target "
                                                           "assignment was computed at"},
}
#: the schema of a member (of SCHEMAS)
MEMBER_SCHEMA = "ConsumerGroupMember"
SCHEMAS = {
    "ConsumerGroupMember": {
        "type": "object",
        "description": "a member of a consumer group (KIP-848)",
        "required": ["member_id", "instance_id", "rack_id", "client_id", "client_host", "member_epoch",
                     "previous_member_epoch", "state", "rebalance_timeout_ms", "subscribed_topic_names",
                     "subscribed_topic_regex", "server_assignor", "assignment", "pending_revocation",
                     "target_assignment"],
        "properties": {
            "member_id": {"type": "string"},
            "instance_id": {**_NULLABLE_STRING, "description": "group.instance.id of a static member"},
            "rack_id": _NULLABLE_STRING,
            "client_id": {"type": "string"},
            "client_host": {"type": "string"},
            "member_epoch": {"type": "integer", "description": "-2: a static member gone for now"},
            "previous_member_epoch": {"type": "integer"},
            "state": {"type": "string", "enum": ["stable", "unrevoked_partitions", "unreleased_partitions",
                                                "unknown"],
                      "description": "the reconciliation state (Kafka's MemberState)"},
            "rebalance_timeout_ms": {"type": "integer"},
            "subscribed_topic_names": {"type": "array", "items": {"type": "string"}},
            "subscribed_topic_regex": _NULLABLE_STRING,
            "server_assignor": _NULLABLE_STRING,
            "assignment": {**_PARTITIONS, "description": "what it owns now"},
            "pending_revocation": {**_PARTITIONS, "description": "what it must still give up"},
            "target_assignment": {**_PARTITIONS, "description": "what the assignor gave it"},
        },
    },
}
