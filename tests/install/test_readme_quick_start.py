"""The README's quick start runs as written: its confluent-kafka and client-library examples against a
coordinator (in place of `make run`'s 127.0.0.1:9092), and its pytest example as a test file of another
project, found by pytest through the plugin's entry point."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

README = Path(__file__).resolve().parents[2] / "README.md"


def example(name: str) -> str:
    match = re.search(rf"<!-- quick-start: {name} -->\n```python\n(.*?)```", README.read_text(), re.S)
    assert match, f"the README has no quick-start example {name!r}"
    return match.group(1)


@pytest.mark.interop
def test_the_confluent_and_client_library_examples_run(groupcoord_factory):
    gc = groupcoord_factory()
    outputs = []
    for name in ("confluent-kafka", "groupcoord-client"):
        code = example(name)
        assert code.count('"127.0.0.1:9092"') == 1
        r = subprocess.run([sys.executable, "-c", code.replace('"127.0.0.1:9092"', repr(gc.bootstrap_servers))],
                           capture_output=True, text=True, timeout=90)
        assert r.returncode == 0, r.stderr
        outputs.append(r.stdout)
    confluent, ours = outputs
    assert confluent.startswith("b'hello' [TopicPartition{topic=orders,partition=0,")
    assert ours.startswith("[b'hello'] {TopicPartition(topic='orders', partition=0)}")


@pytest.mark.interop
def test_the_pytest_example_passes_in_another_project(tmp_path):
    (tmp_path / "test_billing.py").write_text(example("pytest"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_billing.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr


@pytest.mark.interop
def test_the_share_group_example_runs(groupcoord_factory):
    gc = groupcoord_factory()
    configs = README.read_text().split("<!-- quick-start: share -->")[0].rsplit("    groupcoord configs ", 1)[1]
    command = ["groupcoord", "configs", *configs.split("\n", 1)[0].split()]
    assert command[2:5] == ["--group", "workers", "--alter"]
    r = subprocess.run([sys.executable, "-m", "groupcoord.cli", *command[1:], "--bootstrap-server",
                        gc.bootstrap_servers], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    code = example("share")
    assert code.count('"127.0.0.1:9092"') == 1
    r = subprocess.run([sys.executable, "-c", code.replace('"127.0.0.1:9092"', repr(gc.bootstrap_servers))],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "10 jobs done\n"
    assert len(README.read_text().split("<!-- quick-start: share -->")[1].split("```")[1].splitlines()) <= 21


@pytest.mark.interop
def test_the_share_group_example_with_our_client_runs(groupcoord_factory):
    gc = groupcoord_factory()
    gc.call(gc.service.alter_group_configs, "workers", {"share.auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": gc.bootstrap_servers})
    for i in range(10):
        producer.produce("jobs", b"job %d" % i)
    assert producer.flush(30) == 0
    code = example("share-groupcoord-client")
    assert code.count('"127.0.0.1:9092"') == 1
    r = subprocess.run([sys.executable, "-c", code.replace('"127.0.0.1:9092"', repr(gc.bootstrap_servers))],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "{TopicPartition(topic='jobs', partition=0): None}\n"
    assert gc.call(lambda: [sp.start_offset for sp in gc.service.share_partitions.share_partitions().values()]) == [10]


@pytest.mark.interop
def test_the_transactions_example_bills_each_payment_once(groupcoord_factory):
    from confluent_kafka import Consumer, TopicPartition
    gc = groupcoord_factory()
    code = example("transactions")
    assert code.count('"127.0.0.1:9092"') == 1 and len(code.splitlines()) <= 30
    r = subprocess.run([sys.executable, "-c", code.replace('"127.0.0.1:9092"', repr(gc.bootstrap_servers))],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "10 payments billed exactly once\n"
    reader = Consumer({"bootstrap.servers": gc.bootstrap_servers, "group.id": "auditor",
                       "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    try:
        reader.subscribe(["receipts"])
        receipts = []
        while len(receipts) < 10:
            message = reader.poll(15)
            assert message is not None, receipts
            if message.error() is None:
                receipts.append(message.value())
        assert sorted(receipts) == sorted(b"receipt %d" % i for i in range(10))
        [committed] = reader.committed([TopicPartition("payments", 0)], 15)
    finally:
        reader.close()
    billing = Consumer({"bootstrap.servers": gc.bootstrap_servers, "group.id": "billing"})
    try:
        [committed] = billing.committed([TopicPartition("payments", 0)], 15)
    finally:
        billing.close()
    assert committed.offset == 10
