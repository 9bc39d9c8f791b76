"""SASL/PLAIN and ACLs on the sans-I/O service: token parsing, JAAS users, the authorizer's
decisions, the connection gate's state machine and the per-API authorization of the group handlers."""
from __future__ import annotations

import json

import pytest

from groupcoord.coordinator.config import BrokerConfig, ConfigError
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.security import (Acl, Authorizer, SaslAuthenticationError, UserDatabase,
                                             parse_jaas_users, parse_plain_token, parse_users)
from groupcoord.coordinator.service import Service
from groupcoord.protocol.consumer import encode_subscription
from groupcoord.protocol.errors import ErrorCode

E = ErrorCode
SUB = encode_subscription({"topics": ["a"], "user_data": None}, 0)
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


# ---- PLAIN tokens, users, JAAS ----------------------------------------------------------------------------
def test_plain_token_splits_as_rfc4616():
    assert parse_plain_token(b"\0alice\0pw") == ("", "alice", "pw")
    assert parse_plain_token("z\0alice\0p\u00e4ss".encode()) == ("z", "alice", "p\u00e4ss")
    for bad, n in ((b"alice\0pw", 2), (b"a\0b\0c\0d", 4), (b"nonul", 1)):
        with pytest.raises(SaslAuthenticationError, match=f"expected 3 tokens, got {n}"):
            parse_plain_token(bad)
    with pytest.raises(SaslAuthenticationError, match="UTF-8"):
        parse_plain_token(b"\0a\0\xff")


@pytest.mark.parametrize("token,message", [
    (b"\0\0pw", "username not specified"),
    (b"\0alice\0", "password not specified"),
    (b"\0alice\0wrong", "Invalid username or password"),
    (b"\0mallory\0alice-secret", "Invalid username or password"),
    (b"bob\0alice\0alice-secret", "authorization id that is different from username"),
])
def test_plain_authentication_failures_use_kafkas_messages(token, message):
    with pytest.raises(SaslAuthenticationError, match=message):
        UserDatabase({"alice": "alice-secret"}).authenticate(token)


def test_plain_authzid_may_be_empty_or_the_user():
    users = UserDatabase({"alice": "alice-secret"})
    assert users.authenticate(b"\0alice\0alice-secret") == "alice"
    assert users.authenticate(b"alice\0alice\0alice-secret") == "alice"


def test_jaas_users_from_kafkas_plain_login_module_line():
    assert parse_jaas_users(JAAS) == {"admin": "admin-secret", "alice": "alice-secret"}
    quoted = ("org.apache.kafka.common.security.plain.PlainLoginModule required\n"
              "  user_bob='b;o=b' user_carol=\"say \\\"hi\\\"\" user_dave=plain ;")
    assert parse_jaas_users(quoted) == {"bob": "b;o=b", "carol": 'say "hi"', "dave": "plain"}
    for bad, match in [
        ('com.example.Other required user_a="x";', "not supported"),
        (JAAS.rstrip(";"), "expected"),
        ('org.apache.kafka.common.security.plain.PlainLoginModule mandatory user_a="x";', "control flag"),
        ('org.apache.kafka.common.security.plain.PlainLoginModule required user_a;', "key=value"),
    ]:
        with pytest.raises(ConfigError, match=match):
            parse_jaas_users(bad)


def test_simple_user_list():
    assert parse_users("alice:secret, bob:p:w,") == {"alice": "secret", "bob": "p:w"}
    with pytest.raises(ConfigError, match="expected name:password, got 'alice'"):
        parse_users("alice")


# ---- configuration ----------------------------------------------------------------------------------------
def service(**config) -> Service:
    return Service(BrokerConfig(config, profile="test"))


@pytest.mark.parametrize("config,match", [
    ({"sasl.enabled.mechanisms": "PLAIN"}, "needs users"),
    ({"sasl.enabled.mechanisms": "SCRAM-SHA-256", "groupcoord.sasl.users": "a:b"}, "'SCRAM-SHA-256' is not supported"),
    ({"super.users": "admin"}, "super.users: principal must be 'Type:name'"),
    ({"groupcoord.acls.file": "acls.json"}, "needs the authorizer"),
    ({"groupcoord.acls.enabled": "true", "groupcoord.acls.file": "/nonexistent/acls.json"}, "cannot read"),
    ({"connection.failed.authentication.delay.ms": -1}, "Value must be at least 0"),
])
def test_bad_security_config_is_a_clear_error(config, match):
    with pytest.raises(ConfigError, match=match):
        service(**config)


