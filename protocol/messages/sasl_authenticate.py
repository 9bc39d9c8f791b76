"""SaslAuthenticate (key 36)."""
from ..schema import F, api

API = api(
    36, "SaslAuthenticate", valid="0-2", flexible="2+",
    request=[
        F("AuthBytes", "bytes"),
    ],
    response=[
        F("ErrorCode", "int16"),
        F("ErrorMessage", "string", nullable="0+"),
        F("AuthBytes", "bytes"),
        F("SessionLifetimeMs", "int64", "1+", default=0),
    ],
)
