"""Produce (key 0). v10 answers NOT_LEADER_OR_FOLLOWER with the new leader (KIP-951), v11
TRANSACTION_ABORTABLE, v12 is transactions V2 (KIP-890 part 2: the partitions join the transaction
without AddPartitionsToTxn), v13 names topics by id (KIP-516)."""
from ..schema import A, F, S, api

API = api(
    0, "Produce", valid="0-13", flexible="9+",
    request=[
        F("TransactionalId", "string", "3+", nullable="3+", default=None),
        F("Acks", "int16"),
        F("TimeoutMs", "int32"),
        F("TopicData", A(S(
            F("Name", "string", "0-12"),
            F("TopicId", "uuid", "13+"),
            F("PartitionData", A(S(
                F("Index", "int32"),
                F("Records", "records", nullable="0+"),
            ))),
        ))),
    ],
    response=[
        F("Responses", A(S(
            F("Name", "string", "0-12"),
            F("TopicId", "uuid", "13+"),
            F("PartitionResponses", A(S(
                F("Index", "int32"),
                F("ErrorCode", "int16"),
                F("BaseOffset", "int64"),
                F("LogAppendTimeMs", "int64", "2+", default=-1),
                F("LogStartOffset", "int64", "5+", default=-1),
                F("RecordErrors", A(S(
                    F("BatchIndex", "int32"),
                    F("BatchIndexErrorMessage", "string", nullable="8+", default=None),
                )), "8+"),
                F("ErrorMessage", "string", "8+", nullable="8+", default=None),
                F("CurrentLeader", S(
                    F("LeaderId", "int32", default=-1),
                    F("LeaderEpoch", "int32", default=-1),
                ), "10+", tag=0),
            ))),
        ))),
        F("ThrottleTimeMs", "int32", "1+", default=0),
        F("NodeEndpoints", A(S(
            F("NodeId", "int32"),
            F("Host", "string"),
            F("Port", "int32"),
            F("Rack", "string", nullable="10+", default=None),
        )), "10+", tag=0),
    ],
)
