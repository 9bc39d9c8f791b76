"""ApiVersions (18): the APIs and versions this service speaks.

Lower bounds are generous (0 wherever we decode it): old librdkafka enables
features only when specific low versions are inside the advertised ranges.
An unsupported ApiVersions version is answered by the server driver with a v0
error body (UNSUPPORTED_VERSION listing key 18), as Kafka does.
"""
from __future__ import annotations

import re

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import APIS

API_KEY = ApiKey.API_VERSIONS
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_keys(service) -> list[dict]:
    return [{"api_key": key, "min_version": lo, "max_version": hi}
            for key, (lo, hi) in sorted(service.supported_versions().items())]


def handle(ctx, version, body, respond):
    if version >= 3:
        name, ver = body.get("client_software_name", ""), body.get("client_software_version", "")
        if not (_SOFTWARE.match(name) and _SOFTWARE.match(ver)):
            respond({"error_code": ErrorCode.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0})
            return
    respond({"error_code": 0, "api_keys": api_keys(ctx.service), "throttle_time_ms": 0})


def unsupported_version_response(service) -> dict:
    lo, hi = service.supported_versions()[API_KEY]
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": API_KEY, "min_version": lo, "max_version": hi}]}


def error_response(version: int, body: dict, code: int) -> dict:
    """UNSUPPORTED_VERSION names ApiVersions' own versions, as Kafka does."""
    keys = []
    if code == ErrorCode.UNSUPPORTED_VERSION:
        lo, hi = APIS[API_KEY].request.valid
        keys = [{"api_key": API_KEY, "min_version": lo, "max_version": hi}]
    return {"error_code": code, "api_keys": keys, "throttle_time_ms": 0}
