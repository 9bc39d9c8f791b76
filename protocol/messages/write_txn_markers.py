"""WriteTxnMarkers (key 27): the transaction coordinator has the brokers write commit or abort markers
(and kafka-transactions.sh abort sends it). v0 (Kafka 3.9) was removed in 4.0; v2 adds the marker's
TransactionVersion (KIP-1228)."""
from ..schema import A, F, S, api

API = api(
    27, "WriteTxnMarkers", valid="0-2", flexible="1+",
    request=[
        F("Markers", A(S(
            F("ProducerId", "int64"),
            F("ProducerEpoch", "int16"),
            F("TransactionResult", "bool"),
            F("Topics", A(S(
                F("Name", "string"),
                F("PartitionIndexes", "[]int32"),
            ))),
            F("CoordinatorEpoch", "int32"),
            F("TransactionVersion", "int8", "2+", default=0),
        ))),
    ],
    response=[
        F("Markers", A(S(
            F("ProducerId", "int64"),
            F("Topics", A(S(
                F("Name", "string"),
                F("Partitions", A(S(
                    F("PartitionIndex", "int32"),
                    F("ErrorCode", "int16"),
                ))),
            ))),
        ))),
    ],
)
