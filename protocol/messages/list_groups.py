"""ListGroups (key 16)."""
from ..schema import A, F, S, api

API = api(
    16, "ListGroups", valid="0-5", flexible="3+",
    request=[
        F("StatesFilter", "[]string", "4+"),
        F("TypesFilter", "[]string", "5+"),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "1+"),
        F("ErrorCode", "int16"),
        F("Groups", A(S(
            F("GroupId", "string"),
            F("ProtocolType", "string"),
            F("GroupState", "string", "4+"),
            F("GroupType", "string", "5+"),
        ))),
    ],
)
