"""DescribeConfigs (key 32). v0 was removed in Kafka 4.0; we still speak it."""
from ..schema import A, F, S, api

API = api(
    32, "DescribeConfigs", valid="0-4", flexible="4+",
    request=[
        F("Resources", A(S(
            F("ResourceType", "int8"),
            F("ResourceName", "string"),
            F("ConfigurationKeys", "[]string", nullable="0+"),
        ))),
        F("IncludeSynonyms", "bool", "1+", default=False),
        F("IncludeDocumentation", "bool", "3+", default=False),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("Results", A(S(
            F("ErrorCode", "int16"),
            F("ErrorMessage", "string", nullable="0+"),
            F("ResourceType", "int8"),
            F("ResourceName", "string"),
            F("Configs", A(S(
                F("Name", "string"),
                F("Value", "string", nullable="0+"),
                F("ReadOnly", "bool"),
                F("IsDefault", "bool", "0", default=False),
                F("ConfigSource", "int8", "1+", default=-1),
                F("IsSensitive", "bool"),
                F("Synonyms", A(S(
                    F("Name", "string", "1+"),
                    F("Value", "string", "1+", nullable="0+"),
                    F("Source", "int8", "1+"),
                )), "1+"),
                F("ConfigType", "int8", "3+", default=0),
                F("Documentation", "string", "3+", nullable="0+", default=None),
            ))),
        ))),
    ],
)
