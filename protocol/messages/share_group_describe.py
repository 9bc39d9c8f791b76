"""ShareGroupDescribe (key 77): share groups (KIP-932) as the admin client sees them.

v1 is the only version Kafka 4.1 and later serve. Flexible from v0. Each member reports its current
assignment with topic names.
"""
from ..schema import A, F, S, api

API = api(
    77, "ShareGroupDescribe", valid="1", flexible="0+",
    request=[
        F("GroupIds", "[]string"),
        F("IncludeAuthorizedOperations", "bool"),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("Groups", A(S(
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", nullable="0+", default=None),
            F("GroupId", "string"),
            F("GroupState", "string"),
            F("GroupEpoch", "int32"),
            F("AssignmentEpoch", "int32"),
            F("AssignorName", "string"),
            F("Members", A(S(
                F("MemberId", "string"),
                F("RackId", "string", nullable="0+", default=None),
                F("MemberEpoch", "int32"),
                F("ClientId", "string"),
                F("ClientHost", "string"),
                F("SubscribedTopicNames", "[]string"),
                F("Assignment", S(
                    F("TopicPartitions", A(S(
                        F("TopicId", "uuid"),
                        F("TopicName", "string"),
                        F("Partitions", "[]int32"),
                    ))),
                )),
            ))),
            F("AuthorizedOperations", "int32", default=-2147483648),
        ))),
    ],
)
