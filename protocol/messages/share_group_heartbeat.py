"""ShareGroupHeartbeat (key 76): the member's one request to the group coordinator in a share
group (KIP-932).

v1 is the only version Kafka 4.1 and later serve (4.0's v0 was unstable and is gone). Flexible from
v0. The response's Assignment is a nullable struct: null unless the assignment is sent; it names
topics by id only.
"""
from ..schema import A, F, S, api

API = api(
    76, "ShareGroupHeartbeat", valid="1", flexible="0+",
    request=[
        F("GroupId", "string"),
        F("MemberId", "string"),
        F("MemberEpoch", "int32"),
        F("RackId", "string", nullable="0+", default=None),
        F("SubscribedTopicNames", "[]string", nullable="0+", default=None),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("ErrorMessage", "string", nullable="0+", default=None),
        F("MemberId", "string", nullable="0+", default=None),
        F("MemberEpoch", "int32"),
        F("HeartbeatIntervalMs", "int32"),
        F("Assignment", S(
            F("TopicPartitions", A(S(
                F("TopicId", "uuid"),
                F("Partitions", "[]int32"),
            ))),
        ), nullable="0+", default=None),
    ],
)
