"""Fetch (key 1). We speak 0-12: v13+ identify topics by id only."""
from ..schema import A, F, S, api

API = api(
    1, "Fetch", valid="0-12", flexible="12+",
    request=[
        F("ClusterId", "string", "12+", nullable="12+", tag=0, default=None),
        F("ReplicaId", "int32", "0-14", default=-1),
        F("ReplicaState", S(
            F("ReplicaId", "int32", default=-1),
            F("ReplicaEpoch", "int64", default=-1),
        ), "15+", tag=1),
        F("MaxWaitMs", "int32"),
        F("MinBytes", "int32"),
        F("MaxBytes", "int32", "3+", default=0x7FFFFFFF),
        F("IsolationLevel", "int8", "4+", default=0),
        F("SessionId", "int32", "7+", default=0),
        F("SessionEpoch", "int32", "7+", default=-1),
        F("Topics", A(S(
            F("Topic", "string", "0-12"),
            F("TopicId", "uuid", "13+"),
            F("Partitions", A(S(
                F("Partition", "int32"),
                F("CurrentLeaderEpoch", "int32", "9+", default=-1),
                F("FetchOffset", "int64"),
                F("LastFetchedEpoch", "int32", "12+", default=-1),
                F("LogStartOffset", "int64", "5+", default=-1),
                F("PartitionMaxBytes", "int32"),
                F("ReplicaDirectoryId", "uuid", "17+", tag=0),
                F("HighWatermark", "int64", "18+", tag=1, default=0x7FFFFFFFFFFFFFFF),
            ))),
        ))),
        F("ForgottenTopicsData", A(S(
            F("Topic", "string", "7-12"),
            F("TopicId", "uuid", "13+"),
            F("Partitions", "[]int32"),
        )), "7+"),
        F("RackId", "string", "11+", default=""),
    ],
    response=[
        F("ThrottleTimeMs", "int32", "1+"),
        F("ErrorCode", "int16", "7+"),
        F("SessionId", "int32", "7+", default=0),
        F("Responses", A(S(
            F("Topic", "string", "0-12"),
            F("TopicId", "uuid", "13+"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("ErrorCode", "int16"),
                F("HighWatermark", "int64"),
                F("LastStableOffset", "int64", "4+", default=-1),
                F("LogStartOffset", "int64", "5+", default=-1),
                F("DivergingEpoch", S(
                    F("Epoch", "int32", default=-1),
                    F("EndOffset", "int64", default=-1),
                ), "12+", tag=0),
                F("CurrentLeader", S(
                    F("LeaderId", "int32", default=-1),
                    F("LeaderEpoch", "int32", default=-1),
                ), "12+", tag=1),
                F("SnapshotId", S(
                    F("EndOffset", "int64", default=-1),
                    F("Epoch", "int32", default=-1),
                ), "12+", tag=2),
                F("AbortedTransactions", A(S(
                    F("ProducerId", "int64"),
                    F("FirstOffset", "int64"),
                )), "4+", nullable="4+"),
                F("PreferredReadReplica", "int32", "11+", default=-1),
                F("Records", "records", nullable="0+"),
            ))),
        ))),
        F("NodeEndpoints", A(S(
            F("NodeId", "int32"),
            F("Host", "string"),
            F("Port", "int32"),
            F("Rack", "string", nullable="16+", default=None),
        )), "16+", tag=0),
    ],
)
