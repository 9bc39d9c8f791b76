"""The admin API's view of a classic group (``/api/groups``): what its summary adds to every
group's, and its members with their subscriptions and assignments decoded when the group's
protocol type is ``consumer``."""
from __future__ import annotations

from groupcoord.protocol.consumer import decode_assignment, decode_subscription
from groupcoord.protocol.errors import DecodeError

from .group import CONSUMER_PROTOCOL_TYPE, ClassicGroup, Member


def subscription_json(data: bytes, protocol_type: str | None) -> dict | None:
    """A ConsumerProtocolSubscription decoded; None for other protocol types or bad bytes."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not data:
        return None
    try:
        obj = decode_subscription(data)
    except (DecodeError, ValueError):
        return None
    return {"topics": list(obj["topics"]),
            "owned_partitions": [{"topic": e["topic"], "partition": p}
                                 for e in obj.get("owned_partitions") or () for p in e["partitions"]],
            "user_data_bytes": len(obj.get("user_data") or b"")}


def assignment_json(data: bytes, protocol_type: str | None) -> dict | None:
    """A ConsumerProtocolAssignment decoded; None before the first assignment, for other
    protocol types or bad bytes."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not data:
        return None
    try:
        obj = decode_assignment(data)
    except (DecodeError, ValueError):
        return None
    return {"partitions": [{"topic": e["topic"], "partition": p}
                           for e in obj["assigned_partitions"] for p in e["partitions"]],
            "user_data_bytes": len(obj.get("user_data") or b"")}


def _metadata(member: Member, protocol_name: str | None) -> bytes:
    """The member's metadata for the group's protocol, else for its first protocol."""
    for name, data in member.protocols:
        if name == protocol_name:
            return data
    return member.protocols[0][1] if member.protocols else b""


def summary_json(group: ClassicGroup, manager) -> dict:
    return {"protocol_type": group.protocol_type, "protocol": group.protocol_name,
            "generation": group.generation_id, "leader": group.leader_id}


def member_json(member: Member, protocol_type: str | None, protocol_name: str | None) -> dict:
    metadata = _metadata(member, protocol_name)
    return {"member_id": member.member_id, "client_id": member.client_id, "client_host": member.client_host,
            "instance_id": member.group_instance_id, "session_timeout_ms": member.session_timeout_ms,
            "rebalance_timeout_ms": member.rebalance_timeout_ms,
            "subscription": subscription_json(metadata, protocol_type),
            "assignment": assignment_json(member.assignment, protocol_type),
            "subscription_bytes": len(metadata), "assignment_bytes": len(member.assignment)}


def members_json(group: ClassicGroup, cluster) -> list[dict]:
    return [member_json(m, group.protocol_type, group.protocol_name) for m in group.members.values()]


# ---- the OpenAPI schemas of the above (the admin API's document)
_REF = "#/components/schemas/"
_NULLABLE_STRING = {"type": "string", "nullable": True}
_TP = {"type": "object", "required": ["topic", "partition"],
       "properties": {"topic": {"type": "string"}, "partition": {"type": "integer"}}}
#: what a group's summary has beyond every group's (none)
SUMMARY_FIELDS: dict = {}
#: the schema of a member (of SCHEMAS)
MEMBER_SCHEMA = "GroupMember"
SCHEMAS = {
    "Subscription": {
        "type": "object", "nullable": True, "required": ["topics", "owned_partitions", "user_data_bytes"],
        "description": "the decoded ConsumerProtocolSubscription (protocol type 'consumer'), else null",
        "properties": {"topics": {"type": "array", "items": {"type": "string"}},
                       "owned_partitions": {"type": "array", "items": _TP},
                       "user_data_bytes": {"type": "integer"}},
    },
    "Assignment": {
        "type": "object", "nullable": True, "required": ["partitions", "user_data_bytes"],
        "description": "the decoded ConsumerProtocolAssignment; null before the first assignment "
                       "and for other protocol types",
        "properties": {"partitions": {"type": "array", "items": _TP}, "user_data_bytes": {"type": "integer"}},
    },
    "GroupMember": {
        "type": "object",
        "description": "a member of a classic group",
        "required": ["member_id", "client_id", "client_host", "instance_id", "session_timeout_ms",
                     "rebalance_timeout_ms", "subscription", "assignment", "subscription_bytes",
                     "assignment_bytes"],
        "properties": {
            "member_id": {"type": "string"},
            "client_id": {"type": "string"},
            "client_host": {"type": "string"},
            "instance_id": {**_NULLABLE_STRING, "description": "group.instance.id of a static member"},
            "session_timeout_ms": {"type": "integer"},
            "rebalance_timeout_ms": {"type": "integer"},
            "subscription": {"$ref": _REF + "Subscription"},
            "assignment": {"$ref": _REF + "Assignment"},
            "subscription_bytes": {"type": "integer", "description": "size of the protocol metadata"},
            "assignment_bytes": {"type": "integer", "description": "size of the assignment"},
        },
    },
}
