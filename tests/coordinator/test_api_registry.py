"""The API registries: the messages (``APIS``, ``BY_NAME``), the keys (``ApiKey``) and the handlers
(``HANDLERS``), and what ApiVersions lists and a broker serves per Kafka release, pinned whole."""
from __future__ import annotations

from groupcoord.coordinator.handlers import HANDLERS, KAFKA_RELEASES, advertised_versions, served_versions
from groupcoord.protocol.api_keys import KAFKA_API_NAMES, ApiKey
from groupcoord.protocol.messages import APIS, BY_NAME
from groupcoord.protocol.schema import snake

NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit", 9: "OffsetFetch",
    10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
    15: "DescribeGroups", 16: "ListGroups", 17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics",
    20: "DeleteTopics", 22: "InitProducerId", 24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn",
    27: "WriteTxnMarkers", 28: "TxnOffsetCommit", 32: "DescribeConfigs", 36: "SaslAuthenticate",
    37: "CreatePartitions", 42: "DeleteGroups",
    44: "IncrementalAlterConfigs", 47: "OffsetDelete", 65: "DescribeTransactions", 66: "ListTransactions",
    68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe", 74: "ListConfigResources",
    76: "ShareGroupHeartbeat", 77: "ShareGroupDescribe", 78: "ShareFetch", 79: "ShareAcknowledge",
    90: "DescribeShareGroupOffsets", 91: "AlterShareGroupOffsets", 92: "DeleteShareGroupOffsets",
}

# the versions Kafka 3.9 serves and lists (no share group APIs: their v0 was unstable); 4.1 differs
# where KIP-896 removed versions and where versions came with 4.0, and has the share group APIs at
# v1 (listed and served even with share groups off, as Kafka 4.1 does: they answer UNSUPPORTED_VERSION)
# and the share group offsets APIs (KIP-932's admin RPCs 90-92) at v0; EndTxn v5 and TxnOffsetCommit v5
# (transactions V2) came with 4.0, ListTransactions v2 with 4.1, WriteTxnMarkers v2 (KIP-1228) with 4.2;
# Produce v12 (transactions V2) with 4.0 and v13 (topic ids) with 4.1
SERVED_3_9 = {
    0: (0, 11), 1: (0, 12), 2: (0, 7), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (0, 7), 20: (0, 6), 22: (0, 5),
    24: (0, 5), 25: (0, 4), 26: (0, 4), 27: (0, 1), 28: (0, 4),
    32: (0, 4), 36: (0, 2), 37: (0, 3), 42: (0, 2), 44: (0, 1), 47: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 0),
    69: (0, 0), 74: (0, 0),
}
SERVED_4_1 = {**SERVED_3_9, 0: (3, 13), 1: (4, 12), 2: (1, 7), 3: (0, 13), 8: (2, 9), 9: (1, 9), 15: (0, 6),
              19: (2, 7), 20: (1, 6), 26: (0, 5), 27: (1, 1), 28: (0, 5), 32: (1, 4), 66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 76: (1, 1), 77: (1, 1),
              78: (1, 1), 79: (1, 1), 90: (0, 0), 91: (0, 0), 92: (0, 0)}
# 4.2 made OffsetCommit v10 and OffsetFetch v10 (topic ids) stable: 4.1 had them unstable, not served;
# ShareFetch and ShareAcknowledge v2 came with 4.2 (KIP-1206, KIP-1222), DescribeShareGroupOffsets v1 (KIP-1226)
SERVED_4_2 = {**SERVED_4_1, 8: (2, 10), 9: (1, 10), 27: (1, 2), 78: (1, 2), 79: (1, 2), 90: (0, 1)}
SERVED = {"4.3": SERVED_4_2, "4.2": SERVED_4_2, "4.1": SERVED_4_1, "3.9": SERVED_3_9}
ADVERTISED = {"4.3": {**SERVED_4_2, 0: (0, 13)}, "4.2": {**SERVED_4_2, 0: (0, 13)},
              "4.1": {**SERVED_4_1, 0: (0, 13)}, "3.9": SERVED_3_9}    # Produce: KAFKA-18659


def test_the_releases():
    assert list(KAFKA_RELEASES) == ["4.3", "4.2", "4.1", "3.9"]


def test_served_and_advertised_versions_per_release():
    for release in KAFKA_RELEASES:
        assert served_versions(release) == SERVED[release]
        assert advertised_versions(release) == ADVERTISED[release]
        assert list(advertised_versions(release)) == sorted(SERVED[release])


def test_messages_by_key_and_by_name():
    assert list(APIS) == sorted(NAMES)
    assert {key: api.name for key, api in APIS.items()} == NAMES
    assert all(api.key == key and api.request.api_key == api.response.api_key == key for key, api in APIS.items())
    assert all((api.request.name, api.response.name) == (f"{api.name}Request", f"{api.name}Response")
               for api in APIS.values())
    assert BY_NAME == {api.name: api for api in APIS.values()}


def test_api_keys():
    assert [(int(k), k.title) for k in ApiKey] == sorted(NAMES.items())
    assert ApiKey.JOIN_GROUP == 11 and ApiKey.JOIN_GROUP.title == "JoinGroup" and ApiKey(18) is ApiKey.API_VERSIONS
    assert ApiKey.INIT_PRODUCER_ID.title == "InitProducerId" and ApiKey["CONSUMER_GROUP_HEARTBEAT"] == 68


def test_one_handler_per_message():
    assert list(HANDLERS) == sorted(HANDLERS) and set(HANDLERS) == set(APIS)
    for key, module in HANDLERS.items():
        assert type(key) is int and module.API_KEY == key
        # a release misspelt in VERSIONS or ADVERTISED would be ignored
        assert set(getattr(module, "VERSIONS", {})) | set(getattr(module, "ADVERTISED", {})) <= set(KAFKA_RELEASES)
        assert module.__name__ == f"groupcoord.coordinator.handlers.{snake(APIS[key].name)}"


def test_kafkas_api_names_agree_with_ours():
    assert list(KAFKA_API_NAMES) == list(range(93))
    assert all(KAFKA_API_NAMES[key] == api.name for key, api in APIS.items())


def test_the_docs_list_the_apis_served():
    """docs/protocol.md's API table is made from the registry (GROUPCOORD_UPDATE_DOCS=1 rewrites it)."""
    import os
    import re
    from pathlib import Path

    from groupcoord.coordinator.handlers import api_table

    readme = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
    text = readme.read_text()
    block = re.compile(r"(<!-- api-table: generated from coordinator/handlers -->\n)(.*?)(\n<!-- /api-table -->)", re.S)
    assert block.search(text), "docs/protocol.md has no generated API table"
    if os.environ.get("GROUPCOORD_UPDATE_DOCS") == "1":
        readme.write_text(block.sub(lambda m: m.group(1) + api_table() + m.group(3), text))
        text = readme.read_text()
    assert block.search(text).group(2) == api_table(), \
        "docs/protocol.md's API table is out of date: GROUPCOORD_UPDATE_DOCS=1 pytest tests/coordinator/test_api_registry.py"
