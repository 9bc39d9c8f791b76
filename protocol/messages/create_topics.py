"""CreateTopics (key 19)."""
from ..schema import A, F, S, api

API = api(
    19, "CreateTopics", valid="0-7", flexible="5+",
    request=[
        F("Topics", A(S(
            F("Name", "string"),
            F("NumPartitions", "int32"),
            F("ReplicationFactor", "int16"),
            F("Assignments", A(S(
                F("PartitionIndex", "int32"),
                F("BrokerIds", "[]int32"),
            ))),
            F("Configs", A(S(
                F("Name", "string"),
                F("Value", "string", nullable="0+"),
            ))),
        ))),
        F("timeoutMs", "int32", default=60000),
        F("validateOnly", "bool", "1+", default=False),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "2+"),
        F("Topics", A(S(
            F("Name", "string"),
            F("TopicId", "uuid", "7+"),
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", "1+", nullable="0+"),
            F("TopicConfigErrorCode", "int16", "5+", tag=0),
            F("NumPartitions", "int32", "5+", default=-1),
            F("ReplicationFactor", "int16", "5+", default=-1),
            F("Configs", A(S(
                F("Name", "string"),
                F("Value", "string", nullable="5+"),
                F("ReadOnly", "bool"),
                F("ConfigSource", "int8", default=-1),
                F("IsSensitive", "bool"),
            )), "5+", nullable="5+"),
        ))),
    ],
)
