"""The event log as typed columns: ``DIR/events/``, Parquet files written with pyarrow.

One file per event kind (``client.committed.parquet``, ``offset.committed.parquet``, ...), each
with one column per field of the kind's events, in their order, and ``_pos``: the event's index in
the log (its line number in events.jsonl, from 0), which orders the events of every file as one log.
Events of a kind with another set of fields (or order) get a file of their own
(``<kind>~2.parquet``, ...). The Parquet schema says everything a reader needs:

* a scalar field is a column of its type: ``int64``, ``double``, ``bool`` or ``string`` (a field
  that is null in every event of the file: a ``string`` column of nulls);
* a list of scalars of one type (``strategy``, ``protocols``) is a ``list<type>``;
* a list of tuples of one width (``offsets`` [[topic, partition, offset], ...], ``partitions``,
  ``owned``, ``records``, ``ranges``, ``batches``) is a ``list<struct<...>>`` whose fields are the
  tuple's positions in order (named: ``topic``, ``partition``, ``offset``...; ``_0``, ``_1``... for
  a list the names below do not know), each declared not nullable when no tuple has a null there;
* any other value (an object, a list of mixed items, an integer beyond int64) is a
  ``struct<json: string>``: the value as JSON text.

So the JSON lines can be rebuilt exactly (``groupcoord.analytics.eventfile.read_events``), and
``analyze`` reads the columns without parsing text. Written by :func:`write_events`
(``write_outputs(..., event_format=...)``), or from the columns of a sharded run's parts by
:func:`write_parts`: the same files.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import json
import pickle
import re
from pathlib import Path

EVENTS_DIR = "events"
POS = "_pos"                 # the column holding each event's index in the log

#: names of the positions of a list of tuples, by (field, width, type of the last position)
TUPLE_NAMES = {
    ("offsets", 3, int): ("topic", "partition", "offset"),
    ("partitions", 2, int): ("topic", "partition"),
    ("owned", 2, int): ("topic", "partition"),
    ("records", 4, int): ("topic", "partition", "first", "last"),
    ("records", 5, int): ("topic", "partition", "first", "last", "delivery_count"),
    ("records", 5, str): ("topic", "partition", "first", "last", "type"),
    ("ranges", 3, int): ("first", "last", "delivery_count"),
    ("batches", 3, str): ("first", "last", "type"),
}
_NONE = type(None)
#: a file's row groups written by a thread of their own while the next is made (_write_all)
_WRITE_BEHIND = True
_INT64 = (-(1 << 63), (1 << 63) - 1)
#: the held chunks' compression: lz4 makes them 0.2-0.3 us an event sooner than zstd and reads them
#: back in half its time, at twice the size (about 40 bytes an event; bench/README.md)
_CHUNK_CODEC = "lz4"


def _pa():
    import pyarrow as pa
    return pa


def _scalar_type(kinds: set):
    """The Arrow type of values of these Python types (None allowed), or None when they have none."""
    pa = _pa()
    kinds = kinds - {_NONE}
    return {frozenset({bool}): pa.bool_(), frozenset({int}): pa.int64(), frozenset({float}): pa.float64(),
            frozenset({str}): pa.string()}.get(frozenset(kinds))


def _fits(values, arrow_type, nulls: bool = True) -> bool:
    """Whether values (of Python types that give arrow_type; ``nulls``: None among them) fit it."""
    pa = _pa()
    if arrow_type == pa.int64():
        ints = [v for v in values if v is not None] if nulls else values
        return not ints or (_INT64[0] <= min(ints) and max(ints) <= _INT64[1])
    return True


def _json_column(values):
    """A field the typed columns do not fit: struct<json: string> (null stays null)."""
    pa = _pa()
    text = [None if v is None else json.dumps(v, separators=(",", ":"), default=str) for v in values]
    return pa.StructArray.from_arrays([pa.array(text, pa.string())], ["json"],
                                      mask=pa.array([v is None for v in values]))


def _tuple_list(name: str, values, items):
    """list<struct> of a list of equal-width tuples, or None when the items are not such tuples."""
    pa = _pa()
    widths = set(map(len, items))
    if len(widths) != 1:
        return None
    width = widths.pop()
    if not width:
        return None
    columns, types = list(zip(*items)), []          # (the positions' columns, transposed in C)
    for col in columns:
        kinds = set(map(type, col))
        t = _scalar_type(kinds)
        if t is None or not _fits(col, t, _NONE in kinds):
            return None
        types.append(t)
    last = next((type(v) for v in reversed(columns[-1]) if v is not None), int)
    names = TUPLE_NAMES.get((name, width, last)) or tuple(f"_{i}" for i in range(width))
    # positions that hold no null are declared so (readers need not look for one)
    fields = [pa.field(n, t, nullable=None in c) for n, c, t in zip(names, columns, types)]
    struct = pa.StructArray.from_arrays([pa.array(c, t) for c, t in zip(columns, types)], fields=fields)
    if None in values:
        offsets, n = [], 0              # each list's start (a null one: a null start), then the end
        for v in values:
            offsets.append(None if v is None else n)
            n += len(v) if v is not None else 0
        offsets.append(n)
    else:
        offsets = [0, *itertools.accumulate(map(len, values))]
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct)


def _column(name: str, values):
    """The Arrow array of one field's values (the module docstring says how each is stored)."""
    pa = _pa()
    kinds = set(map(type, values))
    if kinds <= {_NONE}:
        return pa.array(values, pa.string())
    t = _scalar_type(kinds)
    if t is not None:
        # (not floats: -0.0 == 0.0, and the log keeps which)
        if len(kinds) == 1 and t != pa.float64() and values.count(values[0]) == len(values) and _fits(values[:1], t):
            return pa.repeat(pa.scalar(values[0], t), len(values))   # "v", "event": no per-value conversion
        return pa.array(values, t) if _fits(values, t, _NONE in kinds) else _json_column(values)
    if kinds <= {list, _NONE}:
        items = [x for v in values if v for x in v] if _NONE in kinds else list(itertools.chain.from_iterable(values))
        item_kinds = set(map(type, items))
        if not items:
            return pa.array(values, pa.list_(pa.string()))
        t = _scalar_type(item_kinds)
        if t is not None and _fits(items, t):
            return pa.array(values, pa.list_(t))
        if item_kinds == {list}:
            column = _tuple_list(name, values, items)
            if column is not None:
                return column
    return _json_column(values)


