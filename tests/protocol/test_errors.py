"""Tests for groupcoord.protocol.errors.

Expected values were checked against Apache Kafka's
clients/src/main/java/org/apache/kafka/common/protocol/Errors.java and the
exception classes under clients/src/main/java/org/apache/kafka/common/errors/
(trunk; codes 134-135 come from KIP-1331, Kafka 4.4).
"""

import inspect
import pickle

import pytest

from groupcoord.protocol.errors import (
    DecodeError,
    EncodeError,
    ErrorCode,
    KafkaError,
    ProtocolError,
    UnsupportedVersionError,
)

# (code, Kafka name) pairs verified in Errors.java
SPOT_CHECKS = [
    (-1, "UNKNOWN_SERVER_ERROR"),
    (0, "NONE"),
    (1, "OFFSET_OUT_OF_RANGE"),
    (2, "CORRUPT_MESSAGE"),
    (3, "UNKNOWN_TOPIC_OR_PARTITION"),
    (6, "NOT_LEADER_OR_FOLLOWER"),
    (7, "REQUEST_TIMED_OUT"),
    (10, "MESSAGE_TOO_LARGE"),
    (13, "NETWORK_EXCEPTION"),
    (14, "COORDINATOR_LOAD_IN_PROGRESS"),
    (15, "COORDINATOR_NOT_AVAILABLE"),
    (16, "NOT_COORDINATOR"),
    (17, "INVALID_TOPIC_EXCEPTION"),
    (22, "ILLEGAL_GENERATION"),
    (23, "INCONSISTENT_GROUP_PROTOCOL"),
    (24, "INVALID_GROUP_ID"),
    (25, "UNKNOWN_MEMBER_ID"),
    (26, "INVALID_SESSION_TIMEOUT"),
    (27, "REBALANCE_IN_PROGRESS"),
    (28, "INVALID_COMMIT_OFFSET_SIZE"),
    (30, "GROUP_AUTHORIZATION_FAILED"),
    (35, "UNSUPPORTED_VERSION"),
    (39, "INVALID_REPLICA_ASSIGNMENT"),
    (42, "INVALID_REQUEST"),
    (49, "INVALID_PRODUCER_ID_MAPPING"),
    (58, "SASL_AUTHENTICATION_FAILED"),
    (64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"),
    (68, "NON_EMPTY_GROUP"),
    (69, "GROUP_ID_NOT_FOUND"),
    (79, "MEMBER_ID_REQUIRED"),
    (81, "GROUP_MAX_SIZE_REACHED"),
    (82, "FENCED_INSTANCE_ID"),
    (86, "GROUP_SUBSCRIBED_TO_TOPIC"),
    (88, "UNSTABLE_OFFSET_COMMIT"),
    (90, "PRODUCER_FENCED"),
    (100, "UNKNOWN_TOPIC_ID"),
    (110, "FENCED_MEMBER_EPOCH"),
    (111, "UNRELEASED_INSTANCE_ID"),
    (112, "UNSUPPORTED_ASSIGNOR"),
    (113, "STALE_MEMBER_EPOCH"),
    (120, "TRANSACTION_ABORTABLE"),
    (122, "SHARE_SESSION_NOT_FOUND"),
    (128, "INVALID_REGULAR_EXPRESSION"),
    (129, "REBOOTSTRAP_REQUIRED"),
    (130, "STREAMS_INVALID_TOPOLOGY"),
    (132, "STREAMS_TOPOLOGY_FENCED"),
    (133, "SHARE_SESSION_LIMIT_REACHED"),
    (134, "GROUP_DELETION_FAILED"),
    (135, "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED"),
]

# Every code whose Java exception extends RetriableException (directly, or via
# InvalidMetadataException / RefreshRetriableException).  Everything else is not.
RETRIABLE = {
    "CORRUPT_MESSAGE", "UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT", "REPLICA_NOT_AVAILABLE",
    "NETWORK_EXCEPTION", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "NOT_CONTROLLER", "CONCURRENT_TRANSACTIONS", "KAFKA_STORAGE_ERROR",
    "FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH", "LISTENER_NOT_FOUND",
    "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "OFFSET_NOT_AVAILABLE",
    "PREFERRED_LEADER_NOT_AVAILABLE", "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    "ELECTION_NOT_NEEDED", "UNSTABLE_OFFSET_COMMIT", "THROTTLING_QUOTA_EXCEEDED",
    "UNKNOWN_TOPIC_ID", "INCONSISTENT_TOPIC_ID", "FETCH_SESSION_TOPIC_ID_ERROR",
    "SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH", "SHARE_SESSION_LIMIT_REACHED",
}

HIGHEST_CODE = 135


# --------------------------------------------------------------------------
# ErrorCode
# --------------------------------------------------------------------------

@pytest.mark.parametrize("code,name", SPOT_CHECKS)
def test_code_and_name(code, name):
    member = ErrorCode[name]
    assert int(member) == code
    assert member == code
    assert ErrorCode(code) is member
    assert member.name == name
    assert member.value == code


def test_codes_are_unique_and_contiguous():
    # an IntEnum silently turns a duplicated value into an alias; rule that out
    assert len(ErrorCode.__members__) == len(ErrorCode)
    codes = sorted(int(m) for m in ErrorCode)
    assert codes == list(range(-1, HIGHEST_CODE + 1))
    assert len(ErrorCode) == HIGHEST_CODE + 2
    assert max(ErrorCode) is ErrorCode.STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED


def test_members_are_ints():
    assert isinstance(ErrorCode.REBALANCE_IN_PROGRESS, int)
    assert ErrorCode.REBALANCE_IN_PROGRESS + 0 == 27
    assert {25: "x"}[ErrorCode.UNKNOWN_MEMBER_ID] == "x"


def test_retriable_matches_kafka_exactly():
    assert {m.name for m in ErrorCode if m.retriable} == RETRIABLE
    assert all(isinstance(m.retriable, bool) for m in ErrorCode)


@pytest.mark.parametrize("name,retriable", [
    ("COORDINATOR_NOT_AVAILABLE", True),
    ("COORDINATOR_LOAD_IN_PROGRESS", True),
    ("NOT_COORDINATOR", True),
    ("REQUEST_TIMED_OUT", True),
    ("CORRUPT_MESSAGE", True),
    ("UNKNOWN_MEMBER_ID", False),
    ("ILLEGAL_GENERATION", False),
    ("REBALANCE_IN_PROGRESS", False),
    ("FENCED_INSTANCE_ID", False),
    ("STALE_MEMBER_EPOCH", False),
    ("UNKNOWN_SERVER_ERROR", False),
    ("NONE", False),
])
def test_retriable_spot_checks(name, retriable):
    assert ErrorCode[name].retriable is retriable


def test_messages():
    # Kafka's default messages (Errors.java, 4.3), which responses carry as ErrorMessage where Kafka does
    assert ErrorCode.NONE.message == ""
    for m in ErrorCode:
        if m is ErrorCode.NONE:
            continue
        assert isinstance(m.message, str) and m.message.strip() and "\n" not in m.message, m
    assert ErrorCode.NOT_COORDINATOR.message == "This is not the correct coordinator."
    assert ErrorCode.GROUP_AUTHORIZATION_FAILED.message == "Group authorization failed."
    assert ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message == "This server does not host this topic-partition."
    assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS.message == "The coordinator is loading and hence can't process requests."


def test_exception_names():
    assert ErrorCode.NONE.exception_name is None
    assert ErrorCode.UNKNOWN_MEMBER_ID.exception_name == "UnknownMemberIdException"
    assert ErrorCode.REQUEST_TIMED_OUT.exception_name == "TimeoutException"
    assert ErrorCode.CORRUPT_MESSAGE.exception_name == "CorruptRecordException"
    assert ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED.exception_name == "UnsupportedByAuthenticationException"
    # the two Kafka classes whose names lack the usual suffix
    odd = {m.exception_name for m in ErrorCode
           if m.exception_name and not m.exception_name.endswith("Exception")}
    assert odd == {"OffsetMetadataTooLarge", "InvalidRegularExpression"}
    names = [m.exception_name for m in ErrorCode if m.exception_name]
    assert len(names) == len(set(names))


def test_lookup():
    assert ErrorCode.lookup(25) is ErrorCode.UNKNOWN_MEMBER_ID
    assert ErrorCode.lookup(-1) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert ErrorCode.lookup(ErrorCode.NOT_COORDINATOR) is ErrorCode.NOT_COORDINATOR
    unknown = ErrorCode.lookup(999)
    assert unknown == 999 and type(unknown) is int
    assert ErrorCode.lookup(-2) == -2 and type(ErrorCode.lookup(-2)) is int
    assert ErrorCode.lookup(32767) == 32767
    # never raises, even on junk
    assert ErrorCode.lookup(None) is None
    junk = []
    assert ErrorCode.lookup(junk) is junk


def test_constructor_rejects_unknown_code():
    with pytest.raises(ValueError):
        ErrorCode(999)


def test_is_error():
    assert not ErrorCode.NONE.is_error
    assert ErrorCode.UNKNOWN_SERVER_ERROR.is_error


# --------------------------------------------------------------------------
# KafkaError
# --------------------------------------------------------------------------

def test_kafka_error_default_message():
    e = KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
    assert e.code is ErrorCode.UNKNOWN_MEMBER_ID
    assert e.message == ErrorCode.UNKNOWN_MEMBER_ID.message
    assert str(e) == f"UNKNOWN_MEMBER_ID (25): {ErrorCode.UNKNOWN_MEMBER_ID.message}"
    assert not e.retriable
    assert isinstance(e, Exception)


def test_kafka_error_custom_message_and_int_code():
    e = KafkaError(15, "coordinator for group g is moving")
    assert e.code is ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert str(e) == "COORDINATOR_NOT_AVAILABLE (15): coordinator for group g is moving"
    assert e.retriable


def test_kafka_error_unknown_code():
    e = KafkaError(999)
    assert e.code == 999 and not isinstance(e.code, ErrorCode)
    assert str(e).startswith("UNKNOWN_ERROR_CODE (999): ")
    assert not e.retriable


def test_kafka_error_raise_and_pickle():
    with pytest.raises(KafkaError) as info:
        raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS)
    assert info.value.code == 27
    copy = pickle.loads(pickle.dumps(KafkaError(ErrorCode.NOT_COORDINATOR, "m")))
    assert copy.code is ErrorCode.NOT_COORDINATOR and str(copy) == "NOT_COORDINATOR (16): m"


