"""ConsumerGroupHeartbeat (68), the consumer group protocol (KIP-848).

API/service layer of Kafka 4.x (``KafkaApis.handleConsumerGroupHeartbeat``,
``GroupCoordinatorService.consumerGroupHeartbeat``): without ``consumer`` in
group.coordinator.rebalance.protocols -> UNSUPPORTED_VERSION (a client reports it as a fatal
error instead of waiting); READ on the group or GROUP_AUTHORIZATION_FAILED; DESCRIBE on every
subscribed topic or TOPIC_AUTHORIZATION_FAILED; then the request's validation (INVALID_REQUEST,
UNSUPPORTED_ASSIGNOR), NOT_COORDINATOR, and the core. With an authorizer, the core is given the
principal's DESCRIBE check of topics: the topics a regex resolves to in this heartbeat are those the
principal may describe (Kafka 4.0's ``filterTopicDescribeAuthorizedTopics``; denials not logged).

Version shims: v1 adds SubscribedTopicRegex and requires a client-made MemberId (KIP-1082). v0 has
no SubscribedTopicRegex field: the core sees None (Kafka's client refuses to send a regex at v0,
"The cluster does not support regular expressions resolution on ConsumerGroupHeartbeat API").
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from ..group.consumer.requests import ConsumerGroupHeartbeatRequest, heartbeat_error
from ..security import DESCRIBE, GROUP, READ, TOPIC, authorize, authorizer_of
from .common import one_group

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT
VERSIONS = {"3.9": (0, 0), "4.1": (0, 1)}      # v1 came with Kafka 4.0


def handle(ctx, version, body, respond):
    service = ctx.service
    coordinator = service.group_coordinator
    if not coordinator.consumer_protocol_enabled:
        respond(heartbeat_error(ErrorCode.UNSUPPORTED_VERSION, "The new consumer group protocol is not enabled "
                                "(group.coordinator.rebalance.protocols)."))
        return
    group_id = body["group_id"]
    if not authorize(ctx, READ, GROUP, group_id):
        respond(heartbeat_error(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    names = body.get("subscribed_topic_names")
    if names and not all(authorize(ctx, DESCRIBE, TOPIC, name) for name in names):
        respond(heartbeat_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        return
    owned = body.get("topic_partitions")
    request = ConsumerGroupHeartbeatRequest(
        group_id=group_id,
        member_id=body.get("member_id") or "",
        member_epoch=body["member_epoch"],
        instance_id=body.get("instance_id"),
        rack_id=body.get("rack_id"),
        rebalance_timeout_ms=body.get("rebalance_timeout_ms", -1),
        subscribed_topic_names=names,
        subscribed_topic_regex=body.get("subscribed_topic_regex") if version >= 1 else None,
        server_assignor=body.get("server_assignor"),
        topic_partitions=None if owned is None else [(t["topic_id"], list(t["partitions"])) for t in owned],
        client_id=ctx.client_id,
        client_host=ctx.client_host,
        version=version,
        describable=(None if authorizer_of(ctx) is None
                     else lambda topic: authorize(ctx, DESCRIBE, TOPIC, topic, log_denied=False)),
    )
    error = request.error(coordinator.consumer.assignors)
    if error is not None:
        respond(heartbeat_error(*error))
        return
    if not service.is_coordinator(group_id, ctx.node_id):
        respond(heartbeat_error(ErrorCode.NOT_COORDINATOR))
        return
    coordinator.consumer_group_heartbeat(respond, request)


def error_response(version: int, body: dict, code: int) -> dict:
    return heartbeat_error(code)


groups = one_group
