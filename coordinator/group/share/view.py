"""The admin API's view of a share group (``/api/groups``): what its summary adds to every group's
(its group epoch and assignment epoch), and per member its epochs, its subscription, its assignment
and its target assignment, partitions by topic name; and the group's share-partitions whose state is
initialized."""
from __future__ import annotations

from ..consumer.view import partitions_json
from .group import ShareGroup, ShareGroupMember


def summary_json(group: ShareGroup, manager) -> dict:
    return {"protocol_type": "share", "protocol": manager.assignor_name, "generation": group.group_epoch,
            "leader": None, "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
            "initialized": partitions_json(manager.image, group.initialized_partitions())}


def member_json(cluster, group: ShareGroup, m: ShareGroupMember) -> dict:
    return {"member_id": m.member_id, "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
            "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "assignment": partitions_json(cluster, m.assigned),
            "target_assignment": partitions_json(cluster, group.target.get(m.member_id, {}))}


def members_json(group: ShareGroup, cluster) -> list[dict]:
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
    "initialized": {**_PARTITIONS, "description": "share groups: the partitions whose share-partition state is "
                                                  "initialized (the only ones assigned)"},
}
#: the schema of a member (of SCHEMAS)
MEMBER_SCHEMA = "ShareGroupMember"
SCHEMAS = {
    "ShareGroupMember": {
        "type": "object",
        "description": "a member of a share group (KIP-932): its partitions may be shared with other members",
        "additionalProperties": False,
        "required": ["member_id", "rack_id", "client_id", "client_host", "member_epoch", "previous_member_epoch",
                     "subscribed_topic_names", "assignment", "target_assignment"],
        "properties": {
            "member_id": {"type": "string"},
            "rack_id": _NULLABLE_STRING,
            "client_id": {"type": "string"},
            "client_host": {"type": "string"},
            "member_epoch": {"type": "integer"},
            "previous_member_epoch": {"type": "integer"},
            "subscribed_topic_names": {"type": "array", "items": {"type": "string"}},
            "assignment": {**_PARTITIONS, "description": "its partitions now"},
            "target_assignment": {**_PARTITIONS, "description": "what the assignor gave it"},
        },
    },
}
