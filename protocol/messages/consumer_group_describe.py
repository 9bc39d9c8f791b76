"""ConsumerGroupDescribe (key 69): consumer groups (KIP-848) as the admin client sees them.

v1 adds each member's MemberType (KIP-1099: -1 unknown, 0 classic, 1 consumer); the request is
the same in both versions. Flexible from v0.
"""
from ..schema import A, F, S, api


def _assignment():
    return S(
        F("TopicPartitions", A(S(
            F("TopicId", "uuid"),
            F("TopicName", "string"),
            F("Partitions", "[]int32"),
        ))),
    )


API = api(
    69, "ConsumerGroupDescribe", valid="0-1", flexible="0+",
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
                F("InstanceId", "string", nullable="0+", default=None),
                F("RackId", "string", nullable="0+", default=None),
                F("MemberEpoch", "int32"),
                F("ClientId", "string"),
                F("ClientHost", "string"),
                F("SubscribedTopicNames", "[]string"),
                F("SubscribedTopicRegex", "string", nullable="0+", default=None),
                F("Assignment", _assignment()),
                F("TargetAssignment", _assignment()),
                F("MemberType", "int8", "1+", default=-1),
            ))),
            F("AuthorizedOperations", "int32", default=-2147483648),
        ))),
    ],
)
