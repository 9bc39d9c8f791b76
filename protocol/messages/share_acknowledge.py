"""ShareAcknowledge (key 79): a share consumer's acknowledgements without a fetch (KIP-932), also
how it closes a share session (epoch -1).

v1 is Kafka 4.1's; v2 (4.2, KIP-1222) adds IsRenewAck and the response's AcquisitionLockTimeoutMs.
Flexible from v0.
"""
from ..schema import A, F, S, api
from .share_fetch import _ACKNOWLEDGEMENT_BATCHES, _LEADER, _NODE_ENDPOINTS

API = api(
    79, "ShareAcknowledge", valid="1-2", flexible="0+",
    request=[
        F("GroupId", "string", nullable="0+", default=None),
        F("MemberId", "string", nullable="0+"),
        F("ShareSessionEpoch", "int32"),
        F("IsRenewAck", "bool", "2+", default=False),
        F("Topics", A(S(
            F("TopicId", "uuid"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("AcknowledgementBatches", _ACKNOWLEDGEMENT_BATCHES),
            ))),
        ))),
    ],
    response=[
        F("ThrottleTimeMs", "int32"),
        F("ErrorCode", "int16"),
        F("ErrorMessage", "string", nullable="0+", default=None),
        F("AcquisitionLockTimeoutMs", "int32", "2+", default=0),
        F("Responses", A(S(
            F("TopicId", "uuid"),
            F("Partitions", A(S(
                F("PartitionIndex", "int32"),
                F("ErrorCode", "int16"),
                F("ErrorMessage", "string", nullable="0+", default=None),
                F("CurrentLeader", _LEADER),
            ))),
        ))),
        F("NodeEndpoints", _NODE_ENDPOINTS),
    ],
)
