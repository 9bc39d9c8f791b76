"""DescribeShareGroupOffsets (key 90): the start offsets of share groups' share-partitions (KIP-932),
what ``kafka-share-groups.sh --describe --offsets`` and Admin.listShareGroupOffsets read.

v0 came with Kafka 4.1; v1 (4.2, KIP-1226) adds the share-partition's Lag. Flexible from v0. A
group's Topics null asks for every share-partition of the group whose state is initialized.
"""
from ..schema import A, F, S, api

API = api(
    90, "DescribeShareGroupOffsets", valid="0-1", flexible="0+",
    request=[
        F("Groups", A(S(
            F("GroupId", "string"),
            F("Topics", A(S(
                F("TopicName", "string"),
                F("Partitions", "[]int32"),
            )), nullable="0+"),
        ))),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("Groups", A(S(
            F("GroupId", "string"),
            F("Topics", A(S(
                F("TopicName", "string"),
                F("TopicId", "uuid"),
                F("Partitions", A(S(
                    F("PartitionIndex", "int32"),
                    F("StartOffset", "int64"),
                    F("LeaderEpoch", "int32"),
                    F("Lag", "int64", "1+", default=-1),
                    F("ErrorCode", "int16"),
                    F("ErrorMessage", "string", nullable="0+", default=None),
                ))),
            ))),
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", nullable="0+", default=None),
        ))),
    ],
)