# --------------------------------------------------------------------------
# codec errors
# --------------------------------------------------------------------------

def test_decode_error_message_and_attributes():
    e = DecodeError("JoinGroupRequest", 5, 17, "string length 300 exceeds remaining 12 bytes")
    assert str(e) == "cannot decode JoinGroupRequest v5 at offset 17: string length 300 exceeds remaining 12 bytes"
    assert (e.api, e.version, e.offset, e.reason) == (
        "JoinGroupRequest", 5, 17, "string length 300 exceeds remaining 12 bytes")
    assert isinstance(e, ProtocolError)
    assert not isinstance(e, KafkaError)


def test_decode_error_without_version_or_offset():
    assert str(DecodeError("RequestHeader", None, 0, "need 8 bytes")) == \
        "cannot decode RequestHeader at offset 0: need 8 bytes"
    e = DecodeError("ConsumerProtocolSubscription", 3, None, "bad topic count")
    assert str(e) == "cannot decode ConsumerProtocolSubscription v3: bad topic count"
    assert e.offset is None
    kw = DecodeError(api="ConsumerProtocolAssignment", reason="truncated")
    assert (kw.version, kw.offset) == (None, None)
    assert "ConsumerProtocolAssignment" in str(kw) and "truncated" in str(kw)


def test_decode_error_pickles():
    e = DecodeError("SyncGroupRequest", 3, 40, "negative array length -2")
    copy = pickle.loads(pickle.dumps(e))
    assert type(copy) is DecodeError
    assert (copy.api, copy.version, copy.offset, copy.reason) == (e.api, e.version, e.offset, e.reason)
    assert str(copy) == str(e)