def test_users_from_both_keys_and_acls_from_a_file(tmp_path):
    path = tmp_path / "acls.json"
    path.write_text(json.dumps([{"principal": "User:alice", "resource_type": "group", "resource_name": "g",
                                 "operation": "read"}]))
    svc = service(**{"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                     "groupcoord.sasl.users": "bob:bob-pw", "authorizer.class.name":
                     "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "groupcoord.acls.file": str(path),
                     "super.users": "User:admin;User:root"})
    sec = svc.security
    assert sec.users.users == {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-pw"}
    assert [a.as_dict() for a in sec.authorizer.acls()] == [
        {"principal": "User:alice", "host": "*", "resource_type": "GROUP", "resource_name": "g",
         "pattern_type": "LITERAL", "operation": "READ", "permission_type": "ALLOW"}]
    assert sec.authorizer.super_users == {"User:admin", "User:root"}
    assert svc.before_request == [sec.gate]

    path.write_text(json.dumps([{"principal": "User:alice", "resource_type": "GROUP", "resource_name": "g",
                                 "operation": "READ"}, {"principal": "alice", "resource_type": "GROUP",
                                                        "resource_name": "g", "operation": "READ"}]))
    with pytest.raises(ConfigError, match=r"ACL #1: principal must be"):
        service(**{"groupcoord.acls.enabled": True, "groupcoord.acls.file": str(path)})
    path.write_text("{")
    with pytest.raises(ConfigError, match="is not JSON"):
        service(**{"groupcoord.acls.enabled": True, "groupcoord.acls.file": str(path)})


def test_without_security_nothing_is_installed():
    svc = service()
    assert svc.before_request == [] and svc.security.authorizer is None and not svc.security.sasl_enabled


# ---- the authorizer ----------------------------------------------------------------------------------------
def acl(principal, rtype, name, op, perm="ALLOW", pattern="LITERAL", host="*") -> Acl:
    return Acl.from_dict({"principal": principal, "resource_type": rtype, "resource_name": name, "operation": op,
                          "permission_type": perm, "pattern_type": pattern, "host": host})


def test_acl_validation():
    for bad, match in [
        ({"principal": "User:a", "resource_type": "GROUP", "resource_name": "g"}, "needs 'operation'"),
        ({"principal": "User:a", "resource_type": "SHELF", "resource_name": "g", "operation": "READ"}, "resource_type"),
        ({"principal": "User:a", "resource_type": "GROUP", "resource_name": "", "operation": "READ"}, "resource_name"),
        ({"principal": "User:a", "resource_type": "GROUP", "resource_name": "g", "operation": "WRITE"},
         "does not apply to a GROUP"),
        ({"principal": "User:a", "resource_type": "CLUSTER", "resource_name": "c", "operation": "DESCRIBE"},
         "kafka-cluster"),
        ({"principal": "User:a", "resource_type": "GROUP", "resource_name": "g", "operation": "READ",
          "permission": "DENY"}, "unknown ACL field"),
    ]:
        with pytest.raises(ValueError, match=match):
            Acl.from_dict(bad)


def test_standard_authorizer_semantics():
    az = Authorizer([
        acl("User:alice", "GROUP", "billing", "READ"),
        acl("User:alice", "GROUP", "billing-", "ALL", pattern="PREFIXED"),
        acl("User:alice", "GROUP", "billing-secret", "READ", perm="DENY"),
        acl("User:*", "GROUP", "public", "READ"),
        acl("User:bob", "GROUP", "*", "DESCRIBE"),
        acl("User:bob", "GROUP", "billing", "READ", perm="DENY"),
        acl("User:carol", "TOPIC", "t", "READ", host="10.0.0.1"),
    ], super_users=["User:admin"])

    def ok(principal, op, rtype, name, host="127.0.0.1"):
        return az.authorize(principal, host, op, rtype, name)

    assert ok("User:alice", "READ", "GROUP", "billing")
    assert ok("User:alice", "DESCRIBE", "GROUP", "billing")            # READ implies DESCRIBE
    assert not ok("User:alice", "DELETE", "GROUP", "billing")
    assert ok("User:alice", "DELETE", "GROUP", "billing-eu")            # PREFIXED ALL
    assert not ok("User:alice", "READ", "GROUP", "billing-secret")      # DENY wins over the PREFIXED ALLOW
    assert ok("User:alice", "DESCRIBE", "GROUP", "billing-secret")      # a DENY of READ does not deny DESCRIBE
    assert not ok("User:alice", "READ", "GROUP", "billingx")            # LITERAL is not a prefix
    assert ok("User:zed", "READ", "GROUP", "public") and ok("User:ANONYMOUS", "DESCRIBE", "GROUP", "public")
    assert ok("User:bob", "DESCRIBE", "GROUP", "anything")              # LITERAL '*'
    assert not ok("User:bob", "READ", "GROUP", "billing")
    assert ok("User:carol", "READ", "TOPIC", "t", host="10.0.0.1") and not ok("User:carol", "READ", "TOPIC", "t")
    assert ok("User:admin", "DELETE", "GROUP", "billing")               # super user
    # no ACL at all for the resource: denied unless allow.everyone.if.no.acl.found
    assert not ok("User:alice", "READ", "TOPIC", "orders")
    az.allow_everyone_if_no_acl_found = True
    assert ok("User:alice", "READ", "TOPIC", "orders")
    assert not ok("User:zed", "READ", "TOPIC", "t")                     # t has ACLs (for carol): no default
    assert not ok("User:zed", "READ", "GROUP", "x")                     # bob's GROUP '*' ACL matches every group


def test_authorized_operations_bits_and_removal():
    az = Authorizer([acl("User:alice", "GROUP", "g", "READ"), acl("User:alice", "GROUP", "g", "DELETE")])
    assert az.authorized_operations("User:alice", "h", "GROUP", "g") == (1 << 3) | (1 << 6) | (1 << 8)
    assert az.authorized_operations("User:bob", "h", "GROUP", "g") == 0
    assert [a.operation for a in az.remove({"operation": "DELETE"})] == ["DELETE"]
    assert az.authorized_operations("User:alice", "h", "GROUP", "g") == (1 << 3) | (1 << 8)
    az.add([acl("User:alice", "GROUP", "g", "READ")])
    assert len(az.acls()) == 1                                         # a binding is kept once


# ---- the connection gate and the SASL handlers ------------------------------------------------------------------
class Conn:
    """What the TCP driver's connection offers the service."""

    def __init__(self):
        self.principal, self.authenticated, self.closed = "User:ANONYMOUS", False, False
        self.conn_id, self.client_host = 1, "/127.0.0.1"

    def close(self):
        self.closed = True


def call(svc, conn, api_key, version, body, host="/127.0.0.1", principal=None):
    """Drive one request as server.py does; returns the response, "closed", or ("delayed", ms, response)."""
    ctx = RequestContext(svc, 0, "c", host, api_key, version, 1, 1,
                         principal or (conn.principal if conn else "User:ANONYMOUS"), conn)
    verdict = None
    for hook in svc.before_request:
        verdict = hook(ctx, body)
        if verdict is not None:
            break
    if verdict is not None and verdict.close:
        conn.close()
        return "closed"
    out = []
    svc.handle(ctx, body, out.append)
    if verdict is not None and verdict.delay_ms:
        return ("delayed", verdict.delay_ms, out[0])
    return out[0] if out else None


def sasl_service(**extra):
    return service(**{"sasl.enabled.mechanisms": "PLAIN", "groupcoord.sasl.users": "alice:alice-secret", **extra})


API_VERSIONS = (18, 3, {"client_software_name": "t", "client_software_version": "1"})
METADATA = (3, 1, {"topics": None})


def test_gate_lets_only_the_sasl_exchange_through_then_everything():
    svc = sasl_service()
    conn = Conn()
    assert call(svc, conn, *API_VERSIONS)["error_code"] == 0
    assert call(svc, conn, 17, 1, {"mechanism": "PLAIN"}) == {"error_code": 0, "mechanisms": ["PLAIN"]}
    resp = call(svc, conn, 36, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    assert resp == {"error_code": 0, "error_message": None, "auth_bytes": b"", "session_lifetime_ms": 0}
    assert (conn.principal, conn.authenticated, conn.closed) == ("User:alice", True, False)
    assert call(svc, conn, *METADATA)["brokers"]
    assert call(svc, conn, *API_VERSIONS)["error_code"] == 0
    # the exchange is over: as KafkaApis answers on an authenticated connection
    assert call(svc, conn, 17, 1, {"mechanism": "PLAIN"}) == {"error_code": E.ILLEGAL_SASL_STATE, "mechanisms": []}
    again = call(svc, conn, 36, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    assert again["error_code"] == E.ILLEGAL_SASL_STATE and "after successful authentication" in again["error_message"]
    assert not conn.closed


@pytest.mark.parametrize("steps", [
    [METADATA],                                                     # a request before the handshake
    [API_VERSIONS, METADATA],
    [API_VERSIONS, API_VERSIONS],                                   # ApiVersions only once before the handshake
    [API_VERSIONS, (36, 2, {"auth_bytes": b"\0alice\0alice-secret"})],   # Authenticate before Handshake
    [(17, 1, {"mechanism": "PLAIN"}), (11, 5, {})],                      # JoinGroup before Authenticate
])
def test_gate_closes_a_connection_that_skips_authentication(steps):
    svc = sasl_service()
    conn = Conn()
    results = [call(svc, conn, *s) for s in steps]
    assert results[-1] == "closed" and conn.closed and conn.principal == "User:ANONYMOUS"
    assert all(r != "closed" for r in results[:-1])


def test_wrong_password_is_delayed_answered_and_the_connection_closed():
    svc = sasl_service(**{"connection.failed.authentication.delay.ms": 250})
    conn = Conn()
    call(svc, conn, 17, 1, {"mechanism": "PLAIN"})
    kind, delay, resp = call(svc, conn, 36, 1, {"auth_bytes": b"\0alice\0nope"})
    assert (kind, delay) == ("delayed", 250)
    assert resp["error_code"] == E.SASL_AUTHENTICATION_FAILED
    assert resp["error_message"] == "Authentication failed: Invalid username or password"
    assert conn.closed and conn.principal == "User:ANONYMOUS" and not conn.authenticated


def test_unsupported_mechanism_and_handshake_v0_fail_and_close():
    svc = sasl_service()
    conn = Conn()
    assert call(svc, conn, 17, 1, {"mechanism": "SCRAM-SHA-512"}) == {
        "error_code": E.UNSUPPORTED_SASL_MECHANISM, "mechanisms": ["PLAIN"]}
    assert conn.closed
    conn = Conn()
    assert call(svc, conn, 17, 0, {"mechanism": "PLAIN"})["error_code"] == E.UNSUPPORTED_VERSION
    assert conn.closed


def test_sasl_off_answers_illegal_sasl_state_and_advertises_the_apis():
    for svc in (service(), sasl_service()):
        advertised = call(svc, Conn(), *API_VERSIONS)["api_keys"]
        keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in advertised}
        assert keys[17] == (0, 1) and keys[36] == (0, 2)
    svc = service()
    conn = Conn()
    assert call(svc, conn, 17, 1, {"mechanism": "PLAIN"}) == {"error_code": E.ILLEGAL_SASL_STATE, "mechanisms": []}
    assert call(svc, conn, 36, 2, {"auth_bytes": b"\0alice\0x"})["error_code"] == E.ILLEGAL_SASL_STATE
    assert call(svc, conn, *METADATA)["brokers"] and not conn.closed


# ---- per-API authorization -------------------------------------------------------------------------------------
def authz_service(*acls, **extra):
    svc = service(**{"groupcoord.acls.enabled": True, "super.users": "User:admin", **extra})
    svc.security.authorizer.add(acl(*a) for a in acls)
    svc.create_topic("a", 2)
    svc.create_topic("b", 1)
    return svc


def as_(svc, principal, api_key, version, body):
    return call(svc, None, api_key, version, body, principal=principal)


def join(group, version=5):
    return {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": SUB}]}


def test_group_apis_need_read_on_the_group():
    svc = authz_service(("User:alice", "GROUP", "g", "READ"))
    denied = as_(svc, "User:bob", 11, 7, join("g"))
    assert denied["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    assert (denied["generation_id"], denied["member_id"], denied["protocol_name"]) == (-1, "", None)
    assert as_(svc, "User:bob", 11, 6, join("g"))["protocol_name"] == ""
    assert as_(svc, "User:alice", 11, 5, join("g"))["error_code"] == E.MEMBER_ID_REQUIRED
    sync = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None,
            "protocol_type": "consumer", "protocol_name": "range", "assignments": []}
    assert as_(svc, "User:bob", 14, 5, sync) == {"throttle_time_ms": 0, "error_code": E.GROUP_AUTHORIZATION_FAILED,
                                                "protocol_type": None, "protocol_name": None, "assignment": b""}
    hb = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    assert as_(svc, "User:bob", 12, 4, hb)["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    assert as_(svc, "User:alice", 12, 4, hb)["error_code"] == E.UNKNOWN_MEMBER_ID
    leave_v0 = as_(svc, "User:bob", 13, 0, {"group_id": "g", "member_id": "m"})
    assert leave_v0["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    leave = as_(svc, "User:bob", 13, 5, {"group_id": "g", "members": [{"member_id": "m", "group_instance_id": None}]})
    assert leave["error_code"] == E.GROUP_AUTHORIZATION_FAILED and leave["members"] == []
    # authorization comes before the service layer's checks (empty group id)
    assert as_(svc, "User:bob", 12, 4, {**hb, "group_id": ""})["error_code"] == E.GROUP_AUTHORIZATION_FAILED


def commit(group, topics):
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": [{"partition_index": p, "committed_offset": 5,
                                                    "committed_leader_epoch": -1, "committed_metadata": ""}
                                                   for p in ps]} for t, ps in topics]}


