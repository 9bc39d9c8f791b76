"""SaslAuthenticate (36): one SASL/PLAIN token (RFC 4616) checked against the configured users.

Success sets the connection's principal to ``User:<name>`` (SessionLifetimeMs 0: no
re-authentication, Kafka's ``connections.max.reauth.ms`` default). Failure is
SASL_AUTHENTICATION_FAILED with Kafka's message, then the connection closes. Outside the
exchange the answer is ILLEGAL_SASL_STATE, as ``KafkaApis`` gives.
"""
from __future__ import annotations

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import error_message

API_KEY = ApiKey.SASL_AUTHENTICATE


def handle(ctx, version, body, respond):
    respond(ctx.service.security.authenticate(ctx.connection, body.get("auth_bytes") or b""))


def error_response(version: int, body: dict, code: int) -> dict:
    return {"error_code": code, "error_message": error_message(code), "auth_bytes": b"", "session_lifetime_ms": 0}
