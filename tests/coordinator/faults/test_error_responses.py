"""Error responses for every API we serve, at every version: they encode, and carry the injected
error in each entry the request named (Kafka's ``AbstractRequest.getErrorResponse``). The handler
modules build them, so the APIs here are those with a handler (the codec declares more)."""
from __future__ import annotations

import uuid

import pytest

from groupcoord.coordinator.faults import (FaultError, error_response, merge_batch, parse_api, parse_error,
                                           split_batch)
from groupcoord.coordinator.handlers import HANDLERS
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import APIS

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")

#: one request per API, in the latest version's field names; two entries wherever the request has a list
REQUESTS = {
    0: {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b""}, {"index": 2, "records": b""}]},
        {"name": "u", "partition_data": [{"index": 1, "records": b""}]}]},
    1: {"replica_id": -1, "max_wait_ms": 10, "min_bytes": 1, "max_bytes": 1000, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [
            {"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                           "last_fetched_epoch": -1, "log_start_offset": -1,
                                           "partition_max_bytes": 100}]}],
        "forgotten_topics_data": [], "rack_id": ""},
    2: {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1,
                                      "max_num_offsets": 1}, {"partition_index": 1, "timestamp": -2,
                                                              "current_leader_epoch": -1, "max_num_offsets": 1}]}]},
    3: {"topics": [{"name": "t", "topic_id": TOPIC_ID}, {"name": "u", "topic_id": TOPIC_ID}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
    8: {"group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m", "group_instance_id": None,
        "retention_time_ms": -1, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                                          "commit_timestamp": -1, "committed_metadata": ""}]}]},
    9: {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}], "require_stable": False,
        "groups": [{"group_id": "g", "member_id": None, "member_epoch": -1,
                    "topics": [{"name": "t", "partition_indexes": [0, 1]}]},
                   {"group_id": "h", "member_id": None, "member_epoch": -1, "topics": None}]},
    10: {"key": "g", "key_type": 0, "coordinator_keys": ["g", "h"]},
    11: {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 30000, "member_id": "",
         "group_instance_id": None, "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}],
         "reason": None},
    12: {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None},
    13: {"group_id": "g", "member_id": "m", "members": [{"member_id": "m", "group_instance_id": None}]},
    14: {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None,
         "protocol_type": "consumer", "protocol_name": "range", "assignments": []},
    15: {"groups": ["g", "h"], "include_authorized_operations": True},
    16: {"states_filter": [], "types_filter": []},
    17: {"mechanism": "PLAIN"},
    18: {"client_software_name": "x", "client_software_version": "1"},
    19: {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []},
                    {"name": "u", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
         "timeout_ms": 1000, "validate_only": False},
    20: {"topics": [{"name": "t", "topic_id": TOPIC_ID}, {"name": "u", "topic_id": TOPIC_ID}],
         "topic_names": ["t", "u"], "timeout_ms": 1000},
    22: {"transactional_id": None, "transaction_timeout_ms": 1000, "producer_id": -1, "producer_epoch": -1},
    24: {"transactions": [{"transactional_id": "tx", "producer_id": 7, "producer_epoch": 0, "verify_only": False,
                           "topics": [{"name": "t", "partitions": [0, 1]}]}],
         "v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 7, "v3_and_below_producer_epoch": 0,
         "v3_and_below_topics": [{"name": "t", "partitions": [0, 1]}]},
    25: {"transactional_id": "tx", "producer_id": 7, "producer_epoch": 0, "group_id": "g"},
    26: {"transactional_id": "tx", "producer_id": 7, "producer_epoch": 0, "committed": True},
    27: {"markers": [{"producer_id": 7, "producer_epoch": 0, "transaction_result": False, "coordinator_epoch": 0,
                      "topics": [{"name": "t", "partition_indexes": [0, 1]}], "transaction_version": 0}]},
    28: {"transactional_id": "tx", "group_id": "g", "producer_id": 7, "producer_epoch": 0, "generation_id": 1,
         "member_id": "m", "group_instance_id": None, "topics": [{"name": "t", "partitions": [
             {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "committed_metadata": ""},
             {"partition_index": 1, "committed_offset": 6, "committed_leader_epoch": -1, "committed_metadata": None}]}]},
    32: {"resources": [{"resource_type": 32, "resource_name": "g", "configuration_keys": None},
                       {"resource_type": 4, "resource_name": "0", "configuration_keys": ["group.max.size"]}],
         "include_synonyms": False, "include_documentation": False},
    36: {"auth_bytes": b"\x00u\x00p"},
    37: {"topics": [{"name": "t", "count": 3, "assignments": None}, {"name": "u", "count": 2, "assignments": None}],
         "timeout_ms": 1000, "validate_only": False},
    42: {"groups_names": ["g", "h"]},
    44: {"resources": [{"resource_type": 32, "resource_name": "g", "configs": [
        {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}]},
                       {"resource_type": 32, "resource_name": "h", "configs": []}], "validate_only": False},
    47: {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]},
    65: {"transactional_ids": ["tx", "ty"]},
    66: {"state_filters": ["Ongoing"], "producer_id_filters": [7], "duration_filter": -1,
         "transactional_id_pattern": None},
    68: {"group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": None, "rack_id": None,
         "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
         "server_assignor": None, "topic_partitions": []},
    69: {"group_ids": ["g", "h"], "include_authorized_operations": False},
    74: {"resource_types": [32]},
    76: {"group_id": "g", "member_id": "m", "member_epoch": 0, "rack_id": None, "subscribed_topic_names": ["t"]},
    77: {"group_ids": ["g", "h"], "include_authorized_operations": False},
    78: {"group_id": "g", "member_id": "m", "share_session_epoch": 0, "max_wait_ms": 500, "min_bytes": 1,
         "max_bytes": 1024, "max_records": 10, "batch_size": 10, "topics": [
             {"topic_id": uuid.UUID(int=7), "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}],
         "forgotten_topics_data": []},
    79: {"group_id": "g", "member_id": "m", "share_session_epoch": 1, "topics": [
        {"topic_id": uuid.UUID(int=7), "partitions": [{"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": 0, "last_offset": 3, "acknowledge_types": [1]}]}]}]},
    90: {"groups": [{"group_id": "g", "topics": [{"topic_name": "t", "partitions": [0, 1]}]},
                    {"group_id": "h", "topics": None}]},
    91: {"group_id": "g", "topics": [{"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 5},
                                                                        {"partition_index": 1, "start_offset": 0}]}]},
    92: {"group_id": "g", "topics": [{"topic_name": "t"}, {"topic_name": "u"}]},
}

