"""SaslHandshake (key 17)."""
from ..schema import F, api

API = api(
    17, "SaslHandshake", valid="0-1", flexible=None,
    request=[
        F("Mechanism", "string"),
    ],
    response=[
        F("ErrorCode", "int16"),
        F("Mechanisms", "[]string"),
    ],
)