def test_unsupported_version_error():
    e = UnsupportedVersionError("JoinGroupRequest", 99, 2, "supported versions are 0-9")
    assert isinstance(e, DecodeError) and isinstance(e, ProtocolError)
    assert (e.api, e.version, e.offset) == ("JoinGroupRequest", 99, 2)
    text = str(e)
    assert "JoinGroupRequest v99" in text and "offset 2" in text
    assert "unsupported" in text and "supported versions are 0-9" in text
    with pytest.raises(DecodeError):
        raise e
    copy = pickle.loads(pickle.dumps(e))
    assert type(copy) is UnsupportedVersionError and str(copy) == text


def test_encode_error():
    e = EncodeError("JoinGroupRequest", 5, "Protocols.Metadata", "bytes too long for int32 length")
    assert isinstance(e, ProtocolError) and not isinstance(e, DecodeError)
    assert (e.api, e.version, e.field, e.reason) == (
        "JoinGroupRequest", 5, "Protocols.Metadata", "bytes too long for int32 length")
    assert str(e) == "cannot encode JoinGroupRequest v5 field Protocols.Metadata: bytes too long for int32 length"
    assert str(EncodeError("HeartbeatRequest", 4, None, "missing GroupId")) == \
        "cannot encode HeartbeatRequest v4: missing GroupId"
    copy = pickle.loads(pickle.dumps(e))
    assert copy.field == "Protocols.Metadata" and str(copy) == str(e)