#: where the error goes: (path to a list of entries, or None for the top level)
PER_ENTRY = {
    0: lambda r: [p for t in r["responses"] for p in t["partition_responses"]],
    1: lambda r: [p for t in r["responses"] for p in t["partitions"]],
    2: lambda r: [p for t in r["topics"] for p in t["partitions"]],
    3: lambda r: r["topics"],
    8: lambda r: [p for t in r["topics"] for p in t["partitions"]],
    15: lambda r: r["groups"],
    19: lambda r: r["topics"],
    20: lambda r: r["responses"],
    28: lambda r: [p for t in r["topics"] for p in t["partitions"]],
    32: lambda r: r["results"],
    37: lambda r: r["results"],
    42: lambda r: r["results"],
    44: lambda r: r["responses"],
    65: lambda r: r["transaction_states"],
    69: lambda r: r["groups"],
    77: lambda r: r["groups"],
    90: lambda r: r["groups"],
}
EXPECTED_ENTRIES = {0: 3, 1: 1, 2: 2, 3: 2, 8: 1, 28: 2, 15: 2, 19: 2, 20: 2, 32: 2, 37: 2, 42: 2, 44: 2, 65: 2, 69: 2,
                    77: 2, 90: 2}


def _cases():
    for key in sorted(HANDLERS):
        api = APIS[key]
        for version in api.versions:
            yield pytest.param(key, version, id=f"{api.name}-v{version}")


def test_every_api_has_a_sample_request():
    assert set(REQUESTS) == set(HANDLERS)
    assert len(HANDLERS) == 41
    assert set(HANDLERS) <= set(APIS)


