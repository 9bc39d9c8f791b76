"""OffsetCommit (key 8). v0-1 were removed in Kafka 4.0; we still speak them. v10 names topics by id
instead of by name (KIP-848; stable from Kafka 4.2)."""
from ..schema import A, F, S, api

API = api(
    8, "OffsetCommit", valid="0-10", flexible="8+",
    request=[
        F("GroupId", "string"),
        F("GenerationIdOrMemberEpoch", "int32", "1+", default=-1),
        F("MemberId", "string", "1+"),
        F("GroupInstanceId", "string", "7+", nullable="7+", default=None),
        F("RetentionTimeMs", "int64", "2-4", default=-1),
        F("Topics", A(S(
            F("Name", "string", "0-9"),
            F("TopicId", "uuid", "10+"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("CommittedOffset", "int64"),
                F("CommittedLeaderEpoch", "int32", "6+", default=-1),
                F("CommitTimestamp", "int64", "1", default=-1),
                F("CommittedMetadata", "string", nullable="0+"),
            ))),
        ))),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "3+"),
        F("Topics", A(S(
            F("Name", "string", "0-9"),
            F("TopicId", "uuid", "10+"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("ErrorCode", "int16"),
            ))),
        ))),
    ],
)