# --------------------------------------------------------------------------
# cross-check against kafka-python
# --------------------------------------------------------------------------

# Where kafka-python 3.0.12 disagrees with Kafka's Errors.java.  Java wins; each
# entry is (kafka-python name, Kafka name).  kafka-python keeps pre-rename names.
KAFKA_PYTHON_NAME_DIVERGENCES = {
    -1: ("UNKNOWN", "UNKNOWN_SERVER_ERROR"),
    0: ("NO_ERROR", "NONE"),
    6: ("NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER"),   # renamed by KIP-392
    10: ("MESSAGE_SIZE_TOO_LARGE", "MESSAGE_TOO_LARGE"),
    17: ("INVALID_TOPIC", "INVALID_TOPIC_EXCEPTION"),
    39: ("INVALID_REPLICATION_ASSIGNMENT", "INVALID_REPLICA_ASSIGNMENT"),
}
# kafka-python marks CorruptRecordError non-retriable; CorruptRecordException
# extends RetriableException in Kafka.
KAFKA_PYTHON_RETRIABLE_DIVERGENCES = {2}


def _kafka_python_errors():
    kerrors = pytest.importorskip("kafka.errors")
    found = {}
    for _, cls in inspect.getmembers(kerrors, inspect.isclass):
        if issubclass(cls, kerrors.BrokerResponseError) and getattr(cls, "errno", None) is not None:
            found.setdefault(cls.errno, cls)
    assert found, "kafka.errors exposes no broker errors"
    return found


def test_every_kafka_python_code_is_known_with_the_same_name():
    disagreements = {}
    for code, cls in _kafka_python_errors().items():
        ours = ErrorCode.lookup(code)
        assert isinstance(ours, ErrorCode), f"kafka-python knows code {code} ({cls.message}) but we do not"
        if cls.message != ours.name:
            disagreements[code] = (cls.message, ours.name)
    assert disagreements == KAFKA_PYTHON_NAME_DIVERGENCES


def test_kafka_python_retriable_flags():
    disagreements = {code for code, cls in _kafka_python_errors().items()
                     if bool(cls.retriable) != ErrorCode(code).retriable}
    assert disagreements == KAFKA_PYTHON_RETRIABLE_DIVERGENCES
