"""Real clients against a SASL_PLAINTEXT listener with ACLs: confluent-kafka (librdkafka) and
kafka-python authenticate with SASL/PLAIN (or report an authentication error), form groups only
with READ on the group, and see only the groups they may describe."""
from __future__ import annotations

import json
import logging
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from groupcoord.coordinator.embed import ThreadedCoordinator
from groupcoord.coordinator.security import Acl
from groupcoord.protocol.errors import ErrorCode

KAFKAJS = Path(__file__).resolve().parents[2] / "interop" / "js" / "node_modules" / "kafkajs"
USERS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
CONFIG = {
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
        "password=\"admin-secret\" " + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
}
ACLS = [
    {"principal": "User:alice", "resource_type": "GROUP", "resource_name": "billing", "operation": "READ"},
    {"principal": "User:bob", "resource_type": "GROUP", "resource_name": "billing", "operation": "DESCRIBE"},
    {"principal": "User:*", "resource_type": "TOPIC", "resource_name": "*", "operation": "READ"},
]


@pytest.fixture(scope="module")
def gc():
    with ThreadedCoordinator(topics={"orders": 2}, config=CONFIG, emit=lambda event: None) as coordinator:
        coordinator.call(coordinator.service.security.authorizer.add, [Acl.from_dict(a) for a in ACLS])
        answers = []   # (api_key, principal, error_code) of every group API answered with an error

        def spy(ctx, request, response, seconds):
            if not isinstance(response, dict):
                return
            for entry in [response, *(response.get("coordinators") or ())]:
                if entry.get("error_code"):
                    answers.append((ctx.api_key, ctx.principal, entry["error_code"]))
        coordinator.call(coordinator.service.after_request.append, spy)
        coordinator.answers = answers
        yield coordinator