def _file_name(kind, taken: set) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]", "_", str(kind)) or "_"
    name, n = f"{base}.parquet", 1
    while name in taken:
        n += 1
        name = f"{base}~{n}.parquet"
    taken.add(name)
    return name


def _no_values(array) -> str | None:
    """What a chunk's column says of the column's type: nothing when it holds nulls only ("nulls":
    a ``string`` column of nulls) or lists without an item ("lists": ``list<string>``, and nulls);
    None: its type."""
    pa = _pa()
    if array.null_count == len(array):
        return "nulls"
    if pa.types.is_list(array.type) and array.type.value_type == pa.string() and not len(array.values):
        return "lists"
    return None


def _loose(arrow_type):
    """The type with every struct field nullable: chunks that differ only in that have one type."""
    pa = _pa()
    if pa.types.is_list(arrow_type) and pa.types.is_struct(arrow_type.value_type):
        item = arrow_type.value_type
        return pa.list_(pa.struct([pa.field(f.name, f.type) for f in item]))
    return arrow_type


def _is_json(arrow_type) -> bool:
    pa = _pa()
    return pa.types.is_struct(arrow_type) and [f.name for f in arrow_type] == ["json"]


def _values(array) -> list:
    """A typed chunk's column as the events' values again (tuples as lists; JSON text parsed, which
    is not always the value it was made of: see EventWriter._convert)."""
    pa = _pa()
    values = array.to_pylist()
    if _is_json(array.type):
        return [None if v is None else json.loads(v["json"]) for v in values]
    if pa.types.is_list(array.type) and pa.types.is_struct(array.type.value_type):
        return [None if v is None else [list(x.values()) for x in v] for v in values]
    return values


