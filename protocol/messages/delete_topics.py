"""DeleteTopics (key 20)."""
from ..schema import A, F, S, api

API = api(
    20, "DeleteTopics", valid="0-6", flexible="4+",
    request=[
        F("Topics", A(S(
            F("Name", "string", nullable="6+", default=None),
            F("TopicId", "uuid"),
        )), "6+"),
        F("TopicNames", "[]string", "0-5"),
        F("TimeoutMs", "int32"),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "1+"),
        F("Responses", A(S(
            F("Name", "string", nullable="6+"),
            F("TopicId", "uuid", "6+"),
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", "5+", nullable="5+", default=None),
        ))),
    ],
)
