"""ListConfigResources (key 74; KIP-1142). Before Kafka 4.1 the key was ListClientMetricsResources,
whose v0 this is: v1 adds the resource types asked for and answered."""
from ..schema import A, F, S, api

API = api(
    74, "ListConfigResources", valid="0-1", flexible="0+",
    request=[
        F("ResourceTypes", "[]int8", "1+", default=[]),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("ConfigResources", A(S(
            F("ResourceName", "string"),
            F("ResourceType", "int8", "1+", default=16),
        ))),
    ],
)
