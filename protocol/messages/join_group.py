"""JoinGroup (key 11)."""
from ..schema import A, F, S, api

API = api(
    11, "JoinGroup", valid="0-9", flexible="6+",
    request=[
        F("GroupId", "string"),
        F("SessionTimeoutMs", "int32"),
        F("RebalanceTimeoutMs", "int32", "1+", default=-1),
        F("MemberId", "string"),
        F("GroupInstanceId", "string", "5+", nullable="5+", default=None),
        F("ProtocolType", "string"),
        F("Protocols", A(S(
            F("Name", "string"),
            F("Metadata", "bytes"),
        ))),
        F("Reason", "string", "8+", nullable="8+", default=None),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "2+"),
        F("ErrorCode", "int16"),
        F("GenerationId", "int32", default=-1),
        F("ProtocolType", "string", "7+", nullable="7+", default=None),
        F("ProtocolName", "string", nullable="7+"),
        F("Leader", "string"),
        F("SkipAssignment", "bool", "9+", default=False),
        F("MemberId", "string"),
        F("Members", A(S(
            F("MemberId", "string"),
            F("GroupInstanceId", "string", "5+", nullable="5+", default=None),
            F("Metadata", "bytes"),
        ))),
    ],
)
