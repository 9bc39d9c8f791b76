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

from ..group.share.manager import share_version
from ..releases import since

API_KEY = ApiKey.API_VERSIONS
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


#: the features a broker of each Kafka release reports (name -> (lowest supported, highest
#: supported, finalized level)) on a freshly formatted cluster: its ``BrokerFeatures`` and
#: ``Feature.defaultLevel`` at ``MetadataVersion.LATEST_PRODUCTION``. Listed from the release that
#: changed them on (3.9: not emulated, none reported). kraft.version is finalized at 0 (a static
#: controller quorum), which ApiVersions leaves out, as every level 0.
FEATURES = {
    "4.1": {"metadata.version": (7, 27, 27), "kraft.version": (0, 1, 0), "transaction.version": (0, 2, 2),
            "group.version": (0, 1, 1), "eligible.leader.replicas.version": (0, 1, 1), "share.version": (0, 1, 0)},
    "4.2": {"metadata.version": (7, 29, 29), "kraft.version": (0, 1, 0), "transaction.version": (0, 2, 2),
            "group.version": (0, 1, 1), "eligible.leader.replicas.version": (0, 1, 1), "share.version": (0, 1, 1),
            "streams.version": (0, 1, 1)},
    "4.3": {"metadata.version": (7, 30, 30), "kraft.version": (0, 1, 0), "transaction.version": (0, 2, 2),
            "group.version": (0, 1, 1), "eligible.leader.replicas.version": (0, 1, 1), "share.version": (0, 1, 1),
            "streams.version": (0, 1, 1)},
}
#: FinalizedFeaturesEpoch: the metadata log offset the features were read at (any, once formatted)
FEATURES_EPOCH = 1


def features(release: str, version: int, share_level: int | None = None) -> dict:
    """ApiVersions' feature fields (v3+) for a broker of that release: below v4 only the supported
    features whose lowest level is above 0 (KAFKA-17492); finalized levels of 0 are left out.
    ``share_level``: share.version as configured (None: the release's default)."""
    table = dict(since(FEATURES, release) or {})
    if share_level is not None and "share.version" in table:
        lo, hi, _ = table["share.version"]
        table["share.version"] = (lo, hi, share_level)
    return {"supported_features": [{"name": name, "min_version": lo, "max_version": hi}
                                   for name, (lo, hi, _) in table.items() if version >= 4 or lo > 0],
            "finalized_features_epoch": FEATURES_EPOCH if table else -1,
            "finalized_features": [{"name": name, "max_version_level": level, "min_version_level": level}
                                   for name, (_, _, level) in table.items() if level > 0]}


def api_keys(service) -> list[dict]:
    return [{"api_key": key, "min_version": lo, "max_version": hi}
            for key, (lo, hi) in sorted(service.supported_versions().items())]


def handle(ctx, version, body, respond):
    if version >= 3:
        name, ver = body.get("client_software_name", ""), body.get("client_software_version", "")
        if not (_SOFTWARE.match(name) and _SOFTWARE.match(ver)):
            respond({"error_code": ErrorCode.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0})
            return
    response = {"error_code": 0, "api_keys": api_keys(ctx.service), "throttle_time_ms": 0}
    if version >= 3:
        config = ctx.service.config
        response.update(features(config["groupcoord.kafka.version"], version, share_version(config)))
    respond(response)


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
