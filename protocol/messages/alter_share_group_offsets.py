"""AlterShareGroupOffsets (key 91): set the start offsets of an empty share group's share-partitions
(KIP-932), what ``kafka-share-groups.sh --reset-offsets`` and Admin.alterShareGroupOffsets send.

v0 is the only version (Kafka 4.1 to 4.3). Flexible from v0. TopicName is the map key of the
request's and the response's topics.
"""
from ..schema import A, F, S, api

API = api(
    91, "AlterShareGroupOffsets", valid="0", flexible="0+",
    request=[
        F("GroupId", "string"),
        F("Topics", A(S(
            F("TopicName", "string"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("StartOffset", "int64"),
            ))),
        ))),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("ErrorMessage", "string", nullable="0+", default=None),
        F("Responses", A(S(
            F("TopicName", "string"),
            F("TopicId", "uuid"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("ErrorCode", "int16"),
                F("ErrorMessage", "string", nullable="0+", default=None),
            ))),
        ))),
    ],
)
