"""advertised.listeners: a node listens on --host/--port and tells clients (Metadata brokers,
FindCoordinator) the advertised host and port; by default the address it listens on, and this
host's name instead of 0.0.0.0."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from structlog.testing import capture_logs

from groupcoord.client.connection import BrokerConnection
from groupcoord.coordinator import listeners
from groupcoord.cli import main
from groupcoord.coordinator.cluster import partition_for
from groupcoord.coordinator.config import BrokerConfig, ConfigError
from groupcoord.coordinator.server import Server
from groupcoord.coordinator.service import Service

METADATA, FIND_COORDINATOR = 3, 10


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def ask(host: str, port: int, group: str) -> tuple[dict, dict, dict]:
    """Metadata v1, FindCoordinator v3 and v4 (batched) over one connection to host:port."""
    conn = await BrokerConnection(host, port).connect()
    try:
        md = await conn.request(METADATA, 1, {"topics": None})
        v3 = await conn.request(FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
        v4 = await conn.request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        return md, v3, v4["coordinators"][0]
    finally:
        conn.close()


async def start(config: dict, host: str = "127.0.0.1", ports=(0,), environ=None) -> Server:
    service = Service(BrokerConfig(config, profile="test", environ=environ or {}), nodes=len(ports), host=host,
                      ports=list(ports))
    return await Server(service, host, list(ports)).start()


async def test_a_node_listening_on_loopback_answers_its_advertised_name():
    port = free_port()
    server = await start({"advertised.listeners": f"PLAINTEXT://localhost:{port}"}, ports=[port])
    try:
        assert server.bootstrap_servers == f"localhost:{port}"
        md, v3, v4 = await ask("127.0.0.1", port, "g")
        assert [(b["host"], b["port"]) for b in md["brokers"]] == [("localhost", port)]
        assert (v3["host"], v3["port"]) == ("localhost", port) and v3["error_code"] == 0
        assert (v4["host"], v4["port"]) == ("localhost", port) and v4["error_code"] == 0
    finally:
        await server.stop()


async def test_node_i_advertises_port_plus_i_and_comes_back_up_on_the_port_it_listened_on():
    server = await start({"advertised.listeners": "PLAINTEXT://kafka.test:19092"}, ports=(0, 0, 0))
    try:
        assert server.bootstrap_servers == "kafka.test:19092,kafka.test:19093,kafka.test:19094"
        listened = dict(server.listening)
        assert all(p not in (19092, 19093, 19094) for p in listened.values())
        group = next(g for g in (f"g{i}" for i in range(100)) if partition_for(g, 50) % 3 == 2)
        md, v3, v4 = await ask("127.0.0.1", listened[0], group)
        assert sorted((b["node_id"], b["host"], b["port"]) for b in md["brokers"]) == [
            (0, "kafka.test", 19092), (1, "kafka.test", 19093), (2, "kafka.test", 19094)]
        assert (v3["node_id"], v3["host"], v3["port"]) == (2, "kafka.test", 19094)
        assert (v4["node_id"], v4["host"], v4["port"]) == (2, "kafka.test", 19094)
        await server.stop_node(2)
        await server.start_node(2)                  # a node brought back listens where it did
        assert server.listening == listened
        md, _, _ = await ask("127.0.0.1", listened[2], group)
        assert (2, "kafka.test", 19094) in [(b["node_id"], b["host"], b["port"]) for b in md["brokers"]]
    finally:
        await server.stop()


async def test_the_environment_variable_of_the_config_layer_sets_it():
    server = await start({}, environ={"GROUPCOORD_ADVERTISED_LISTENERS": "PLAINTEXT://[::1]:29092"})
    try:
        assert server.service.cluster.nodes[0].host == "::1" and server.service.cluster.nodes[0].port == 29092
    finally:
        await server.stop()


async def test_an_empty_advertised_host_is_the_canonical_host_name(monkeypatch):
    monkeypatch.setattr(listeners, "canonical_host_name", lambda: "this-host.test")
    server = await start({"advertised.listeners": "PLAINTEXT://:29092"})
    try:
        assert server.bootstrap_servers == "this-host.test:29092"
    finally:
        await server.stop()


async def test_listening_on_every_interface_advertises_the_host_name_with_a_warning(monkeypatch):
    monkeypatch.setattr(listeners, "canonical_host_name", lambda: "this-host.test")
    with capture_logs() as logs:
        server = await start({}, host="0.0.0.0")
    try:
        port = server.listening[0]
        assert server.bootstrap_servers == f"this-host.test:{port}"
        md, v3, _ = await ask("127.0.0.1", port, "g")
        assert md["brokers"][0]["host"] == "this-host.test" and v3["host"] == "this-host.test"
        [warning] = [line for line in logs if line["log_level"] == "warning"]
        assert warning["event"] == "advertising_host_name" and "advertised.listeners" in warning["hint"]
    finally:
        await server.stop()


@pytest.mark.parametrize("value, message", [
    ("PLAINTEXT://0.0.0.0:9092", "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0"),
    ("PLAINTEXT://a:9092,EXTERNAL://b:9093", "give one LISTENER://host:port"),
    ("localhost:9092", "expected LISTENER://host:port"),
    ("PLAINTEXT://localhost:0", "port must be 1-65535"),
])
def test_a_bad_value_is_refused_in_one_line(capsys, value, message):
    with pytest.raises(ConfigError, match=message):
        listeners.parse_advertised(value)
    assert main(["serve", "--in-memory", "--port", "0", "--set", f"advertised.listeners={value}"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err


def test_a_real_client_bootstraps_through_the_advertised_address(tmp_path):
    from confluent_kafka import Consumer, Producer
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupcoord.cli", "serve", "--in-memory", "--profile", "test",
         "--port", str(port), "--topic", "orders:2", "--log-level", "warning",
         "--set", f"advertised.listeners=PLAINTEXT://localhost:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    consumer = None
    try:
        assert proc.stdout.readline().strip() == f"bootstrap servers: localhost:{port}"
        common = {"bootstrap.servers": f"127.0.0.1:{port}", "broker.address.family": "v4"}
        producer = Producer({**common, "linger.ms": 0})
        producer.produce("orders", b"hello", partition=1)
        assert producer.flush(20) == 0
        consumer = Consumer({**common, "group.id": "advertised", "auto.offset.reset": "earliest",
                             "session.timeout.ms": 6000, "heartbeat.interval.ms": 200})
        # (list_topics() without a topic sends a Metadata v13 request that groupcoord's codec does not
        # decode yet: closing_connection "3 trailing bytes"; a named topic is what this test needs)
        brokers = consumer.list_topics("orders", timeout=20).brokers
        assert [(b.host, b.port) for b in brokers.values()] == [("localhost", port)]   # what the client learned
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 30
        message = None
        while message is None and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                message = m
        assert message is not None and message.value() == b"hello"
        consumer.commit(message, asynchronous=False)
    finally:
        if consumer is not None:
            consumer.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