def errors_of(resp):
    return {(t["name"], p["partition_index"]): p["error_code"] for t in resp["topics"] for p in t["partitions"]}


def test_offset_commit_needs_read_on_group_and_topics():
    svc = authz_service(("User:alice", "GROUP", "g", "READ"), ("User:alice", "TOPIC", "a", "READ"),
                        ("User:bob", "TOPIC", "*", "READ"))
    req = commit("g", [("a", [0, 1]), ("b", [0]), ("nope", [0])])
    assert set(errors_of(as_(svc, "User:bob", 8, 8, req)).values()) == {E.GROUP_AUTHORIZATION_FAILED}
    assert len(errors_of(as_(svc, "User:bob", 8, 8, req))) == 4
    assert errors_of(as_(svc, "User:alice", 8, 8, req)) == {
        ("a", 0): 0, ("a", 1): 0, ("b", 0): E.TOPIC_AUTHORIZATION_FAILED, ("nope", 0): E.TOPIC_AUTHORIZATION_FAILED}
    assert errors_of(as_(svc, "User:admin", 8, 8, req))[("nope", 0)] == E.UNKNOWN_TOPIC_OR_PARTITION


def test_offset_fetch_needs_describe_and_hides_or_fails_unauthorized_topics():
    svc = authz_service(("User:alice", "GROUP", "g", "DESCRIBE"), ("User:alice", "TOPIC", "a", "DESCRIBE"))
    assert errors_of(as_(svc, "User:admin", 8, 8, commit("g", [("a", [0]), ("b", [0])]))) == {("a", 0): 0, ("b", 0): 0}
    # v5: one group, top-level error
    denied = as_(svc, "User:bob", 9, 5, {"group_id": "g", "topics": [{"name": "a", "partition_indexes": [0]}]})
    assert denied["error_code"] == E.GROUP_AUTHORIZATION_FAILED and denied["topics"] == []
    resp = as_(svc, "User:alice", 9, 5, {"group_id": "g", "topics": [{"name": "b", "partition_indexes": [0]},
                                                                      {"name": "a", "partition_indexes": [0]}]})
    assert [(t["name"], p["committed_offset"], p["error_code"]) for t in resp["topics"] for p in t["partitions"]] == [
        ("a", 5, 0), ("b", -1, E.TOPIC_AUTHORIZATION_FAILED)]
    everything = as_(svc, "User:alice", 9, 5, {"group_id": "g", "topics": None})
    assert [t["name"] for t in everything["topics"]] == ["a"]
    assert {t["name"] for t in as_(svc, "User:admin", 9, 5, {"group_id": "g", "topics": None})["topics"]} == {"a", "b"}
    # v8: per group
    v8 = as_(svc, "User:alice", 9, 8, {"groups": [{"group_id": "g", "topics": None},
                                                   {"group_id": "h", "topics": None}], "require_stable": False})
    assert [(g["group_id"], g["error_code"]) for g in v8["groups"]] == [("g", 0), ("h", E.GROUP_AUTHORIZATION_FAILED)]


