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
(``write_outputs(..., event_format=...)``).
"""
from __future__ import annotations

import json
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
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _pa():
    import pyarrow as pa
    return pa


def _scalar_type(kinds: set):
    """The Arrow type of values of these Python types (None allowed), or None when they have none."""
    pa = _pa()
    kinds = kinds - {_NONE}
    return {frozenset({bool}): pa.bool_(), frozenset({int}): pa.int64(), frozenset({float}): pa.float64(),
            frozenset({str}): pa.string()}.get(frozenset(kinds))


def _fits(values, arrow_type) -> bool:
    pa = _pa()
    if arrow_type == pa.int64():
        ints = [v for v in values if v is not None]
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
    columns, types = [], []
    for i in range(width):
        col = [x[i] for x in items]
        t = _scalar_type(set(map(type, col)))
        if t is None or not _fits(col, t):
            return None
        columns.append(col)
        types.append(t)
    last = next((type(v) for v in reversed(columns[-1]) if v is not None), int)
    names = TUPLE_NAMES.get((name, width, last)) or tuple(f"_{i}" for i in range(width))
    # positions that hold no null are declared so (readers need not look for one)
    fields = [pa.field(n, t, nullable=None in c) for n, c, t in zip(names, columns, types)]
    struct = pa.StructArray.from_arrays([pa.array(c, t) for c, t in zip(columns, types)], fields=fields)
    offsets, n = [], 0                  # each list's start (a null one: a null start), then the end
    for v in values:
        offsets.append(None if v is None else n)
        n += len(v) if v is not None else 0
    offsets.append(n)
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
        return pa.array(values, t) if _fits(values, t) else _json_column(values)
    if kinds <= {list, _NONE}:
        items = [x for v in values if v for x in v]
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


def write_events(out_dir, events: list[dict]) -> Path:
    """Write the events (in the log's order) as ``out_dir/events/``; returns that directory."""
    import pyarrow.parquet as pq
    pa = _pa()
    shapes: dict[tuple, list[int]] = {}
    for i, e in enumerate(events):
        shapes.setdefault((e.get("event"), tuple(e)), []).append(i)
    path = Path(out_dir) / EVENTS_DIR
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*.parquet"):            # a log written here before
        old.unlink()
    taken: set[str] = set()
    for (kind, keys), positions in shapes.items():
        if POS in keys:
            raise ValueError(f"{kind}: an event field named {POS!r} (the column of the events' positions)")
        mine = [events[i] for i in positions]
        arrays = [_column(k, [e[k] for e in mine]) for k in keys]
        arrays.append(pa.array(positions, pa.int64()))
        table = pa.Table.from_arrays(arrays, names=[*keys, POS])
        # row groups of 128k events: input splits for Spark's cores within one kind's file
        pq.write_table(table, path / _file_name(kind, taken), row_group_size=1 << 17)
    return path
