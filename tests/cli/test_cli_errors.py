"""The first hour's mistakes: each is answered by one line naming the problem and a non-zero
exit status, never a traceback, and the service announces nothing when it does not start."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from groupcoord.client.connection import BrokerConnection
from groupcoord.cli import main

COMMAND = [sys.executable, "-m", "groupcoord.cli"]


def one_line_error(capsys, argv) -> str:
    """Run the command in this process; it must fail with exactly one line on stderr."""
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc != 0, (out, err)
    assert out == ""                          # nothing announced
    assert "Traceback" not in err and err.endswith("\n") and err.count("\n") == 1, err
    return err.strip()


@pytest.fixture
def taken_port():
    """A port some other program listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


# ---- serve ---------------------------------------------------------------------------------
def test_an_unknown_log_level_is_named_with_the_known_ones(capsys):
    line = one_line_error(capsys, ["serve", "--in-memory", "--port", "0", "--log-level", "verbose"])
    assert "--log-level" in line and "'verbose'" in line and "debug, info, warning or error" in line


def test_a_log_level_in_capitals_is_accepted(capsys, tmp_path):
    # checked once for every command, case-insensitively; this one then fails on its missing file
    line = one_line_error(capsys, ["simulate", str(tmp_path / "none.toml"), "--log-level", "WARNING"])
    assert "no such scenario file" in line


def test_a_topic_given_twice_with_different_counts_is_refused(capsys):
    line = one_line_error(capsys, ["serve", "--in-memory", "--port", "0", "--topic", "a:3", "--topic", "a:5"])
    assert line == "groupcoord: --topic a is given twice with different partition counts (3 and 5)"


