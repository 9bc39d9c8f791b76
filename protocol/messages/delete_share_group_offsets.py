"""DeleteShareGroupOffsets (key 92): drop an empty share group's share-partition states of whole
topics (KIP-932), what ``kafka-share-groups.sh --delete-offsets`` and Admin.deleteShareGroupOffsets
send.

v0 is the only version (Kafka 4.1 to 4.3). Flexible from v0. Topic granularity only.
"""
from ..schema import A, F, S, api

API = api(
    92, "DeleteShareGroupOffsets", valid="0", flexible="0+",
    request=[
        F("GroupId", "string"),
        F("Topics", A(S(
            F("TopicName", "string"),
        ))),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("ErrorMessage", "string", nullable="0+", default=None),
        F("Responses", A(S(
            F("TopicName", "string"),
            F("TopicId", "uuid"),
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", nullable="0+", default=None),
        ))),
    ],
)
