"""ShareFetch (key 78): a share consumer's fetch from a partition leader (KIP-932): it opens, carries
on or closes a share session, acknowledges what it was given before (piggy-backed acknowledgements)
and acquires records under acquisition locks.

v1 is Kafka 4.1's (4.0's v0 was unstable and is gone); v2 (4.2, KIP-1206 and KIP-1222) adds the
acquire mode and RENEW acknowledgements. Flexible from v0. Records is nullable only in v0, which no
release serves, so it is never null.
"""
from ..schema import A, F, S, api

_LEADER = S(
    F("LeaderId", "int32"),
    F("LeaderEpoch", "int32"),
)
_NODE_ENDPOINTS = A(S(
    F("NodeId", "int32"),
    F("Host", "string"),
    F("Port", "int32"),
    F("Rack", "string", nullable="0+", default=None),
))
_ACKNOWLEDGEMENT_BATCHES = A(S(
    F("FirstOffset", "int64"),
    F("LastOffset", "int64"),
    F("AcknowledgeTypes", "[]int8"),
))

API = api(
    78, "ShareFetch", valid="1-2", flexible="0+",
    request=[
        F("GroupId", "string", nullable="0+", default=None),
        F("MemberId", "string", nullable="0+"),
        F("ShareSessionEpoch", "int32"),
        F("MaxWaitMs", "int32"),
        F("MinBytes", "int32"),
        F("MaxBytes", "int32", default=0x7FFFFFFF),
        F("MaxRecords", "int32", "1+"),
        F("BatchSize", "int32", "1+"),
        F("ShareAcquireMode", "int8", "2+", default=0),
        F("IsRenewAck", "bool", "2+", default=False),
        F("Topics", A(S(
            F("TopicId", "uuid"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("PartitionMaxBytes", "int32", "0"),
                F("AcknowledgementBatches", _ACKNOWLEDGEMENT_BATCHES),
            ))),
        ))),
        F("ForgottenTopicsData", A(S(
            F("TopicId", "uuid"),
            F("Partitions", "[]int32"),
        ))),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("ErrorMessage", "string", nullable="0+", default=None),
        F("AcquisitionLockTimeoutMs", "int32", "1+"),
        F("Responses", A(S(
            F("TopicId", "uuid"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("ErrorCode", "int16"),
                F("ErrorMessage", "string", nullable="0+", default=None),
                F("AcknowledgeErrorCode", "int16"),
                F("AcknowledgeErrorMessage", "string", nullable="0+", default=None),
                F("CurrentLeader", _LEADER),
                F("Records", "records", nullable="0"),
                F("AcquiredRecords", A(S(
                    F("FirstOffset", "int64"),
                    F("LastOffset", "int64"),
                    F("DeliveryCount", "int16"),
                ))),
            ))),
        ))),
        F("NodeEndpoints", _NODE_ENDPOINTS),
    ],
)
