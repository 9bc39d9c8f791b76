"""OffsetDelete (key 47). Its response puts ErrorCode before ThrottleTimeMs."""
from ..schema import A, F, S, api

API = api(
    47, "OffsetDelete", valid="0", flexible=None,
    request=[
        F("GroupId", "string"),
        F("Topics", A(S(
            F("Name", "string"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
            ))),
        ))),
    ],
    response=[
        F("ErrorCode", "int16"),
        F("ThrottleTimeMs", "int32"),
        F("Topics", A(S(
            F("Name", "string"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("ErrorCode", "int16"),
            ))),
        ))),
    ],
)