def sasl(gc, user, password, **extra) -> dict:
    return {"bootstrap.servers": gc.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": password, **extra}


def poll_until(consumer: Consumer, cond, timeout: float = 15.0):
    """Poll a confluent-kafka consumer until cond(errors) is truthy; returns the errors seen."""
    errors: list[KafkaError] = []
    deadline = time.monotonic() + timeout
    while not cond(errors):
        assert time.monotonic() < deadline, f"timed out; errors: {errors}"
        try:
            msg = consumer.poll(0.1)
        except KafkaException as exc:
            errors.append(exc.args[0])
            continue
        if msg is not None and msg.error():
            errors.append(msg.error())
    return errors


def test_confluent_kafka_authenticates_and_forms_a_group(gc):
    consumers = [Consumer(sasl(gc, "alice", "alice-secret", **{"group.id": "billing", "session.timeout.ms": 6000}))
                 for _ in range(2)]
    try:
        for c in consumers:
            c.subscribe(["orders"])
        done = lambda errors: errors or all(len(c.assignment()) == 1 for c in consumers)   # noqa: E731
        deadline = time.monotonic() + 20
        while not done([]):
            assert time.monotonic() < deadline, [c.assignment() for c in consumers]
            for c in consumers:
                msg = c.poll(0.05)
                assert msg is None or not msg.error() or msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
        owned = sorted(tp.partition for c in consumers for tp in c.assignment())
        assert owned == [0, 1]
        group = gc.call(gc.service.group_coordinator.describe_group, "billing")
        assert group["group_state"] == "Stable" and len(group["members"]) == 2
    finally:
        for c in consumers:
            c.close()


def test_confluent_kafka_wrong_password_is_an_authentication_error(gc):
    seen: list[KafkaError] = []
    c = Consumer(sasl(gc, "alice", "not-her-password", **{"group.id": "billing", "error_cb": seen.append}))
    try:
        c.subscribe(["orders"])
        deadline = time.monotonic() + 15
        while not any(e.code() == KafkaError._AUTHENTICATION for e in seen):
            assert time.monotonic() < deadline, seen
            c.poll(0.1)
        auth = next(e for e in seen if e.code() == KafkaError._AUTHENTICATION)
        assert "Invalid username or password" in auth.str()
        assert c.assignment() == []
    finally:
        c.close()


def test_confluent_kafka_without_read_on_the_group_gets_group_authorization_failed(gc):
    # bob may DESCRIBE the group (FindCoordinator succeeds) but not READ it: JoinGroup is refused
    c = Consumer(sasl(gc, "bob", "bob-secret", **{"group.id": "billing"}))
    try:
        c.subscribe(["orders"])
        errors = poll_until(c, lambda errors: errors)
        assert errors[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED, errors
        assert c.assignment() == []
        assert (11, "User:bob", ErrorCode.GROUP_AUTHORIZATION_FAILED) in gc.answers
    finally:
        c.close()


def test_list_groups_is_filtered_by_describe_on_the_group(gc):
    from kafka import KafkaConsumer

    # kafka-python, as the super user, forms a group no ACL mentions
    consumer = KafkaConsumer("orders", bootstrap_servers=gc.bootstrap_servers, group_id="secret-group",
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username="admin", sasl_plain_password="admin-secret")
    try:
        deadline = time.monotonic() + 15
        # kafka-python 3.0.12 may join before its metadata snapshot has the topic and then lose the
        # finished rejoin when a poll times out mid-rebalance (see tests/interop/clients.py):
        # wait for the snapshot before the first poll
        while not consumer._coordinator._metadata_snapshot.get("orders"):
            assert time.monotonic() < deadline, "kafka-python never got metadata for orders"
            time.sleep(0.05)
        while not consumer.assignment():
            assert time.monotonic() < deadline
            consumer.poll(100)

        def listed(user):
            admin = AdminClient(sasl(gc, user, USERS[user]))
            result = admin.list_consumer_groups().result(timeout=10)
            return sorted(g.group_id for g in result.valid)
        every = gc.call(lambda: sorted(g.group_id for g in gc.service.group_coordinator.groups()))
        assert "secret-group" in every and listed("admin") == every
        # alice (READ) and bob (DESCRIBE) may describe "billing" only; neither has DESCRIBE on the cluster
        assert listed("alice") == listed("bob") == [g for g in every if g == "billing"]
    finally:
        consumer.close()


def test_kafka_python_authenticates_and_is_refused_without_read(gc):
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    common = dict(bootstrap_servers=gc.bootstrap_servers, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN")
    alice = KafkaConsumer("orders", group_id="billing-py", sasl_plain_username="alice",
                          sasl_plain_password="alice-secret", **common)
    try:
        # alice authenticates, but her READ is on "billing" only
        with pytest.raises(GroupAuthorizationFailedError):
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                alice.poll(100)
    finally:
        alice.close()
    assert (10, "User:alice", ErrorCode.GROUP_AUTHORIZATION_FAILED) in gc.answers


def test_kafka_python_wrong_password_is_an_authentication_error(gc, caplog):
    from kafka import KafkaConsumer
    from kafka.errors import KafkaTimeoutError

    caplog.set_level(logging.WARNING, logger="kafka")
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaConsumer("orders", group_id="billing", bootstrap_servers=gc.bootstrap_servers,
                      security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="alice",
                      sasl_plain_password="wrong", bootstrap_timeout_ms=1500)
    failures = [r.getMessage() for r in caplog.records if "SaslAuthenticationFailedError" in r.getMessage()]
    assert failures and "Invalid username or password" in failures[0]


def kafkajs(gc, user, password, group) -> dict:
    script = Path(__file__).with_name("kafkajs_sasl.js")
    proc = subprocess.run(["node", str(script), gc.bootstrap_servers, user, password, group, "orders"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(shutil.which("node") is None or not KAFKAJS.is_dir(), reason="node and KafkaJS (make test) needed")
def test_kafkajs_authenticates_forms_a_group_and_reports_errors(gc):
    ok = kafkajs(gc, "alice", "alice-secret", "billing")
    assert ok["ok"] is True and sorted(ok["assignment"]["orders"]) == [0, 1], ok
    assert set(ok["groups"]) <= {"billing"}                          # ListGroups filtered for alice
    wrong = kafkajs(gc, "alice", "nope", "billing")
    assert wrong["name"] == "KafkaJSSASLAuthenticationError", wrong
    assert "Invalid username or password" in wrong["message"]
    refused = kafkajs(gc, "bob", "bob-secret", "billing")            # DESCRIBE but no READ
    assert refused["type"] == "GROUP_AUTHORIZATION_FAILED", refused
