"""Metadata (key 3)."""
from ..schema import A, F, S, api

API = api(
    3, "Metadata", valid="0-13", flexible="9+",
    request=[
        F("Topics", A(S(
            F("TopicId", "uuid", "10+"),
            F("Name", "string", nullable="10+"),
        )), nullable="1+"),
        F("AllowAutoTopicCreation", "bool", "4+", default=True),
        F("IncludeClusterAuthorizedOperations", "bool", "8-10"),
        F("IncludeTopicAuthorizedOperations", "bool", "8+"),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "3+"),
        F("Brokers", A(S(
            F("NodeId", "int32"),
            F("Host", "string"),
            F("Port", "int32"),
            F("Rack", "string", "1+", nullable="1+", default=None),
        ))),
        F("ClusterId", "string", "2+", nullable="2+", default=None),
        F("ControllerId", "int32", "1+", default=-1),
        F("Topics", A(S(
            F("ErrorCode", "int16"),
            F("Name", "string", nullable="12+"),
            F("TopicId", "uuid", "10+"),
            F("IsInternal", "bool", "1+", default=False),
            F("Partitions", A(S(
                F("ErrorCode", "int16"),
                F("PartitionIndex", "int32"),
                F("LeaderId", "int32"),
                F("LeaderEpoch", "int32", "7+", default=-1),
                F("ReplicaNodes", "[]int32"),
                F("IsrNodes", "[]int32"),
                F("OfflineReplicas", "[]int32", "5+"),
            ))),
            F("TopicAuthorizedOperations", "int32", "8+", default=-2147483648),
        ))),
        F("ClusterAuthorizedOperations", "int32", "8-10", default=-2147483648),
        F("ErrorCode", "int16", "13+"),
    ],
)