def _target(chunks: list):
    """The type of one field's column of all of a file's chunks (each described by its type and
    :func:`_no_values`), as :func:`_column` gives it of all the values at once: chunks of nulls or
    empty lists take the type the others agree on, and a struct field is nullable when it is in any
    chunk. None: chunks that do not join so (rare): their values decide (:func:`_joined`)."""
    pa = _pa()
    telling = {t for t, empty in chunks if not empty}
    if any(empty == "lists" for _, empty in chunks) and not all(pa.types.is_list(t) for t in telling):
        return None                                      # lists beside values that are not lists
    if len(telling) <= 1:
        # no chunk tells: nulls only (string), or empty lists somewhere (list<string>)
        return telling.pop() if telling else max((t for t, _ in chunks), key=pa.types.is_list)
    if len({_loose(t) for t in telling}) != 1:
        return None
    item = _loose(telling.pop()).value_type
    # a struct field not nullable in every chunk that says so
    nullable = {f.name for t, empty in chunks if not empty for f in t.value_type if f.nullable}
    return pa.list_(pa.struct([pa.field(f.name, f.type, nullable=f.name in nullable) for f in item]))


def _conform(chunk, target):
    """A chunk's column as a column of the type :func:`_target` found."""
    pa = _pa()
    if chunk.type == target:
        return chunk
    if chunk.null_count == len(chunk):
        return pa.nulls(len(chunk), target)
    if _no_values(chunk):                                   # empty lists (and nulls): no values to convert
        return pa.ListArray.from_arrays(chunk.offsets, pa.array([], target.value_type), mask=chunk.is_null())
    return chunk.cast(target)                                # (struct fields made nullable)


def _joined(name: str, chunks: list, raw: list | None = None):
    """One field's column of all of a file's chunks, as :func:`_column` makes it of all its values
    at once (:func:`_target`); chunks that do not join are made one column again from their values
    (``raw``: a chunk's values as they were, None where its column gives them back)."""
    pa = _pa()
    target = _target([(c.type, _no_values(c)) for c in chunks])
    if target is None:
        raw = raw or [None] * len(chunks)
        return _column(name, [v for c, r in zip(chunks, raw) for v in (_values(c) if r is None else r)])
    return pa.chunked_array([_conform(c, target) for c in chunks], target)


