"""SyncGroup (key 14)."""
from ..schema import A, F, S, api

API = api(
    14, "SyncGroup", valid="0-5", flexible="4+",
    request=[
        F("GroupId", "string"),
        F("GenerationId", "int32"),
        F("MemberId", "string"),
        F("GroupInstanceId", "string", "3+", nullable="3+", default=None),
        F("ProtocolType", "string", "5+", nullable="5+", default=None),
        F("ProtocolName", "string", "5+", nullable="5+", default=None),
        F("Assignments", A(S(
            F("MemberId", "string"),
            F("Assignment", "bytes"),
        ))),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "1+"),
        F("ErrorCode", "int16"),
        F("ProtocolType", "string", "5+", nullable="5+", default=None),
        F("ProtocolName", "string", "5+", nullable="5+", default=None),
        F("Assignment", "bytes"),
    ],
)
