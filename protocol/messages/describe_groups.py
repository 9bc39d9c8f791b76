"""DescribeGroups (key 15)."""
from ..schema import A, F, S, api

API = api(
    15, "DescribeGroups", valid="0-6", flexible="5+",
    request=[
        F("Groups", "[]string"),
        F("IncludeAuthorizedOperations", "bool", "3+"),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "1+"),
        F("Groups", A(S(
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", "6+", nullable="6+", default=None),
            F("GroupId", "string"),
            F("GroupState", "string"),
            F("ProtocolType", "string"),
            F("ProtocolData", "string"),
            F("Members", A(S(
                F("MemberId", "string"),
                F("GroupInstanceId", "string", "4+", nullable="4+", default=None),
                F("ClientId", "string"),
                F("ClientHost", "string"),
                F("MemberMetadata", "bytes"),
                F("MemberAssignment", "bytes"),
            ))),
            F("AuthorizedOperations", "int32", "3+", default=-2147483648),
        ))),
    ],
)