class EventWriter:
    """Writes the events, given one by one in the log's order, as ``out_dir/events/``, holding
    neither the events nor their columns: each kind's events are turned into columns 16k at a time,
    kept compressed (Arrow IPC, lz4: about a quarter of the columns' size) with their types, and
    written at :meth:`close`, a row group at a time. The files are those of the whole log's columns
    made at once (:func:`_target`)."""

    ROW_GROUP = 1 << 17     # rows of a row group: input splits for Spark's cores within one kind's file
    CHUNK = 1 << 14         # events of one file turned into columns at once (the events held: at most this many a file)
    #: rows of a chunk's record batches (compressed one by one): what the merge of many parts
    #: (write_parts) holds of each at least
    PIECE = 1 << 11

    def __init__(self, out_dir) -> None:
        self.path = Path(out_dir) / EVENTS_DIR
        self.pos = 0
        self._pending: dict[tuple, tuple[list, list]] = {}   # (kind, fields) -> (events, their positions)
        self._first: dict[tuple, int] = {}                   # (kind, fields) -> its first event's position
        # (kind, fields) -> [(the chunk's columns as compressed Arrow IPC, [(type, _no_values) per
        # column], {column: its values pickled, for a JSON text column})]
        self._chunks: dict[tuple, list] = {}

    def add(self, e: dict) -> None:
        shape = (e.get("event"), tuple(e))
        pending = self._pending.get(shape)
        if pending is None:
            if POS in shape[1]:
                raise ValueError(f"{shape[0]}: an event field named {POS!r} (the column of the events' positions)")
            pending = self._pending[shape] = ([], [])
            self._chunks[shape] = []
            self._first[shape] = self.pos
        pending[0].append(e)
        pending[1].append(self.pos)
        self.pos += 1
        if len(pending[1]) >= self.CHUNK:
            self._convert(shape)

    def _convert(self, shape) -> None:
        pa = _pa()
        events, positions = self._pending.get(shape, ((), ()))
        if positions:
            keys = shape[1]
            # the fields' values, column by column (the events of a shape have its keys in its
            # order: transposed in C, a third of a column's cost of one list each)
            columns = [list(c) for c in zip(*[e.values() for e in events])]
            arrays = [_column(k, c) for k, c in zip(keys, columns)]
            arrays.append(pa.array(positions, pa.int64()))
            table = pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))])
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=_CHUNK_CODEC)) as w:
                w.write_table(table, max_chunksize=self.PIECE)
            # a JSON text column's values are kept too (pickled): parsed back they may not be what
            # made it (a tuple, an object written with str()), should the whole column need them
            raw = {}
            for i, (c, a) in enumerate(zip(columns, arrays)):
                if _is_json(a.type):
                    with contextlib.suppress(Exception):
                        raw[i] = pickle.dumps(c)
            self._chunks[shape].append((sink.getvalue(), [(a.type, _no_values(a)) for a in arrays], raw))
            self._pending[shape] = ([], [])

    @classmethod
    def of_part(cls, out_dir, part: list) -> "EventWriter":
        """A writer holding what :meth:`part` gave (its close() writes those files)."""
        writer = cls(out_dir)
        writer._chunks = {shape: chunks for shape, _, chunks in part}
        writer._first = {shape: first for shape, first, _ in part}
        return writer

    def part(self) -> list:
        """What this writer holds, for :func:`write_parts` (in another process): (shape, its first
        event's position, its chunks) of each shape, in the order the shapes came."""
        for shape in list(self._pending):
            self._convert(shape)
        self._pending.clear()
        return [(shape, self._first[shape], chunks) for shape, chunks in self._chunks.items()]

    @staticmethod
    def _columns(chunk) -> list:
        _pa()
        import pyarrow.ipc
        return [c.combine_chunks() for c in pyarrow.ipc.open_stream(chunk[0]).read_all().columns]

    def close(self) -> Path:
        """Write the files (an earlier log's in that directory removed); returns the directory."""
        import pyarrow.parquet as pq
        pa = _pa()
        self.path.mkdir(parents=True, exist_ok=True)
        for old in self.path.glob("*.parquet"):            # a log written here before
            old.unlink()
        taken: set[str] = set()
        for shape in list(self._chunks):                    # (in the order the shapes came)
            self._convert(shape)
            chunks = self._chunks.pop(shape)
            names = [*shape[1], POS]
            targets = [_target([c[1][i] for c in chunks]) for i in range(len(names))]
            path = self.path / _file_name(shape[0], taken)
            if None in targets:                             # (rare) columns made again of their values
                columns = [self._columns(c) for c in chunks]
                table = pa.Table.from_arrays(
                    [_joined(k, [c[i] for c in columns], [_raw(c, i) for c in chunks]) for i, k in enumerate(names)],
                    names=names)
                pq.write_table(table.combine_chunks(), path, row_group_size=self.ROW_GROUP)
                continue
            schema = pa.schema([pa.field(k, t) for k, t in zip(names, targets)])
            per_group = max(1, self.ROW_GROUP // self.CHUNK)

            def tables():              # (taken whole in this pass of the loop)
                for first in range(0, len(chunks), per_group):
                    group = [self._columns(c) for c in chunks[first:first + per_group]]
                    table = pa.Table.from_arrays(
                        [pa.chunked_array([_conform(c[i], t) for c in group], t) for i, t in enumerate(targets)],
                        schema=schema)
                    # (one chunk a column: Parquet's dictionary fallback and pages depend on the
                    # chunks, and a log merged from shards is chunked otherwise: write_parts)
                    yield table.combine_chunks()
            with pq.ParquetWriter(path, schema) as writer:
                _write_all(writer, tables(), self.ROW_GROUP)
        self._pending.clear()
        return self.path


def write_parts(out_dir, parts: list[list], keys: list) -> Path:
    """The files of a log run in parts (shards of its groups): ``parts`` holds each part's
    :meth:`EventWriter.part` (emptied here as its files are written), ``keys`` its events' log keys
    (int64s, in its order: they must not decrease). The log is the parts' events by key, at one key
    a part's before a later part's, each part's in its order (heapq.merge's order); the files are
    those an EventWriter given that log writes, made of the parts' columns by Arrow and numpy (no
    event goes through Python again)."""
    import numpy as np
    import pyarrow.parquet as pq
    pa = _pa()
    if len(parts) == 1:
        writer = EventWriter.of_part(out_dir, parts[0])
        parts[0].clear()
        return writer.close()
    # each part's positions in the log: a stable sort of the parts' keys, one part after another
    ks = [np.asarray(k, np.int64) for k in keys]
    for k in ks:
        if len(k) > 1 and (np.diff(k) < 0).any():
            raise ValueError("a part's events are not in the order of their log keys")
    where = np.empty(sum(map(len, ks)), np.int64)
    where[np.argsort(np.concatenate(ks), kind="stable")] = np.arange(len(where), dtype=np.int64)
    starts = np.cumsum([0] + [len(k) for k in ks])
    logpos = [where[starts[i]:starts[i + 1]] for i in range(len(ks))]
    shapes: dict[tuple, list] = {}          # shape -> [(the part's index, its chunks of the shape)]
    first: dict[tuple, int] = {}            # shape -> its first event's position in the log
    for i, part in enumerate(parts):
        for shape, at, chunks in part:
            shapes.setdefault(shape, []).append((i, chunks))
            p = int(logpos[i][at])
            first[shape] = min(first.get(shape, p), p)
        part.clear()                        # (each shape's chunks go once its file is written)
    path = EventWriter(out_dir).path
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*.parquet"):
        old.unlink()
    taken: set[str] = set()
    for shape in sorted(shapes, key=first.__getitem__):      # in the order the shapes came in the log
        held = shapes.pop(shape)
        names = [*shape[1], POS]
        targets = [_target([c[1][j] for _, chunks in held for c in chunks]) for j in range(len(names))]
        file = path / _file_name(shape[0], taken)

        def in_log(i: int, columns: list) -> list:      # a chunk's positions: the log's
            return columns[:-1] + [pa.array(logpos[i][columns[-1].to_numpy()], pa.int64())]
        if None in targets:                             # (rare) columns made again of their values
            columns = [in_log(i, EventWriter._columns(c)) for i, chunks in held for c in chunks]
            table = pa.Table.from_arrays(
                [_joined(k, [c[j] for c in columns], [_raw(c, j) for _, chunks in held for c in chunks])
                 for j, k in enumerate(names)], names=names)
            table = table.take(pa.array(np.argsort(table.column(POS).to_numpy(), kind="stable")))
            pq.write_table(table.combine_chunks(), file, row_group_size=EventWriter.ROW_GROUP)
            continue
        schema = pa.schema([pa.field(k, t) for k, t in zip(names, targets)])

        def tables(i: int, chunks: list):
            for c in chunks:
                # a record batch at a time: 50 parts holding a whole chunk each took 450 MB more
                # than the run itself (the 10,000-member hour's assignments)
                for batch in pa.ipc.open_stream(c[0]):
                    columns = in_log(i, batch.columns)
                    yield pa.Table.from_arrays([_conform(a, t) for a, t in zip(columns, targets)], schema=schema)
        # the rows of each write_table call and its row groups as EventWriter.close has them
        rows = max(1, EventWriter.ROW_GROUP // EventWriter.CHUNK) * EventWriter.CHUNK
        with pq.ParquetWriter(file, schema) as out:
            merged = _in_order([tables(i, chunks) for i, chunks in held], rows)
            _write_all(out, (t.combine_chunks() for t in merged), EventWriter.ROW_GROUP)
    return path


def _write_all(out, tables, row_group_size: int) -> None:
    """``out.write_table`` of each of the tables (a row group's rows each), in order. With
    _WRITE_BEHIND on a thread of its own while the caller makes the next table: Parquet's encoding
    there, the making (Arrow's and numpy's work) here, each letting go of the GIL (bench/README.md).
    One table at most waits to be written; a write's error is the call's, and no table is written
    after it."""
    if not _WRITE_BEHIND:
        for table in tables:
            out.write_table(table, row_group_size=row_group_size)
        return
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="groupcoord-parquet") as writer:
        pending = None
        try:
            for table in tables:
                if pending is not None:
                    done, pending = pending, None
                    done.result()
                pending = writer.submit(out.write_table, table, row_group_size=row_group_size)
        finally:
            if pending is not None:
                # (awaited here, not by the pool's end: should the making have failed meanwhile, a
                # failed write's error is still the one raised, as it would have come first)
                pending.result()


def _in_order(streams: list, rows: int):
    """The rows of the streams' tables in the order of their last column (each stream's tables
    follow it already), as tables of ``rows`` rows (the last fewer): a stream's rows are held only
    until every other stream has shown that none of its own comes before them."""
    import numpy as np
    pa = _pa()
    held: list[list] = [[] for _ in streams]
    count = [0] * len(streams)
    live = [True] * len(streams)
    out: list = []
    out_rows = 0
    # (a stream holds about its share of a table's rows: the parts of a run in batches are many)
    want = max(1, rows // len(streams))
    while True:
        for i, stream in enumerate(streams):
            while live[i] and count[i] < want:
                t = next(stream, None)
                if t is None:
                    live[i] = False
                elif len(t):
                    held[i].append(t)
                    count[i] += len(t)
        if not any(count):
            break
        # what a live stream holds last bounds what may go: its next rows come after it
        bound = min((held[i][-1].column(-1)[-1].as_py() for i in range(len(streams)) if live[i]), default=None)
        pieces = []
        for i in range(len(streams)):
            if not count[i]:
                continue
            t = pa.concat_tables(held[i])
            cut = len(t) if bound is None else int(np.searchsorted(t.column(-1).to_numpy(), bound, side="right"))
            if cut:
                pieces.append(t.slice(0, cut))
            rest = t.slice(cut)
            held[i], count[i] = ([rest], len(rest)) if len(rest) else ([], 0)
        merged = pa.concat_tables(pieces)
        out.append(merged.take(pa.array(np.argsort(merged.column(-1).to_numpy(), kind="stable"))))
        out_rows += len(merged)
        while out_rows >= rows:
            t = pa.concat_tables(out)
            yield t.slice(0, rows)
            rest = t.slice(rows)
            out, out_rows = ([rest], len(rest)) if len(rest) else ([], 0)
    if out_rows:
        yield pa.concat_tables(out)


def _raw(chunk, i: int) -> list | None:
    kept = chunk[2].get(i)
    return None if kept is None else pickle.loads(kept)


def write_events(out_dir, events) -> Path:
    """Write the events (in the log's order) as ``out_dir/events/``; returns that directory."""
    writer = EventWriter(out_dir)
    for e in events:
        writer.add(e)
    return writer.close()
