"""BrokerConfig's check of group.consumer.assignors, and the server assignors' names it knows."""
from __future__ import annotations

import re

import pytest

from groupcoord.coordinator import config
from groupcoord.coordinator.config import BrokerConfig, ConfigError
from groupcoord.coordinator.group.assignors import ASSIGNORS


def test_the_config_knows_the_server_assignors_by_their_names():
    assert config.SERVER_ASSIGNOR_NAMES == tuple(ASSIGNORS)
    assert set(config.ASSIGNOR_CLASS_NAMES.values()) == set(ASSIGNORS)


def test_assignors_by_short_or_class_name():
    cfg = BrokerConfig({"group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform"})
    assert config.assignor_names(cfg["group.consumer.assignors"]) == ["range", "uniform"]


@pytest.mark.parametrize("value, shown", [("uniform,fastest", "['fastest']"), (" , ", "(none given)")])
def test_unknown_or_no_assignors_are_refused(value, shown):
    with pytest.raises(ConfigError, match=re.escape(f"unknown assignor(s) {shown}; known: uniform, range")):
        BrokerConfig({"group.consumer.assignors": value})
