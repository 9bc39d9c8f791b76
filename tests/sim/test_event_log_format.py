"""The typed event log (sim/eventfile.py): every value of every field comes back, as the JSON line
it would have been, and `simulate --events-format` writes what it says."""
import json

import pyarrow.parquet as pq

from groupcoord.analytics.eventfile import json_lines, kind_of, read_events
from groupcoord.cli import main
from groupcoord.sim.eventfile import POS, write_events
from groupcoord.sim.model import write_outputs


def line(e: dict) -> str:
    return json.dumps(e, separators=(",", ":"), default=str) + "\n"


class Named:
    def __str__(self):
        return "named"


def test_every_kind_of_value_round_trips(tmp_path):
    base = {"v": 1, "ts_ms": 5, "group": "g"}
    events = [
        {**base, "event": "client.committed", "client": "g/m000", "member": "m-1", "generation": 3,
         "offsets": [["t", 0, 10], ["t.b-c_d", 11, -1]]},
        {**base, "event": "client.committed", "client": "g/m001", "member": "", "generation": -1,
         "offsets": [["t", 2, 2 ** 62]]},
        # the same kind with its fields in another order, one more, one less: a file of its own
        {"event": "client.committed", "v": 1, "ts_ms": 6, "group": "g", "offsets": [], "extra": True},
        {**base, "event": "client.started", "strategy": ["range", "cooperative-sticky"], "instance_id": None,
         "protocol": "eager"},
        {**base, "event": "client.started", "strategy": [], "instance_id": "g-m1", "protocol": "consumer"},
        {**base, "event": "client.assigned", "partitions": [], "owned": None},
        {**base, "event": "client.assigned", "partitions": [["t", 1]], "owned": [["t", 1], ["u", 0]]},
        {**base, "event": "client.acknowledged", "records": [["t", 0, 1, 3, "ACCEPT"]], "error": None},
        {**base, "event": "client.records_polled", "records": [["t", 0, 1, 3, 2]], "ratio": 0.5},
        # no common type: JSON text (an object, mixed items, a huge integer, a mixed tuple position,
        # a value json.dumps writes with str(), ints and floats)
        {**base, "event": "odd", "obj": {"a": [1, {"b": None}]}, "mixed": [1, "x", None, [2]], "huge": 2 ** 70,
         "tuples": [["t", 1], [2, "u"]], "named": Named(), "numbers": [1, 2.5], "flag": False,
         "nothing": None, "nested": [[["deep"]]], "ragged": [[1], [1, 2]], "escapes": "\"\\\n\u00e9\u2028"},
        {**base, "event": "odd", "obj": None, "mixed": None, "huge": 1, "tuples": None, "named": None,
         "numbers": [], "flag": True, "nothing": None, "nested": [], "ragged": [], "escapes": ""},
        {"v": 1, "event": "producer.produced", "ts_ms": 7, "producer": "t/p0", "topic": "t", "partition": 0,
         "first": 0, "last": 9},
    ]
    write_events(tmp_path, events)
    files = sorted(p.name for p in (tmp_path / "events").iterdir())
    assert files == ["client.acknowledged.parquet", "client.assigned.parquet", "client.committed.parquet",
                     "client.committed~2.parquet", "client.records_polled.parquet", "client.started.parquet",
                     "odd.parquet", "producer.produced.parquet"]
    assert kind_of("client.committed~2.parquet") == "client.committed"
    assert "".join(json_lines(tmp_path / "events")) == "".join(line(e) for e in events)
    assert read_events(tmp_path / "events")[0] == events[0]

    commits = pq.read_schema(tmp_path / "events" / "client.committed.parquet")
    assert str(commits.field("offsets").type) == \
        "list<element: struct<topic: string not null, partition: int64 not null, offset: int64 not null>>"
    assert commits.names[-1] == POS
    odd = pq.read_schema(tmp_path / "events" / "odd.parquet")
    for name in ("obj", "mixed", "huge", "tuples", "named", "nested", "ragged"):
        assert str(odd.field(name).type) == "struct<json: string>", name
    assert (str(odd.field("numbers").type), str(odd.field("flag").type), str(odd.field("nothing").type)) == \
        ("struct<json: string>", "bool", "string")
    acks = pq.read_schema(tmp_path / "events" / "client.acknowledged.parquet")
    assert acks.field("records").type.value_type.names == ["topic", "partition", "first", "last", "type"]


def test_write_outputs_writes_the_format_asked_and_removes_the_other(tmp_path):
    events = [{"v": 1, "event": "producer.produced", "ts_ms": 7, "producer": "t/p0", "topic": "t",
               "partition": 0, "first": 0, "last": 9}]
    write_outputs(tmp_path, events, {}, None, event_format="both")
    assert (tmp_path / "events.jsonl").read_text() == line(events[0])
    assert read_events(tmp_path / "events") == events
    write_outputs(tmp_path, events, {}, None, event_format="parquet")
    assert not (tmp_path / "events.jsonl").exists() and read_events(tmp_path / "events") == events
    write_outputs(tmp_path, events, {}, None)                  # the library's default: JSON lines
    assert (tmp_path / "events.jsonl").exists() and not (tmp_path / "events").exists()


def test_simulate_writes_parquet_by_default_and_json_lines_when_asked(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text("""name = "s"
duration_s = 20
topics = { t = 4 }
[[groups]]
name = "g"
topics = ["t"]
members = 2
""")
    assert main(["simulate", str(path), "--seed", "1", "--out", str(tmp_path / "p"), "--no-progress"]) == 0
    assert main(["simulate", str(path), "--seed", "1", "--out", str(tmp_path / "j"), "--no-progress",
                 "--events-format", "jsonl"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["events", "scenario.json", "summary.json"]
    assert sorted(p.name for p in (tmp_path / "j").iterdir()) == ["events.jsonl", "scenario.json", "summary.json"]
    text = (tmp_path / "j" / "events.jsonl").read_text()
    assert "".join(json_lines(tmp_path / "p" / "events")) == text and text.count("client.committed") > 2