def test_a_topic_repeated_identically_is_created_once(tmp_path):
    proc = subprocess.Popen([*COMMAND, "serve", "--in-memory", "--port", "0", "--log-level", "warning",
                             "--topic", "a:3", "--topic", "a:3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("bootstrap servers: "), proc.stderr.read() if not line else line
        host, port = line.split(": ", 1)[1].strip().rsplit(":", 1)

        async def metadata():
            conn = await BrokerConnection(host, int(port)).connect()
            try:
                return await conn.request(3, 1, {"topics": None})
            finally:
                conn.close()
        md = asyncio.run(metadata())
        assert [(t["name"], len(t["partitions"])) for t in md["topics"]] == [("a", 3)]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0 and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_missing_config_file_is_named_as_such(capsys, tmp_path):
    missing = tmp_path / "broker.properties"
    line = one_line_error(capsys, ["serve", "--in-memory", "--port", "0", "--config", str(missing)])
    assert line == f"groupcoord: --config {missing}: cannot read it: No such file or directory"
    assert "listen" not in line


def test_a_data_dir_that_is_a_file_is_named_as_such(capsys, tmp_path):
    a_file = tmp_path / "data"
    a_file.write_text("")
    line = one_line_error(capsys, ["serve", "--port", "0", "--data-dir", str(a_file)])
    assert line.startswith(f"groupcoord: --data-dir {a_file}: is a file")


def test_an_events_file_that_is_a_directory_is_named_as_such(capsys, tmp_path):
    line = one_line_error(capsys, ["serve", "--in-memory", "--port", "0", "--events", str(tmp_path)])
    assert line.startswith(f"groupcoord: --events {tmp_path}: is a directory")


def test_a_kafka_port_in_use_is_named(capsys, taken_port):
    line = one_line_error(capsys, ["serve", "--in-memory", "--port", str(taken_port)])
    assert line == f"groupcoord: cannot listen on 127.0.0.1:{taken_port} for node 0: Address already in use"


def test_with_the_admin_port_in_use_the_service_fails_before_announcing_and_names_the_port(capsys, taken_port):
    rc = main(["serve", "--in-memory", "--port", "0", "--http-port", str(taken_port)])
    out, err = capsys.readouterr()
    assert rc == 1 and "Traceback" not in err
    assert "bootstrap servers" not in out and out == ""
    assert err.splitlines()[-1] == (f"groupcoord: cannot listen on 127.0.0.1:{taken_port} for the admin listener: "
                                    "Address already in use")


# ---- scenario files (fleet, simulate) ---------------------------------------------------------
SCENARIO = """
duration_s = 5
[topics]
t = 2
[[groups]]
name = "g"
topics = ["t"]
members = 3
"""


def test_bad_toml_names_the_file_once(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[topics\n")
    line = one_line_error(capsys, ["simulate", str(path), "--no-progress"])
    assert line.startswith(f"groupcoord: {path}: not valid TOML: ") and line.count(str(path)) == 1


def test_a_member_index_beyond_the_group_is_refused_at_load(capsys, tmp_path):
    path = tmp_path / "m7.toml"
    path.write_text(SCENARIO + '[[events]]\nat_s = 1\naction = "crash"\ngroup = "g"\nmembers = [7]\n')
    line = one_line_error(capsys, ["fleet", str(path), "--no-progress"])
    assert line == (f"groupcoord: {path}: events[0].members: group 'g' has no member 7 "
                    "(it has members 0 to 2 at 1000 ms)")


def test_members_added_by_an_earlier_join_may_be_named(tmp_path):
    from groupcoord.sim import scenario
    path = tmp_path / "join.toml"
    path.write_text(SCENARIO + '[[events]]\nat_s = 2\naction = "crash"\nmembers = [4]\n'
                               '[[events]]\nat_s = 1\naction = "join"\ncount = 2\n')
    assert [e.action for e in scenario.load(path).events] == ["join", "crash"]
    path.write_text(SCENARIO + '[[events]]\nat_s = 1\naction = "crash"\nmembers = [4]\n'
                               '[[events]]\nat_s = 2\naction = "join"\ncount = 2\n')
    with pytest.raises(scenario.ScenarioError, match=r"events\[0\].members: group 'g' has no member 4"):
        scenario.load(path)


# ---- analyze -------------------------------------------------------------------------------------
EVENT = {"v": 1, "event": "group.created", "ts_ms": 1, "group": "g", "generation": 0, "state": "Empty",
         "members": 0, "protocol_type": None, "cause": "join_group"}


def analyze(tmp_path, log, **env_changes) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in env_changes}
    env.update({k: v for k, v in env_changes.items() if v is not None})
    return subprocess.run([*COMMAND, "analyze", str(log), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=120)


def assert_one_line(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("groupcoord analyze: ") and all(w in last for w in words), r.stderr


@pytest.fixture
def event_log(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(EVENT) + "\n")
    return path


def test_analyze_without_java_on_path_says_so_in_one_line(tmp_path, event_log):
    empty = tmp_path / "bin"
    empty.mkdir()
    r = analyze(tmp_path, event_log, PATH=str(empty), JAVA_HOME=None)
    assert_one_line(r, "Java", "no java on PATH")
    assert r.stderr.count("\n") == 1


def test_analyze_with_java_home_pointing_nowhere_says_so_in_one_line(tmp_path, event_log):
    r = analyze(tmp_path, event_log, JAVA_HOME=str(tmp_path / "nowhere"))
    assert_one_line(r, "Java", f"JAVA_HOME={tmp_path / 'nowhere'} has no bin/java")
    assert r.stderr.count("\n") == 1


def test_analyze_with_a_java_that_does_not_start_ends_on_one_line_naming_it(tmp_path, event_log):
    # past the check, PySpark's own error (JAVA_GATEWAY_EXITED) is caught: one line, not 28
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\nexit 1\n")
    java.chmod(0o755)
    r = analyze(tmp_path, event_log, JAVA_HOME=str(tmp_path / "jdk"))
    assert_one_line(r, "Spark did not start", str(java), "JAVA_GATEWAY_EXITED")


def test_analyze_of_a_file_that_is_not_an_event_log_says_so_before_spark_starts(tmp_path):
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    # with no java anywhere, reaching Spark would be a different error: the input is checked first
    r = analyze(tmp_path, scenario, PATH=str(tmp_path), JAVA_HOME=None)
    assert_one_line(r, f"{scenario}:1: not an event log")
    not_events = tmp_path / "other.jsonl"
    not_events.write_text('{"name": "x"}\n')
    r = analyze(tmp_path, not_events, PATH=str(tmp_path), JAVA_HOME=None)
    assert_one_line(r, f"{not_events}:1: not an event log", "no \"event\" type")


# ---- the command line itself ---------------------------------------------------------------
def test_an_unknown_option_of_a_subcommand_shows_that_subcommands_usage(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["groups", "--bogus"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: groupcoord groups ")
    assert err.rstrip().endswith("groupcoord groups: error: unrecognized arguments: --bogus")


def test_version_names_groupcoord_and_the_kafka_releases(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("groupcoord ") and out.rstrip().endswith("(emulates Kafka 4.3, 4.2, 4.1, 3.9; default 4.3)")


def test_the_startup_names_the_data_directory(tmp_path):
    data = tmp_path / "state"
    proc = subprocess.Popen([*COMMAND, "serve", "--data-dir", str(data), "--port", "0", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("bootstrap servers: "), proc.stderr.read()
        assert proc.stdout.readline() == f"data dir: {data} (groups, offsets, topics and their records are kept there)\n"
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    proc = subprocess.Popen([*COMMAND, "serve", "--in-memory", "--port", "0", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("bootstrap servers: "), proc.stderr.read()
        assert proc.stdout.readline() == "data dir: none, state in memory only (--in-memory)\n"
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
