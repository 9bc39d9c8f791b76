"""ConsumerGroupHeartbeat (key 68): the member's one request in the consumer group protocol (KIP-848).

v1 adds SubscribedTopicRegex, and its member ids are made by the client (KIP-1082). Flexible
from v0. The response's Assignment is a nullable struct: null unless the assignment is sent.
"""
from ..schema import A, F, S, api

API = api(
    68, "ConsumerGroupHeartbeat", valid="0-1", flexible="0+",
    request=[
        F("GroupId", "string"),
        F("MemberId", "string"),
        F("MemberEpoch", "int32"),
        F("InstanceId", "string", nullable="0+", default=None),
        F("RackId", "string", nullable="0+", default=None),
        F("RebalanceTimeoutMs", "int32", default=-1),
        F("SubscribedTopicNames", "[]string", nullable="0+", default=None),
        F("SubscribedTopicRegex", "string", "1+", nullable="1+", default=None),
        F("ServerAssignor", "string", nullable="0+", default=None),
        F("TopicPartitions", A(S(
            F("TopicId", "uuid"),
            F("Partitions", "[]int32"),
        )), nullable="0+", default=None),
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
