"""librdkafka's mock cluster, reached through ctypes in the librdkafka that confluent-kafka ships.

    with MockCluster(brokers=1) as mock:
        mock.create_topic("t", partitions=8)
        Consumer({"bootstrap.servers": mock.bootstrap_servers, ...})
"""
from __future__ import annotations

import ctypes
import glob
import os

import confluent_kafka

_lib = None


def _load():
    global _lib
    if _lib is None:
        pkg = os.path.dirname(confluent_kafka.__file__)
        candidates = glob.glob(os.path.join(pkg, os.pardir, "confluent_kafka.libs", "librdkafka*.so*"))
        candidates += glob.glob(os.path.join(pkg, ".libs", "librdkafka*"))
        if not candidates:
            raise RuntimeError("cannot find the librdkafka that confluent-kafka ships")
        lib = ctypes.CDLL(candidates[0])
        vp, cp = ctypes.c_void_p, ctypes.c_char_p
        lib.rd_kafka_conf_new.restype = vp
        lib.rd_kafka_conf_set.argtypes = (vp, cp, cp, cp, ctypes.c_size_t)
        lib.rd_kafka_new.restype = vp
        lib.rd_kafka_new.argtypes = (ctypes.c_int, vp, cp, ctypes.c_size_t)
        lib.rd_kafka_destroy.argtypes = (vp,)
        lib.rd_kafka_mock_cluster_new.restype = vp
        lib.rd_kafka_mock_cluster_new.argtypes = (vp, ctypes.c_int)
        lib.rd_kafka_mock_cluster_destroy.argtypes = (vp,)
        lib.rd_kafka_mock_cluster_bootstraps.restype = cp
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = (vp,)
        lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
        lib.rd_kafka_mock_topic_create.argtypes = (vp, cp, ctypes.c_int, ctypes.c_int)
        # KIP-848 consumer groups: the mock's defaults are a 3,000 ms heartbeat and a 30,000 ms session
        for name in ("rd_kafka_mock_set_group_consumer_heartbeat_interval_ms",
                     "rd_kafka_mock_set_group_consumer_session_timeout_ms"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = None
                fn.argtypes = (vp, ctypes.c_int)
        # share groups (KIP-932): the mock's settings for every share group
        for name in ("rd_kafka_mock_sharegroup_set_auto_offset_reset",
                     "rd_kafka_mock_sharegroup_set_record_lock_duration",
                     "rd_kafka_mock_sharegroup_set_max_delivery_attempts"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = None
                fn.argtypes = (vp, ctypes.c_int)
        _lib = lib
    return _lib


class MockCluster:
    def __init__(self, brokers: int = 1):
        lib = _load()
        err = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512)
        self._rk = lib.rd_kafka_new(0, conf, err, 512)
        if not self._rk:
            raise RuntimeError(err.value.decode())
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._mc:
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.bootstrap_servers = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        code = _load().rd_kafka_mock_topic_create(self._mc, name.encode(), partitions, replication_factor)
        if code:
            raise RuntimeError(f"rd_kafka_mock_topic_create: error {code}")

    def set_group_consumer_heartbeat_interval_ms(self, ms: int) -> None:
        """The heartbeat interval the mock gives consumer-protocol groups (KIP-848) created from now on."""
        fn = getattr(_load(), "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms", None)
        if fn is None:
            raise RuntimeError("this librdkafka has no rd_kafka_mock_set_group_consumer_heartbeat_interval_ms")
        fn(self._mc, ms)

    def share_groups(self, *, earliest: bool = True, record_lock_duration_ms: int | None = None,
                     delivery_limit: int | None = None) -> None:
        """The mock's share group settings: auto.offset.reset earliest (else latest), the acquisition
        lock and the delivery limit."""
        lib = _load()
        if getattr(lib, "rd_kafka_mock_sharegroup_set_auto_offset_reset", None) is None:
            raise RuntimeError("this librdkafka's mock cluster has no share groups")
        lib.rd_kafka_mock_sharegroup_set_auto_offset_reset(self._mc, 1 if earliest else 0)
        if record_lock_duration_ms is not None:
            lib.rd_kafka_mock_sharegroup_set_record_lock_duration(self._mc, record_lock_duration_ms)
        if delivery_limit is not None:
            lib.rd_kafka_mock_sharegroup_set_max_delivery_attempts(self._mc, delivery_limit)

    def close(self) -> None:
        if self._mc:
            _load().rd_kafka_mock_cluster_destroy(self._mc)
            _load().rd_kafka_destroy(self._rk)
            self._mc = self._rk = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
