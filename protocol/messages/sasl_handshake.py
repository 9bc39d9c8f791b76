"""SaslHandshake (key 17)."""
from ..api_keys import ApiKey
from ..schema import F, api

API = api(
    ApiKey.SASL_HANDSHAKE, valid="0-1", flexible=None,
    request=[
        F("Mechanism", "string"),
    ],
    response=[
        F("ErrorCode", "int16"),
        F("Mechanisms", "[]string"),
    ],
)
