"""ListOffsets (key 2). v0 (old-style offsets) was removed in Kafka 4.0; we still speak it."""
from ..schema import A, F, S, api

API = api(
    2, "ListOffsets", valid="0-7", flexible="6+",
    request=[
        F("ReplicaId", "int32"),
        F("IsolationLevel", "int8", "2+"),
        F("Topics", A(S(
            F("Name", "string"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("CurrentLeaderEpoch", "int32", "4+", default=-1),
                F("Timestamp", "int64"),
                F("MaxNumOffsets", "int32", "0", default=1),
            ))),
        ))),
        F("TimeoutMs", "int32", "10+"),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "2+"),
        F("Topics", A(S(
            F("Name", "string"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("ErrorCode", "int16"),
                F("OldStyleOffsets", "[]int64", "0"),
                F("Timestamp", "int64", "1+", default=-1),
                F("Offset", "int64", "1+", default=-1),
                F("LeaderEpoch", "int32", "4+", default=-1),
            ))),
        ))),
    ],
)
