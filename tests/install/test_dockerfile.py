"""The image's command, run outside a container (no docker engine here): the Dockerfile's
ENTRYPOINT and CMD with its ENV, as a subprocess of the installed groupcoord, with the data dir in
a temporary directory and free ports. It starts, advertises what the environment says, and stops
on SIGTERM as `docker stop` sends it. The VOLUME and EXPOSE lines match the command's options."""
from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from groupcoord.client.connection import BrokerConnection
from groupcoord.cli import build_parser

ROOT = Path(__file__).parents[2]


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: comments dropped, continuation lines joined."""
    out, pending = [], ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def exec_form(text: str) -> list[str]:
    """ENTRYPOINT/CMD arguments: the JSON (exec) form, which docker runs without a shell."""
    value = json.loads(text)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), text
    return value


def env_of(args: list[str]) -> dict[str, str]:
    env = {}
    for text in args:
        words = shlex.split(text)
        if words and "=" not in words[0]:                 # legacy `ENV key value`
            env[words[0]] = " ".join(words[1:])
        else:
            env.update(w.split("=", 1) for w in words)
    return env


class Image:
    def __init__(self, path: Path = ROOT / "Dockerfile"):
        found = instructions(path)
        last = {}
        for word, rest in found:
            last[word] = rest
        self.command = exec_form(last["ENTRYPOINT"]) + (exec_form(last["CMD"]) if "CMD" in last else [])
        self.env = env_of([rest for word, rest in found if word == "ENV"])
        self.volumes = [v for word, rest in found if word == "VOLUME"
                        for v in (json.loads(rest) if rest.startswith("[") else rest.split())]
        self.exposed = {int(p.split("/")[0]) for word, rest in found if word == "EXPOSE" for p in rest.split()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_image_declares_its_data_dir_as_a_volume_and_exposes_kafka_and_the_admin_port():
    image = Image()
    assert image.command[:2] == ["groupcoord", "serve"]
    args = build_parser().parse_args(image.command[1:])
    assert args.host == "0.0.0.0" and args.http_host == "0.0.0.0"
    assert args.data_dir in image.volumes
    assert {args.port, args.http_port} <= image.exposed
    assert image.env["GROUPCOORD_ADVERTISED_LISTENERS"].endswith(f":{args.port}")


def test_dockerignore_keeps_local_state_out_of_the_image():
    patterns = {line.strip().rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")}
    for kept_out in (".venv", "groupcoord-data", "test-artifacts", "build", ".git"):
        assert kept_out in patterns, kept_out
    assert {"**/*.egg-info", "**/node_modules"} <= patterns


def test_the_image_command_starts_advertises_its_environment_and_stops_on_sigterm(tmp_path):
    image = Image()
    port, http_port = free_port(), free_port()
    advertised = image.env["GROUPCOORD_ADVERTISED_LISTENERS"]
    # the advertised host as the image sets it, on the port this run listens on (as -p P:P maps it)
    advertised = re.sub(r":\d+$", f":{port}", advertised)
    host = advertised.split("://", 1)[1].rsplit(":", 1)[0]
    env = {**os.environ, **image.env, "GROUPCOORD_ADVERTISED_LISTENERS": advertised,
           "GROUPCOORD_HTTP_TOKEN": "test-token", "PYTHONUNBUFFERED": "1"}
    installed = Path(sys.executable).parent / image.command[0]        # the console script of this venv
    assert installed.exists(), installed
    data = tmp_path / "data"
    argv = [str(installed), *image.command[1:], "--port", str(port), "--http-port", str(http_port),
            "--data-dir", str(data)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tmp_path)
    try:
        first = proc.stdout.readline()
        assert first == f"bootstrap servers: {host}:{port}\n", (first, proc.stderr.read() if not first else "")
        assert proc.stdout.readline() == f"admin: http://0.0.0.0:{http_port}\n"

        async def metadata():
            conn = await BrokerConnection("127.0.0.1", port).connect()
            try:
                return await conn.request(3, 1, {"topics": []})
            finally:
                conn.close()
        brokers = asyncio.run(metadata())["brokers"]
        assert [(b["host"], b["port"]) for b in brokers] == [(host, port)]
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/api/nodes", timeout=10) as resp:
            nodes = json.load(resp)
        assert [(n["host"], n["port"]) for n in nodes] == [(host, port)]
        assert data.is_dir()                                       # the data dir given, not the image's
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
        assert proc.returncode == 0, err
        assert out.strip().splitlines()[-1] == "stopped" and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
