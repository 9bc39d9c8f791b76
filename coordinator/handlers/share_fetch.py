"""ShareFetch (78): a share consumer's fetch, acknowledgements piggy-backed (KIP-932).

The API layer of Kafka's ``KafkaApis.handleShareFetchRequest``: share groups off -> UNSUPPORTED_VERSION;
a null group id -> INVALID_REQUEST (Kafka 4.3's check; 4.1 and 4.2 have none and fail later);
no READ on the group -> GROUP_AUTHORIZATION_FAILED; from Kafka 4.2 a member id empty or longer than 36
characters -> INVALID_REQUEST, in 4.1 one that is not a base64 UUID (``Uuid.fromString`` throws:
UNKNOWN_SERVER_ERROR); v2 with IsRenewAck and MaxBytes, MinBytes, MaxRecords or MaxWaitMs not 0 ->
INVALID_REQUEST. These errors are top-level, without a message (``getErrorResponse`` keeps only the
code), AcquisitionLockTimeoutMs 0 and no partitions. The rest (share sessions, acknowledgements, long
polling) is the share-partition manager's (:mod:`groupcoord.coordinator.share.manager`). v1 from Kafka
4.1, v2 from 4.2; 3.9 has no share groups.
"""
from __future__ import annotations

import base64
import binascii

import structlog

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..releases import at_least
from ..security import GROUP, READ, TOPIC, authorize
from ..share.manager import fetch_error

_log = structlog.get_logger("groupcoord.share")

API_KEY = ApiKey.SHARE_FETCH
SINCE = "4.1"
VERSIONS = {"4.1": (1, 1), "4.2": (1, 2)}

#: the longest member id Kafka 4.2+ takes
MAX_MEMBER_ID_LENGTH = 36

_RENEW_LIMITS = (("max_bytes", "maxBytes"), ("min_bytes", "minBytes"), ("max_records", "maxRecords"),
                 ("max_wait_ms", "maxWaitMs"))


def member_id_error(release: str, member_id) -> int | None:
    """The error of a member id Kafka refuses: 4.2+ ``isMemberIdValid`` (INVALID_REQUEST); 4.1 parses it
    with ``Uuid.fromString`` (a null or non-UUID one: UNKNOWN_SERVER_ERROR). None when it is taken."""
    if at_least(release, "4.2"):
        ok = member_id is not None and 0 < len(member_id) <= MAX_MEMBER_ID_LENGTH
        return None if ok else ErrorCode.INVALID_REQUEST
    return None if member_id is not None and _is_kafka_uuid(member_id) else ErrorCode.UNKNOWN_SERVER_ERROR


def _is_kafka_uuid(text: str) -> bool:
    """Kafka's Uuid.fromString: URL-safe base64 (padding optional) of exactly 16 bytes."""
    if len(text) > 24:
        return False
    try:
        return len(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))) == 16
    except (ValueError, binascii.Error):
        return False


def renew_error(body: dict) -> str | None:
    """KIP-1222: a ShareFetch that renews locks fetches nothing; what Kafka logs when it asks to
    (the response carries no message)."""
    wrong = "".join(f"{java} must be set to 0, " for field, java in _RENEW_LIMITS if body[field] != 0)
    return f"{wrong}if isRenewAck is true." if wrong else None


def handle(ctx, version, body, respond):
    service = ctx.service
    if not service.group_coordinator.share_groups_enabled:
        respond(fetch_error(ErrorCode.UNSUPPORTED_VERSION))
        return
    group_id = body["group_id"]
    if group_id is None:
        respond(fetch_error(ErrorCode.INVALID_REQUEST))       # ("Invalid group id in the request.", not sent)
        return
    if not authorize(ctx, READ, GROUP, group_id):
        respond(fetch_error(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    error = member_id_error(service.config["groupcoord.kafka.version"], body["member_id"])
    if error is not None:
        respond(fetch_error(error))        # ("Invalid member id in the request.", not sent)
        return
    if version >= 2 and body.get("is_renew_ack"):
        message = renew_error(body)
        if message is not None:
            _log.info("share fetch refused", reason=message)
            respond(fetch_error(ErrorCode.INVALID_REQUEST))
            return
    service.share_partitions.share_fetch(
        node_id=ctx.node_id, connection_id=ctx.connection_id, correlation_id=ctx.correlation_id, version=version,
        body=body, readable=lambda topic: authorize(ctx, READ, TOPIC, topic), respond=respond)


def error_response(version: int, body: dict, code: int) -> dict:
    return fetch_error(code)
