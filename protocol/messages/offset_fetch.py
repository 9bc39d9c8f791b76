"""OffsetFetch (key 9). One group up to v7, a batch of groups from v8; v10 names topics by id
instead of by name (KIP-848; stable from Kafka 4.2)."""
from ..schema import A, F, S, api

API = api(
    9, "OffsetFetch", valid="0-10", flexible="6+",
    request=[
        F("GroupId", "string", "0-7"),
        F("Topics", A(S(
            F("Name", "string"),
            F("PartitionIndexes", "[]int32"),
        )), "0-7", nullable="2-7"),
        F("Groups", A(S(
            F("GroupId", "string"),
            F("MemberId", "string", "9+", nullable="9+", default=None),
            F("MemberEpoch", "int32", "9+", default=-1),
            F("Topics", A(S(
                F("Name", "string", "8-9"),
                F("TopicId", "uuid", "10+"),
                F("PartitionIndexes", "[]int32"),
            )), nullable="8+"),
        )), "8+"),
        F("RequireStable", "bool", "7+", default=False),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "3+"),
        F("Topics", A(S(
            F("Name", "string"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("CommittedOffset", "int64"),
                F("CommittedLeaderEpoch", "int32", "5+", default=-1),
                F("Metadata", "string", nullable="0+"),
                F("ErrorCode", "int16"),
            ))),
        )), "0-7"),
        F("ErrorCode", "int16", "2-7", default=0),
        F("Groups", A(S(
            F("GroupId", "string"),
            F("Topics", A(S(
                F("Name", "string", "8-9"),
                F("TopicId", "uuid", "10+"),
                F("Partitions", A(S(
                    F("PartitionIndex", "int32"),
                    F("CommittedOffset", "int64"),
                    F("CommittedLeaderEpoch", "int32", default=-1),
                    F("Metadata", "string", nullable="8+"),
                    F("ErrorCode", "int16"),
                ))),
            ))),
            F("ErrorCode", "int16", default=0),
        )), "8+"),
    ],
)
