"""ShareAcknowledge (79): a share consumer's acknowledgements without a fetch, and the close of its
share session (epoch -1) (KIP-932).

The API layer of Kafka's ``KafkaApis.handleShareAcknowledgeRequest``: the checks of ShareFetch (share
groups on, the group id, READ on the group, the member id), then the share-partition manager
(:mod:`groupcoord.coordinator.share.manager`). v1 from Kafka 4.1, v2 (IsRenewAck, the response's
AcquisitionLockTimeoutMs) from 4.2; 3.9 has no share groups.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..security import GROUP, READ, TOPIC, authorize
from ..share.manager import acknowledge_error
from .share_fetch import member_id_error

API_KEY = ApiKey.SHARE_ACKNOWLEDGE
SINCE = "4.1"
VERSIONS = {"4.1": (1, 1), "4.2": (1, 2)}


def handle(ctx, version, body, respond):
    service = ctx.service
    if not service.group_coordinator.share_groups_enabled:
        respond(acknowledge_error(ErrorCode.UNSUPPORTED_VERSION))
        return
    group_id = body["group_id"]
    if group_id is None:
        respond(acknowledge_error(ErrorCode.INVALID_REQUEST))
        return
    if not authorize(ctx, READ, GROUP, group_id):
        respond(acknowledge_error(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    error = member_id_error(service.config["groupcoord.kafka.version"], body["member_id"])
    if error is not None:
        respond(acknowledge_error(error))
        return
    respond(service.share_partitions.share_acknowledge(
        node_id=ctx.node_id, version=version, body=body, readable=lambda topic: authorize(ctx, READ, TOPIC, topic)))


def error_response(version: int, body: dict, code: int) -> dict:
    return acknowledge_error(code)