def _error_codes(obj) -> list[int]:
    """Every ErrorCode field of a decoded response, depth first (AddPartitionsToTxn's are
    ``partition_error_code``)."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("error_code", "partition_error_code"):
                found.append(v)
            else:
                found.extend(_error_codes(v))
    elif isinstance(obj, list):
        for v in obj:
            found.extend(_error_codes(v))
    return found


@pytest.mark.parametrize("key,version", list(_cases()))
def test_error_response_encodes_and_carries_the_error(key, version):
    api = APIS[key]
    code = ErrorCode.COORDINATOR_NOT_AVAILABLE
    # the request as the server would decode it at this version
    request = api.request.decode(api.request.encode(REQUESTS[key], version), version)
    response = error_response(key, version, request, code)
    decoded = api.response.decode(api.response.encode(response, version), version)
    codes = _error_codes(decoded)
    assert codes and set(codes) == {int(code)}, decoded
    if key in PER_ENTRY:
        entries = PER_ENTRY[key](decoded)
        assert len(entries) == EXPECTED_ENTRIES[key]
        assert all(e["error_code"] == code for e in entries)
    if key == 9:
        if version >= 8:
            assert [g["group_id"] for g in decoded["groups"]] == ["g", "h"]
        elif version < 2:        # no top-level error field: it is in each partition asked for
            assert [p["partition_index"] for t in decoded["topics"] for p in t["partitions"]] == [0, 1]
    if key == 10 and version >= 4:
        assert [c["key"] for c in decoded["coordinators"]] == ["g", "h"]
        assert all(c["node_id"] == -1 for c in decoded["coordinators"])
    if key == 10 and version < 4:
        assert decoded["node_id"] == -1


def test_produce_with_acks_0_has_no_response():
    assert error_response(0, 9, {**REQUESTS[0], "acks": 0}, ErrorCode.NOT_LEADER_OR_FOLLOWER) is None


def test_batched_requests_split_and_merge_around_the_faulted_group():
    body = {"groups_names": ["g", "h", "g", "k"]}
    assert split_batch(42, body, "g") == {"groups_names": ["h", "k"]}
    handled = {"throttle_time_ms": 0, "results": [{"group_id": "h", "error_code": 69},
                                                  {"group_id": "k", "error_code": 0}]}
    assert merge_batch(42, body, handled, "g", ErrorCode.NOT_COORDINATOR)["results"] == [
        {"group_id": "g", "error_code": 16}, {"group_id": "h", "error_code": 69}, {"group_id": "k", "error_code": 0}]
    body = {"groups": [{"group_id": "h", "topics": None}, {"group_id": "g", "topics": None}]}
    assert split_batch(9, body, "g") == {"groups": [{"group_id": "h", "topics": None}]}
    merged = merge_batch(9, body, {"groups": [{"group_id": "h", "topics": [], "error_code": 0}]}, "g", 15)
    assert merged["groups"] == [{"group_id": "h", "topics": [], "error_code": 0},
                                {"group_id": "g", "topics": [], "error_code": 15}]


@pytest.mark.parametrize("value,key", [("JoinGroup", 11), ("JOIN_GROUP", 11), ("join-group", 11), (12, 12),
                                       ("12", 12), ("OffsetFetch", 9), ("SaslAuthenticate", 36)])
def test_parse_api(value, key):
    assert parse_api(value) == key


@pytest.mark.parametrize("value", ["JoinGroups", 4, 99, True, 1.5, None])
def test_parse_api_rejects(value):
    with pytest.raises(FaultError):
        parse_api(value)


def test_parse_error():
    assert parse_error("not_coordinator") == ErrorCode.NOT_COORDINATOR
    assert parse_error(27) == ErrorCode.REBALANCE_IN_PROGRESS
    assert parse_error("-1") == ErrorCode.UNKNOWN_SERVER_ERROR
    for bad in ("NONE", 0, "NO_SUCH_ERROR", 9999, [], False):
        with pytest.raises(FaultError):
            parse_error(bad)
