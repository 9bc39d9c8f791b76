"""ApiVersions (key 18). The response header is always v0, even for flexible versions."""
from ..schema import A, F, S, api

API = api(
    18, "ApiVersions", valid="0-4", flexible="3+",
    request=[
        F("ClientSoftwareName", "string", "3+"),
        F("ClientSoftwareVersion", "string", "3+"),
    ],
    response=[
        F("ErrorCode", "int16"),
        F("ApiKeys", A(S(
            F("ApiKey", "int16"),
            F("MinVersion", "int16"),
            F("MaxVersion", "int16"),
        ))),
        F("ThrottleTimeMs", "int32", "1+"),
        F("SupportedFeatures", A(S(
            F("Name", "string", "3+"),
            F("MinVersion", "int16", "3+"),
            F("MaxVersion", "int16", "3+"),
        )), "3+", tag=0),
        F("FinalizedFeaturesEpoch", "int64", "3+", tag=1, default=-1),
        F("FinalizedFeatures", A(S(
            F("Name", "string", "3+"),
            F("MaxVersionLevel", "int16", "3+"),
            F("MinVersionLevel", "int16", "3+"),
        )), "3+", tag=2),
        F("ZkMigrationReady", "bool", "3+", tag=3, default=False),
    ],
)
