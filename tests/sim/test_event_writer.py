"""The Parquet event log written a few events at a time (sim/eventfile.py's EventWriter turns each
kind's events into columns a chunk at a time) has the tables of the log's columns made at once."""
from __future__ import annotations

import heapq
import itertools
import random
import threading

import pyarrow.parquet as pq
import pytest

from groupcoord.sim.eventfile import EVENTS_DIR, EventWriter, write_parts


class Named:
    def __str__(self):
        return "named"


def _tables(path) -> dict:
    return {f.name: pq.read_table(f) for f in sorted((path / EVENTS_DIR).glob("*.parquet"))}


def _write(out, events, chunk: int, monkeypatch) -> dict:
    monkeypatch.setattr(EventWriter, "CHUNK", chunk)
    w = EventWriter(out)
    for e in events:
        w.add(e)
    w.close()
    return _tables(out)


def _ev(kind, **fields):
    return {"ts_ms": 0, "event": kind, **fields}


# each case: one field's values, event after event; chunks of two split them where a chunk alone
# would give another type than the whole column
CASES = {
    "null then int": [None, None, 3, 4, None],
    "int then null": [1, 2, None, None],
    "null only": [None, None, None],
    "empty lists then tuples": [[], None, [["t", 1]], [["t", 2], ["u", 0]]],
    "empty lists only": [[], [], None],
    "tuple position null in one chunk": [[["t", 1, None]], [["t", 1, None]], [["t", 2, 5]]],
    "tuple position null everywhere": [[["t", 1, None]], [["t", 2, None]]],
    "int then string": [1, 2, "x", "y"],
    "int then a huge one": [1, 2, 2**70, 3],
    "int then float": [1, 2, 1.5, -0.0],
    "bool then int": [True, False, 1, 0],
    "ints then tuples in lists": [[1, 2], [3], [["a", 1]], [["b", 2]]],
    "tuples of two then three": [[["t", 1]], [["t", 2]], [["t", 1, 9]], [["u", 0, 1]]],
    "object then int": [{"a": 1}, {"b": [1, 2]}, 5, None],
    "same value (a repeat column) then another": ["v", "v", "w", "v"],
    "lists of strings then of ints": [["a"], ["b"], [1], [2]],
    # empty lists beside values that are not lists
    "empty lists then strings": [[], [], "x", "y"],
    "empty lists then objects": [[], [], {"a": 1}, {"b": 2}],
    "null and an empty list then ints": [None, [], 5, 6],
    "empty lists then mixed lists": [[], [], [1, "a"], [2]],
    # values JSON text does not give back: tuples, an object written with str()
    "tuples then lists": [(1, 2), (3,), [4], [5]],
    "an object then strings": [Named(), Named(), "a", "b"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_field_written_in_chunks_has_the_column_of_all_its_values(case, tmp_path, monkeypatch):
    events = [_ev("k", field=v, n=i) for i, v in enumerate(CASES[case])]
    whole = _write(tmp_path / "whole", events, 1 << 30, monkeypatch)
    for chunk in (1, 2, 3):
        parts = _write(tmp_path / f"by{chunk}", events, chunk, monkeypatch)
        assert parts.keys() == whole.keys()
        for name, table in whole.items():
            assert parts[name].schema == table.schema, (case, chunk)
            assert parts[name].to_pylist() == table.to_pylist(), (case, chunk)


def test_kinds_and_shapes_interleaved_keep_their_files_and_positions(tmp_path, monkeypatch):
    rng = random.Random(5)
    kinds = ["a", "b", "c"]
    events = []
    for _ in range(400):
        kind = rng.choice(kinds)
        e = _ev(kind, x=rng.choice([None, rng.randrange(10), rng.randrange(10)]),
                owned=[[rng.choice("tu"), rng.randrange(4)] for _ in range(rng.randrange(3))])
        if kind == "c" and rng.random() < 0.3:
            e["extra"] = rng.choice([None, "s"])          # another shape of that kind: a file of its own
        events.append(e)
    whole = _write(tmp_path / "whole", events, 1 << 30, monkeypatch)
    monkeypatch.setattr(EventWriter, "ROW_GROUP", 14)          # row groups of two chunks
    parts = _write(tmp_path / "parts", events, 7, monkeypatch)
    assert parts.keys() == whole.keys() and len(whole) == 4
    for name, table in parts.items():
        groups = pq.ParquetFile(tmp_path / "parts" / EVENTS_DIR / name).metadata
        sizes = [groups.row_group(i).num_rows for i in range(groups.num_row_groups)]
        assert sum(sizes) == table.num_rows and all(n == 14 for n in sizes[:-1]) and 0 < sizes[-1] <= 14
    for name, table in whole.items():
        assert parts[name].schema == table.schema
        assert parts[name].to_pylist() == table.to_pylist()
    positions = sorted(p for t in whole.values() for p in t.column("_pos").to_pylist())
    assert positions == list(range(len(events)))


def _key(e) -> int:
    return e["ts_ms"] * 100 + (e["group"] or 0)


def _write_in_parts(out, events, parts: int, chunk: int, monkeypatch) -> dict:
    """The log written as a sharded run writes it: each part (a group's events go to one, an event
    of no group to any) turned into columns apart, then merged by the events' keys (ts_ms, then
    the group)."""
    monkeypatch.setattr(EventWriter, "CHUNK", chunk)
    writers = [EventWriter(out) for _ in range(parts)]
    keys = [[] for _ in range(parts)]
    for e in events:
        i = e["group"] % parts if e["group"] is not None else e["ts_ms"] % parts
        writers[i].add(e)
        keys[i].append(_key(e))
    write_parts(out, [w.part() for w in writers], keys)
    return _tables(out)


def _in_log_order(events, parts: int) -> list:
    """The log the parts make: heapq.merge of each part's events by key (as the JSON lines are merged)."""
    split = [[] for _ in range(parts)]
    for e in events:
        split[e["group"] % parts if e["group"] is not None else e["ts_ms"] % parts].append(e)
    return list(heapq.merge(*split, key=_key))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_log_written_in_parts_has_the_columns_of_the_whole(case, tmp_path, monkeypatch):
    # each part holds some of a field's values: the merged columns are those of all its values
    rng = random.Random(case)
    events = sorted((_ev("k", field=v, n=i, group=rng.randrange(3)) | {"ts_ms": i // 2}
                     for i, v in enumerate(CASES[case])), key=_key)
    for parts, chunk in ((2, 1), (3, 2), (2, 1 << 30)):
        whole = _write(tmp_path / f"whole{parts}", _in_log_order(events, parts), 1 << 30, monkeypatch)
        merged = _write_in_parts(tmp_path / f"p{parts}-{chunk}", events, parts, chunk, monkeypatch)
        assert merged.keys() == whole.keys()
        for name, table in whole.items():
            assert merged[name].schema == table.schema, (case, parts, chunk)
            assert merged[name].to_pylist() == table.to_pylist(), (case, parts, chunk)


def test_parts_merged_write_the_files_of_the_whole_log(tmp_path, monkeypatch):
    # kinds, shapes and groups interleaved, several events of several groups at one ms, events of
    # no group in every part at one ms: the files of the parts merged are those of the log written
    # by one writer, byte for byte, row groups too (of two chunks, of one, of a part of one)
    rng = random.Random(8)
    # part 0 (group 0) sees kind "c" with "extra" first, the log sees it without first (group 1)
    events = [_ev("c", group=1, x=1, owned=[]), _ev("c", group=0, x=2, owned=[]) | {"extra": "s", "ts_ms": 1}]
    for i in range(8, 500):
        kind = rng.choice("abc")
        e = _ev(kind, group=rng.choice([None, 1, 2, 3, 4, 5]), x=rng.choice([None, rng.randrange(10)]),
                owned=[[rng.choice("tu"), rng.randrange(4)] for _ in range(rng.randrange(3))])
        e["ts_ms"] = i // 4
        if kind == "c" and i > 50 and rng.random() < 0.3:
            e["extra"] = rng.choice([None, "s"])      # a shape first seen late: its file named after "c"'s
        events.append(e)
    events.sort(key=_key)
    for chunk, row_group, piece in ((7, 14, 7), (7, 10, 7), (7, 5, 7), (7, 14, 3), (7, 5, 2)):
        monkeypatch.setattr(EventWriter, "ROW_GROUP", row_group)
        monkeypatch.setattr(EventWriter, "PIECE", piece)        # (the merge reads a chunk piece by piece)
        for parts in (1, 2, 5, 12):
            whole, merged = tmp_path / f"whole-{chunk}-{row_group}-{piece}-{parts}", tmp_path / f"p-{chunk}-{row_group}-{piece}-{parts}"
            _write(whole, _in_log_order(events, parts), chunk, monkeypatch)
            _write_in_parts(merged, events, parts, chunk, monkeypatch)
            files = sorted(f.name for f in (whole / EVENTS_DIR).iterdir())
            assert files == sorted(f.name for f in (merged / EVENTS_DIR).iterdir())
            assert len(files) == 4
            for name in files:
                assert (merged / EVENTS_DIR / name).read_bytes() == (whole / EVENTS_DIR / name).read_bytes(), \
                    (chunk, row_group, piece, parts, name)


def test_parts_merged_write_the_bytes_of_the_whole_log_where_parquet_falls_back_from_a_dictionary(
        tmp_path, monkeypatch):
    # a column of strings all different beyond the Parquet writer's dictionary page (1 MB): where it
    # gives up the dictionary depends on how the table is chunked, which the merge changes
    rng = random.Random(3)
    events = sorted((_ev("k", group=rng.randrange(1, 4), text=f"{rng.getrandbits(128):032x}") | {"ts_ms": i // 3}
                     for i in range(140_000)), key=_key)
    _write(tmp_path / "whole", _in_log_order(events, 2), 1 << 12, monkeypatch)
    _write_in_parts(tmp_path / "parts", events, 2, 1 << 12, monkeypatch)
    name = "k.parquet"
    assert (tmp_path / "parts" / EVENTS_DIR / name).read_bytes() == (tmp_path / "whole" / EVENTS_DIR / name).read_bytes()


def test_the_merge_of_many_parts_holds_about_a_row_group_of_their_rows():
    # a run in batches (simulate.batches) has many parts: each stream holds its share of a table's
    # rows (and at least one of its tables), not a table's rows each
    import pyarrow as pa
    from groupcoord.sim.eventfile import _in_order
    k, size, tables = 50, 10, 8
    pulled = [0]

    def stream(i):
        for j in range(tables):
            pulled[0] += size
            yield pa.table({"pos": [i + k * (size * j + r) for r in range(size)]})
    merged = _in_order([stream(i) for i in range(k)], 100)
    first = next(merged)
    assert pulled[0] <= 100 + k * size and first.column(0).to_pylist() == list(range(100))
    rest = [t.column(0).to_pylist() for t in merged]
    assert [len(t) for t in rest] == [100] * (len(rest) - 1) + [len(rest[-1])]
    assert sum(rest, []) == list(range(100, k * size * tables))


def test_a_part_out_of_order_is_refused(tmp_path):
    w = EventWriter(tmp_path)
    w.add(_ev("k", group=1))
    w.add(_ev("k", group=1))
    with pytest.raises(ValueError, match="not in the order"):
        write_parts(tmp_path, [w.part(), EventWriter(tmp_path).part()], [[101, 100], []])



@pytest.mark.parametrize("behind", [False, True])
@pytest.mark.parametrize("way", ["merged", "one writer"])
def test_a_row_group_failing_ends_the_writing_with_its_error(tmp_path, monkeypatch, behind, way):
    """A file's row groups are written on a thread of their own while the next is made
    (eventfile._write_all): a write that fails ends the writing with its error, no row group is
    written after it, and no thread is left behind."""
    from groupcoord.sim import eventfile
    monkeypatch.setattr(eventfile, "_WRITE_BEHIND", behind)
    monkeypatch.setattr(EventWriter, "CHUNK", 2)
    monkeypatch.setattr(EventWriter, "ROW_GROUP", 2)
    written = []

    class Failing(pq.ParquetWriter):
        def write_table(self, table, *args, **kwargs):
            written.append(table.column("_pos").to_pylist())
            if len(written) == 2:
                raise OSError("disk full")
            super().write_table(table, *args, **kwargs)
    monkeypatch.setattr(pq, "ParquetWriter", Failing)
    threads = threading.active_count()
    writers = [EventWriter(tmp_path), EventWriter(tmp_path)]
    for t in range(6):
        for i, w in enumerate(writers if way == "merged" else writers[:1] * 2):
            w.add(_ev("k", ts_ms=t, group=i))
    with pytest.raises(OSError, match="disk full"):
        if way == "merged":
            write_parts(tmp_path, [w.part() for w in writers], [list(range(6)), list(range(6))])
        else:
            writers[0].close()
    assert written == [[0, 1], [2, 3]]          # the log's first rows, two a row group, then no more
    assert threading.active_count() == threads


class _Out:
    """A ParquetWriter's stand-in: the tables written, and on which thread; ``fail`` its error."""
    def __init__(self, fail=None):
        self.written, self.threads, self.fail = [], set(), fail

    def write_table(self, table, row_group_size):
        self.threads.add(threading.current_thread().name)
        if self.fail is not None:
            raise self.fail
        self.written.append(table)


def _making(fail_at: int, done: threading.Event | None = None):
    """Tables 0, 1, ...; the making of table ``fail_at`` fails (once ``done`` is set, if given)."""
    for i in itertools.count():
        if i == fail_at:
            if done is not None:
                done.wait(10)
            raise ValueError("no table")
        yield i


def test_a_write_failing_while_the_next_table_is_made_is_the_error(monkeypatch):
    from groupcoord.sim import eventfile
    monkeypatch.setattr(eventfile, "_WRITE_BEHIND", True)
    # table 0's write fails while the making of table 1 fails: the write came first, its error is
    # the one raised (the making's its context)
    with pytest.raises(OSError, match="disk full") as raised:
        eventfile._write_all(_Out(OSError("disk full")), _making(1), 2)
    assert isinstance(raised.value.__context__, ValueError)
    # table 0 written, the making of table 1 failing: the making's error, table 0's write awaited
    out, written = _Out(), threading.Event()
    real = out.write_table

    def write_table(table, row_group_size):
        real(table, row_group_size)
        written.set()
    out.write_table = write_table
    with pytest.raises(ValueError, match="no table"):
        eventfile._write_all(out, _making(1, written), 2)
    assert out.written == [0]
    assert out.threads and threading.main_thread().name not in out.threads


def test_the_row_groups_written_behind_are_the_same_file(tmp_path, monkeypatch):
    # merged from parts and written by one writer, row group after row group or behind the making
    from groupcoord.sim import eventfile
    threads = threading.active_count()
    monkeypatch.setattr(EventWriter, "CHUNK", 2)
    monkeypatch.setattr(EventWriter, "ROW_GROUP", 4)
    files = {}
    for behind in (False, True):
        monkeypatch.setattr(eventfile, "_WRITE_BEHIND", behind)
        writers = [EventWriter(tmp_path / str(behind)), EventWriter(tmp_path / str(behind))]
        for t in range(9):
            for i, w in enumerate(writers):
                w.add(_ev("k", ts_ms=t, group=i, n=t * 10 + i))
        out = write_parts(tmp_path / str(behind), [w.part() for w in writers], [list(range(9)), list(range(9))])
        files[behind] = {f.name: f.read_bytes() for f in out.iterdir()}
        assert pq.ParquetFile(out / "k.parquet").metadata.num_row_groups == 5      # (18 rows, 4 a group)
        whole = EventWriter(tmp_path / f"whole-{behind}")            # (one writer's close writes them too)
        for t in range(9):
            for i in range(2):
                whole.add(_ev("k", ts_ms=t, group=i, n=t * 10 + i))
        assert {f.name: f.read_bytes() for f in whole.close().iterdir()} == files[behind]
    assert files[False] == files[True]
    # and written behind by a thread of their own, in order, which is gone once they are
    monkeypatch.setattr(eventfile, "_WRITE_BEHIND", True)
    out = _Out()
    eventfile._write_all(out, iter(range(3)), 4)
    assert out.written == [0, 1, 2]
    assert len(out.threads) == 1 and threading.main_thread().name not in out.threads
    assert threading.active_count() == threads
