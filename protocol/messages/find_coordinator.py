"""FindCoordinator (key 10). Batched (CoordinatorKeys / Coordinators) from v4."""
from ..schema import A, F, S, api

API = api(
    10, "FindCoordinator", valid="0-6", flexible="3+",
    request=[
        F("Key", "string", "0-3"),
        F("KeyType", "int8", "1+", default=0),
        F("CoordinatorKeys", "[]string", "4+"),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "1+"),
        F("ErrorCode", "int16", "0-3"),
        F("ErrorMessage", "string", "1-3", nullable="1-3"),
        F("NodeId", "int32", "0-3"),
        F("Host", "string", "0-3"),
        F("Port", "int32", "0-3"),
        F("Coordinators", A(S(
            F("Key", "string"),
            F("NodeId", "int32"),
            F("Host", "string"),
            F("Port", "int32"),
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", nullable="4+"),
        )), "4+"),
    ],
)
