"""DeleteGroups (key 42). ThrottleTimeMs comes first in every version."""
from ..schema import A, F, S, api

API = api(
    42, "DeleteGroups", valid="0-2", flexible="2+",
    request=[
        F("GroupsNames", "[]string"),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("Results", A(S(
            F("GroupId", "string"),
            F("ErrorCode", "int16"),
        ))),
    ],
)
