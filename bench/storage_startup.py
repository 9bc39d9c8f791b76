"""Start-up (replay) time of a log of N offset-commit records, before and after compaction.

    python bench/storage_startup.py [N]
"""
from __future__ import annotations

import sys
import tempfile
import time

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.service import Service


def load_ms(directory: str, **kw) -> tuple[float, dict]:
    store = st.LogStore(directory, **kw)
    svc = Service(store=store)
    t = time.perf_counter()
    stats = svc.load()
    ms = (time.perf_counter() - t) * 1000
    store.close()
    return ms, stats


def main(n: int = 100_000) -> None:
    with tempfile.TemporaryDirectory() as d:
        store = st.LogStore(d, fsync="never", compact_min_bytes=1 << 62)
        batch = []
        for i in range(n):   # one group, 100 partitions, n/100 commits each
            batch.append((st.OffsetCommitKey("bench-group", "orders", i % 100),
                          st.OffsetCommitValue(i, -1, "", 1_700_000_000_000 + i, -1)))
            if len(batch) == 1000:
                store.append(0, batch)
                batch = []
        store.append(0, batch)
        store.close()
        size = sum(__import__("os").path.getsize(store.path(p)) for p in store.partitions())
        before, stats = load_ms(d, compact_min_bytes=1 << 62)
        print(f"before compaction: {stats['records']} records, {size} bytes, load {before:.0f} ms")
        store = st.LogStore(d)
        store.load(0)
        store.compact(0)
        store.close()
        size = sum(__import__("os").path.getsize(store.path(p)) for p in store.partitions())
        after, stats = load_ms(d)
        print(f"after compaction:  {stats['records']} records, {size} bytes, load {after:.0f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
