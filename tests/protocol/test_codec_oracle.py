"""Our codec against kafka-python 3.x's own schema-driven protocol classes.

For every (API, version) that both declare, hypothesis generates messages from our
version-specific struct; we encode them and kafka-python decodes them, kafka-python
encodes them and we decode them, field for field, and both encodings are compared
byte for byte. Requests and responses alike. The consumer group protocol's APIs (KIP-848) and the
share groups' (KIP-932), which kafka-python does not declare, are skipped with the reason
(test_consumer_group_messages.py checks the former against bytes written out by hand and against a
real client; the share group's are checked against confluent-kafka's ShareConsumer in
tests/coordinator/test_share_group_wire.py, the share group offsets APIs 90-92, which no client there
sends, against bytes written out by hand in tests/coordinator/share/test_share_offsets_api.py).
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.messages import APIS
from kafka_python_oracle import from_theirs, strip_unknown, their_classes, to_theirs
from kstrategies import for_struct


THEIRS = their_classes()

# APIs kafka-python 3.0.12 lists by key (kafka/protocol/api_key.py) but declares no schema for
NOT_IN_KAFKA_PYTHON = {
    int(ApiKey.CONSUMER_GROUP_HEARTBEAT): "kafka-python 3.0.12 has no ConsumerGroupHeartbeat (68) schema",
    int(ApiKey.CONSUMER_GROUP_DESCRIBE): "kafka-python 3.0.12 has no ConsumerGroupDescribe (69) schema",
    int(ApiKey.SHARE_GROUP_HEARTBEAT): "kafka-python 3.0.12 has no ShareGroupHeartbeat (76) schema",
    int(ApiKey.SHARE_GROUP_DESCRIBE): "kafka-python 3.0.12 has no ShareGroupDescribe (77) schema",
    int(ApiKey.SHARE_FETCH): "kafka-python 3.0.12 has no ShareFetch (78) schema",
    int(ApiKey.SHARE_ACKNOWLEDGE): "kafka-python 3.0.12 has no ShareAcknowledge (79) schema",
    int(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS): "kafka-python 3.0.12 has no DescribeShareGroupOffsets (90) schema",
    int(ApiKey.ALTER_SHARE_GROUP_OFFSETS): "kafka-python 3.0.12 has no AlterShareGroupOffsets (91) schema",
    int(ApiKey.DELETE_SHARE_GROUP_OFFSETS): "kafka-python 3.0.12 has no DeleteShareGroupOffsets (92) schema",
}


def _cases():
    for api in APIS.values():
        for spec in (api.request, api.response):
            cls = THEIRS.get(spec.name)
            if cls is None:
                if api.key in NOT_IN_KAFKA_PYTHON:
                    for v in spec.versions:
                        yield pytest.param(spec, None, v, id=f"{spec.name}-v{v}",
                                           marks=pytest.mark.skip(reason=NOT_IN_KAFKA_PYTHON[api.key]))
                continue
            for v in spec.versions:
                if v <= cls.max_version:
                    yield pytest.param(spec, cls, v, id=f"{spec.name}-v{v}")


CASES = list(_cases())
STRATEGIES = {(p.values[0].name, p.values[2]): for_struct(p.values[0].struct(p.values[2])) for p in CASES
              if p.values[1] is not None}


def test_every_version_of_every_api_is_covered():
    names = {p.values[0].name for p in CASES}
    expected = {s.name for a in APIS.values() for s in (a.request, a.response)}
    assert names == expected, expected - names
    assert len(CASES) == sum(len(s.versions) for a in APIS.values() for s in (a.request, a.response))


def test_kafka_python_still_lacks_the_skipped_apis():
    """When kafka-python gains these schemas, the skips above should go."""
    for key in NOT_IN_KAFKA_PYTHON:
        for spec in (APIS[key].request, APIS[key].response):
            assert spec.name not in THEIRS


@pytest.mark.parametrize("spec,cls,version", CASES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_against_kafka_python(spec, cls, version, data):
    struct = spec.struct(version)
    obj = data.draw(STRATEGIES[spec.name, version])
    if spec.name == "ApiVersionsResponse":
        obj["error_code"] = 0  # kafka-python reads an error response as v0, like Kafka's clients
    codec = spec.codec(version)
    ours = codec.encode(obj)

    theirs = bytes(to_theirs(cls, obj, struct, version).encode(version=version, header=False))
    assert ours == theirs

    decoded_by_them = cls.decode(ours, version=version, header=False)
    assert from_theirs(decoded_by_them, struct) == obj

    decoded_by_us = codec.decode(theirs)
    assert strip_unknown(decoded_by_us) == obj

    # the interpreted construct path agrees with the compiled one
    assert codec.struct.parse(ours) == decoded_by_us
    assert codec.struct.build(obj) == ours
