"""SaslHandshake (17): the mechanism of a SASL listener's exchange (see ``security.py``).

On a connection that is not (or no longer) in the handshake - a PLAINTEXT listener, or after
authentication - the answer is ILLEGAL_SASL_STATE, as ``KafkaApis`` gives. An unsupported
mechanism gets UNSUPPORTED_SASL_MECHANISM with the enabled ones, then the connection closes.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey

API_KEY = ApiKey.SASL_HANDSHAKE


def handle(ctx, version, body, respond):
    respond(ctx.service.security.handshake(ctx.connection, version, body["mechanism"]))


def error_response(version: int, body: dict, code: int) -> dict:
    return {"error_code": code, "mechanisms": []}
