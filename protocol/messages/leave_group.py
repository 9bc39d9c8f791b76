"""LeaveGroup (key 13). A single MemberId up to v2, batched Members from v3 (KIP-345)."""
from ..schema import A, F, S, api

API = api(
    13, "LeaveGroup", valid="0-5", flexible="4+",
    request=[
        F("GroupId", "string"),
        F("MemberId", "string", "0-2"),
        F("Members", A(S(
            F("MemberId", "string"),
            F("GroupInstanceId", "string", nullable="3+", default=None),
            F("Reason", "string", "5+", nullable="5+", default=None),
        )), "3+"),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "1+"),
        F("ErrorCode", "int16"),
        F("Members", A(S(
            F("MemberId", "string"),
            F("GroupInstanceId", "string", nullable="3+"),
            F("ErrorCode", "int16"),
        )), "3+"),
    ],
)
