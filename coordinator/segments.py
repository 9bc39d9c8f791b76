"""The data plane's records on disk: each partition's log as Kafka lays it out, segment files of record
batches.

Layout: ``DIR/<topic>-<partition>/<base offset, 20 digits>.log``, each file the partition's record
batches from its base offset on, byte for byte as Produce carried them (their base offsets set), as a
Kafka ``.log`` segment holds them (no index files: the batches are read back at start and kept in
memory). A produce's batches are written (os.write) before it is acknowledged, so a kill -9 loses
none; fsynced with the other logs (:meth:`SegmentFiles.sync`).

Recovery at load: each file's batches are read in order. In the last (active) segment, the first one
that does not read back (cut short, a bad CRC, not a v2 batch, an offset going back) is a torn tail: the
file is truncated there with a warning, as Kafka's recovery truncates its active segment. In an older
segment, such damage is logged as an error and the rest of that file skipped, the file left as it is.
A write that fails is cut off again at once, and so is a produce's write whose end offset record fails.
"""
from __future__ import annotations

import os
import shutil
from collections import OrderedDict
from typing import Iterator

import structlog

from groupcoord.protocol import records
from groupcoord.protocol.errors import DecodeError

log = structlog.get_logger("groupcoord.storage")

_SUFFIX = ".log"
#: the most segment files kept open at once (the least recently written is closed, fsynced first if it
#: has unsynced writes): a client producing to 100,000 partitions must not exhaust the descriptors
MAX_OPEN = 256


class SegmentFiles:
    """The segment files of every partition under ``directory``."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        # (topic, partition) -> (base, fd) of its active segment, least recently written first
        self._active: OrderedDict[tuple[str, int], tuple[int, int]] = OrderedDict()
        self._dirty: set[int] = set()
        self._last: tuple | None = None      # ((topic, partition), fd, size before) of the last write

    def partition_dir(self, topic: str, partition: int) -> str:
        return os.path.join(self.directory, f"{topic}-{partition}")

    def segment_path(self, topic: str, partition: int, base_offset: int) -> str:
        return os.path.join(self.partition_dir(topic, partition), f"{base_offset:020d}{_SUFFIX}")

    def bases(self, topic: str, partition: int) -> list[int]:
        """The base offsets of the partition's segment files, in order."""
        try:
            names = os.listdir(self.partition_dir(topic, partition))
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            if name.endswith(_SUFFIX) and name[:-len(_SUFFIX)].isdigit():
                out.append(int(name[:-len(_SUFFIX)]))
        return sorted(out)

    def load(self, topic: str, partition: int) -> Iterator[tuple[int, bytes, records.BatchHeader]]:
        """(segment base, batch, its header) of every batch of the partition, recovering each file."""
        bases = self.bases(topic, partition)
        next_offset = -1
        for n, base in enumerate(bases):
            path = self.segment_path(topic, partition, base)
            with open(path, "rb") as f:
                data = f.read()
            pos = 0
            while pos < len(data):
                why = None
                try:
                    header = records.read_batch_header(data, pos)
                    batch = data[pos:pos + header.size]
                    if len(batch) < header.size:
                        why = "batch cut short"
                    elif not records.verify_crc(batch):
                        why = "bad CRC"
                    elif header.base_offset < next_offset:
                        why = f"batch at offset {header.base_offset} below the log's end {next_offset}"
                except (DecodeError, ValueError) as exc:
                    why = str(exc)
                if why is not None:
                    if n == len(bases) - 1:         # the active segment's torn tail: cut, as Kafka's recovery
                        log.warning("truncating segment", path=path, at=pos, dropped_bytes=len(data) - pos,
                                    reason=why)
                        os.truncate(path, pos)
                    else:                           # damage in an older segment: kept as it is, its rest skipped
                        log.error("skipping damaged segment tail", path=path, at=pos,
                                  skipped_bytes=len(data) - pos, reason=why)
                    break
                yield base, batch, header
                next_offset = header.last_offset + 1
                pos += header.size

    def append(self, topic: str, partition: int, segment_base: int, data: bytes) -> None:
        """Write batches (their base offsets set) to the segment of ``segment_base``, created if new. A
        failed write is cut off again (nothing of it stays to be read back); :meth:`undo` does the same
        for the last write when what follows it fails."""
        key = (topic, partition)
        active = self._active.get(key)
        if active is None or active[0] != segment_base:
            if active is not None:
                del self._active[key]       # (first: a failed roll must not leave a closed descriptor here)
                self._close(active, fsync=True)     # a rolled segment is on disk before the next one takes writes
            os.makedirs(self.partition_dir(topic, partition), exist_ok=True)
            fd = os.open(self.segment_path(topic, partition, segment_base), os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                         0o644)
            active = self._active[key] = (segment_base, fd)
            if len(self._active) > MAX_OPEN:
                self._close(self._active.popitem(last=False)[1])
        else:
            self._active.move_to_end(key)
        fd = active[1]
        before = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            os.ftruncate(fd, before)
            raise
        self._last = (key, fd, before)
        self._dirty.add(fd)

    def _close(self, active: tuple[int, int], fsync: bool = False) -> None:
        fd = active[1]
        if self._last is not None and self._last[1] == fd:
            self._last = None
        try:
            if fsync or fd in self._dirty:
                os.fsync(fd)
        finally:
            self._dirty.discard(fd)
            os.close(fd)

    def _discard(self, active: tuple[int, int]) -> None:
        """Close a descriptor whose file goes (nothing to fsync)."""
        if self._last is not None and self._last[1] == active[1]:
            self._last = None
        self._dirty.discard(active[1])
        os.close(active[1])

    def undo(self, topic: str, partition: int) -> None:
        """Cut off the partition's last write (its produce failed after it)."""
        if self._last is not None and self._last[0] == (topic, partition):
            _, fd, before = self._last
            active = self._active.get((topic, partition))
            if active is not None and active[1] == fd:
                os.ftruncate(fd, before)
        self._last = None

    def delete_segments(self, topic: str, partition: int, bases: list[int]) -> None:
        """Delete the segment files of these base offsets (retention), the active one's descriptor closed."""
        key = (topic, partition)
        active = self._active.get(key)
        if active is not None and active[0] in bases:
            del self._active[key]
            self._discard(active)
        for base in bases:
            try:
                os.unlink(self.segment_path(topic, partition, base))
            except FileNotFoundError:
                pass

    def delete_partition(self, topic: str, partition: int) -> None:
        """The partition's topic was deleted: its directory goes."""
        active = self._active.pop((topic, partition), None)
        if active is not None:
            self._discard(active)
        shutil.rmtree(self.partition_dir(topic, partition), ignore_errors=True)

    def sync(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for fd in dirty:
            os.fsync(fd)

    def close(self) -> None:
        self.sync()
        for _, fd in self._active.values():
            os.close(fd)
        self._active.clear()
