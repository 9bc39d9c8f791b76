"""IncrementalAlterConfigs (key 44)."""
from ..schema import A, F, S, api

API = api(
    44, "IncrementalAlterConfigs", valid="0-1", flexible="1+",
    request=[
        F("Resources", A(S(
            F("ResourceType", "int8"),
            F("ResourceName", "string"),
            F("Configs", A(S(
                F("Name", "string"),
                F("ConfigOperation", "int8"),
                F("Value", "string", nullable="0+"),
            ))),
        ))),
        F("ValidateOnly", "bool"),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("Responses", A(S(
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", nullable="0+"),
            F("ResourceType", "int8"),
            F("ResourceName", "string"),
        ))),
    ],
)
