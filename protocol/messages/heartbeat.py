"""Heartbeat (key 12)."""
from ..schema import F, api

API = api(
    12, "Heartbeat", valid="0-4", flexible="4+",
    request=[
        F("GroupId", "string"),
        F("GenerationId", "int32"),
        F("MemberId", "string"),
        F("GroupInstanceId", "string", "3+", nullable="3+", default=None),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "1+"),
        F("ErrorCode", "int16"),
    ],
)
