"""AddOffsetsToTxn (key 25): the group's offsets-topic partition joins the transaction."""
from ..schema import F, api

API = api(
    25, "AddOffsetsToTxn", valid="0-4", flexible="3+",
    request=[
        F("TransactionalId", "string"),
        F("ProducerId", "int64"),
        F("ProducerEpoch", "int16"),
        F("GroupId", "string"),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
    ],
)
