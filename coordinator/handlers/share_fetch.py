"""ShareFetch (78): a share consumer's fetch, acknowledgements piggy-backed (KIP-932).

The API layer of Kafka's ``KafkaApis.handleShareFetchRequest``: share groups off -> UNSUPPORTED_VERSION;
a null group id -> INVALID_REQUEST; no READ on the group -> GROUP_AUTHORIZATION_FAILED; from Kafka 4.2 a
member id empty or longer than 36 characters -> INVALID_REQUEST (4.1: a null one); v2 with IsRenewAck
and MaxBytes, MinBytes, MaxRecords or MaxWaitMs not 0 -> INVALID_REQUEST with Kafka's message. The rest
(share sessions, acknowledgements, long polling) is the share-partition manager's
(:mod:`groupcoord.coordinator.share.manager`). v1 from Kafka 4.1, v2 from 4.2; 3.9 has no share groups.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..releases import at_least
from ..security import GROUP, READ, TOPIC, authorize
from ..share.manager import fetch_error

API_KEY = ApiKey.SHARE_FETCH
SINCE = "4.1"
VERSIONS = {"4.1": (1, 1), "4.2": (1, 2)}

#: the longest member id Kafka 4.2+ takes
MAX_MEMBER_ID_LENGTH = 36

_RENEW_LIMITS = (("max_bytes", "maxBytes"), ("min_bytes", "minBytes"), ("max_records", "maxRecords"),
                 ("max_wait_ms", "maxWaitMs"))


def member_id_error(release: str, member_id) -> bool:
    """KafkaApis.isMemberIdValid (4.2+) failed, or (4.1) the member id is null."""
    if member_id is None:
        return True
    return at_least(release, "4.2") and not 0 < len(member_id) <= MAX_MEMBER_ID_LENGTH


def renew_error(body: dict) -> str | None:
    """KIP-1222: a ShareFetch that renews locks fetches nothing; Kafka's message when it asks to."""
    wrong = "".join(f"{java} must be set to 0, " for field, java in _RENEW_LIMITS if body[field] != 0)
    return f"{wrong}if isRenewAck is true." if wrong else None


def handle(ctx, version, body, respond):
    service = ctx.service
    if not service.group_coordinator.share_groups_enabled:
        respond(fetch_error(ErrorCode.UNSUPPORTED_VERSION))
        return
    group_id = body["group_id"]
    if group_id is None:
        respond(fetch_error(ErrorCode.INVALID_REQUEST, "Invalid group id in the request."))
        return
    if not authorize(ctx, READ, GROUP, group_id):
        respond(fetch_error(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    if member_id_error(service.config["groupcoord.kafka.version"], body["member_id"]):
        respond(fetch_error(ErrorCode.INVALID_REQUEST, "Invalid member id in the request."))
        return
    if version >= 2 and body.get("is_renew_ack"):
        message = renew_error(body)
        if message is not None:
            respond(fetch_error(ErrorCode.INVALID_REQUEST, message))
            return
    service.share_partitions.share_fetch(
        node_id=ctx.node_id, connection_id=ctx.connection_id, correlation_id=ctx.correlation_id, version=version,
        body=body, readable=lambda topic: authorize(ctx, READ, TOPIC, topic), respond=respond)


def error_response(version: int, body: dict, code: int) -> dict:
    return fetch_error(code)