def test_offset_delete_needs_delete_on_the_group_and_read_on_topics():
    svc = authz_service(("User:alice", "GROUP", "g", "READ"), ("User:carol", "GROUP", "g", "DELETE"),
                        ("User:carol", "TOPIC", "a", "READ"))
    body = {"group_id": "g", "topics": [{"name": "a", "partitions": [{"partition_index": 0}]},
                                        {"name": "b", "partitions": [{"partition_index": 0}]}]}
    resp = as_(svc, "User:alice", 47, 0, body)
    assert resp["error_code"] == E.GROUP_AUTHORIZATION_FAILED and resp["topics"] == []
    resp = as_(svc, "User:carol", 47, 0, body)
    assert resp["error_code"] == E.GROUP_ID_NOT_FOUND                   # authorized: the coordinator answers


def test_describe_list_delete_and_find_coordinator():
    svc = authz_service(("User:alice", "GROUP", "g", "READ"), ("User:alice", "GROUP", "h", "DELETE"),
                        ("User:ops", "CLUSTER", "kafka-cluster", "DESCRIBE"))
    for group in ("g", "h", "x"):
        assert errors_of(as_(svc, "User:admin", 8, 8, commit(group, [("a", [0])]))) == {("a", 0): 0}
    resp = as_(svc, "User:alice", 15, 5, {"groups": ["x", "g", "h"], "include_authorized_operations": True})
    assert [(g["group_id"], g["error_code"]) for g in resp["groups"]] == [
        ("x", E.GROUP_AUTHORIZATION_FAILED), ("g", 0), ("h", 0)]
    assert resp["groups"][0]["authorized_operations"] == -2147483648
    assert resp["groups"][1]["authorized_operations"] == (1 << 3) | (1 << 8)      # READ, DESCRIBE
    assert resp["groups"][2]["authorized_operations"] == (1 << 6) | (1 << 8)      # DELETE, DESCRIBE

    def listed(principal):
        return sorted(g["group_id"] for g in as_(svc, principal, 16, 4, {"states_filter": []})["groups"])
    assert listed("User:alice") == ["g", "h"]
    assert listed("User:bob") == []
    assert listed("User:ops") == listed("User:admin") == ["g", "h", "x"]

    resp = as_(svc, "User:alice", 42, 2, {"groups_names": ["x", "g", "h", "g"]})
    assert [(r["group_id"], r["error_code"]) for r in resp["results"]] == [
        ("h", 0), ("x", E.GROUP_AUTHORIZATION_FAILED), ("g", E.GROUP_AUTHORIZATION_FAILED)]

    v3 = as_(svc, "User:bob", 10, 3, {"key": "g", "key_type": 0})
    assert (v3["error_code"], v3["node_id"], v3["host"], v3["port"]) == (E.GROUP_AUTHORIZATION_FAILED, -1, "", -1)
    assert v3["error_message"] == "Group authorization failed."          # (Errors.message(), Kafka's)
    assert as_(svc, "User:alice", 10, 3, {"key": "g", "key_type": 0})["error_code"] == 0
    v4 = as_(svc, "User:alice", 10, 4, {"key_type": 0, "coordinator_keys": ["g", "x"]})
    assert [(c["key"], c["error_code"]) for c in v4["coordinators"]] == [("g", 0), ("x", E.GROUP_AUTHORIZATION_FAILED)]
    txn = as_(svc, "User:alice", 10, 4, {"key_type": 1, "coordinator_keys": ["tx"]})
    assert txn["coordinators"][0]["error_code"] == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_allow_everyone_if_no_acl_found_opens_groups_without_acls():
    svc = authz_service(("User:alice", "GROUP", "g", "READ"), **{"allow.everyone.if.no.acl.found": True})
    assert as_(svc, "User:bob", 11, 5, join("other"))["error_code"] == E.MEMBER_ID_REQUIRED
    assert as_(svc, "User:bob", 11, 5, join("g"))["error_code"] == E.GROUP_AUTHORIZATION_FAILED
