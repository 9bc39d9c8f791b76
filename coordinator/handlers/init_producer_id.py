"""InitProducerId (22): producer ids for idempotent producers (the Java default).

Transactions are not emulated: a transactional id gets a producer id too, but no
transaction coordinator state.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey

API_KEY = ApiKey.INIT_PRODUCER_ID


def handle(ctx, version, body, respond):
    pid = body.get("producer_id", -1)
    epoch = body.get("producer_epoch", -1)
    if pid >= 0 and epoch >= 0:
        new_pid, new_epoch = pid, (epoch + 1) % 32767
    else:
        new_pid, new_epoch = ctx.service.next_producer_id(), 0
    respond({"throttle_time_ms": 0, "error_code": 0, "producer_id": new_pid, "producer_epoch": new_epoch})


def error_response(version: int, body: dict, code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}
