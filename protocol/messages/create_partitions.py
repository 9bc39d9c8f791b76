"""CreatePartitions (key 37): more partitions for existing topics (KIP-195)."""
from ..schema import A, F, S, api

API = api(
    37, "CreatePartitions", valid="0-3", flexible="2+",
    request=[
        F("Topics", A(S(
            F("Name", "string"),
            F("Count", "int32"),
            F("Assignments", A(S(
                F("BrokerIds", "[]int32"),
            )), nullable="0+"),
        ))),
        F("TimeoutMs", "int32"),
        F("ValidateOnly", "bool"),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("Results", A(S(
            F("Name", "string"),
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", nullable="0+", default=None),
        ))),
    ],
)
