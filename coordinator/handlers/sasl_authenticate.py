"""SaslAuthenticate (36): one SASL/PLAIN token (RFC 4616) checked against the configured users.

Success sets the connection's principal to ``User:<name>`` (SessionLifetimeMs 0: no
re-authentication, Kafka's ``connections.max.reauth.ms`` default). Failure is
SASL_AUTHENTICATION_FAILED with Kafka's message, then the connection closes. Outside the
exchange the answer is ILLEGAL_SASL_STATE, as ``KafkaApis`` gives.
"""
from __future__ import annotations

API_KEY = 36


def handle(ctx, version, body, respond):
    respond(ctx.service.security.authenticate(ctx.connection, body.get("auth_bytes") or b""))
