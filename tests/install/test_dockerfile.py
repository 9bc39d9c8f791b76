"""The image's command, run outside a container (no docker engine here): the Dockerfile's
ENTRYPOINT and CMD with its ENV, as a subprocess of the installed groupcoord, with the data dir in
a temporary directory and free ports. It starts, advertises what the environment says, and stops
on SIGTERM as `docker stop` sends it. The VOLUME and EXPOSE lines match the command's options.

The build, as the Dockerfile and .dockerignore declare it: each stage installs what pyproject.toml
lists before it copies the sources (the dependencies' layer stays cached), the service runs as a user
other than root that owns /data, the HEALTHCHECK passes while the image's command serves and fails
once it stopped, and the build context holds the sources the Dockerfile copies but no tests,
benchmarks, CI or local state."""
from __future__ import annotations

import ast
import asyncio
import json
import os
import posixpath
import re
import shlex
import signal
import socket
import subprocess
import sys
import tomllib
import urllib.request
from contextlib import contextmanager
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


# ------------------------------------------------------------------ layers, user, health check, context
# (no docker engine here either: the Dockerfile and .dockerignore read as docker reads them)

def stages(path: Path = ROOT / "Dockerfile") -> list[list[tuple[str, str]]]:
    """The instructions of each build stage (from its FROM on), in order; the image is the last."""
    out: list[list[tuple[str, str]]] = []
    for word, rest in instructions(path):
        if word == "FROM":
            out.append([])
        if out:
            out[-1].append((word, rest))
    return out


def copy_args(rest: str) -> tuple[dict[str, str], list[str], str]:
    """COPY's --flags, sources and destination."""
    words = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
    flags = dict(w[2:].partition("=")[::2] for w in words if w.startswith("--"))
    paths = [w for w in words if not w.startswith("--")]
    return flags, paths[:-1], paths[-1]


def setup_parts() -> tuple[str, ...]:
    """setup.py's PARTS (the package's folders), read without running setup()."""
    for node in ast.walk(ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PARTS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no PARTS")


def python_snippet(run: str) -> str:
    """The program of the first `python -c PROGRAM` in a RUN command."""
    words = shlex.split(run)
    for i, word in enumerate(words[:-2]):
        if word.startswith("python") and words[i + 1] == "-c":
            return words[i + 2]
    raise AssertionError(f"no python -c in {run!r}")


def is_pip_install(run: str) -> bool:
    return re.search(r"\bpip install\b", run) is not None


def test_each_stage_installs_what_pyproject_toml_lists_before_it_copies_the_sources():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    build, image = stages()[0], stages()[-1]
    for stage, wanted in ((build, pyproject["build-system"]["requires"]),
                          (image, pyproject["project"]["dependencies"])):
        first_install = next(i for i, (w, rest) in enumerate(stage) if w == "RUN" and is_pip_install(rest))
        # before it, pyproject.toml is all that is copied: the layer is rebuilt only when it changes
        copied = [src for w, rest in stage[:first_install] if w == "COPY" for src in copy_args(rest)[1]]
        assert copied == ["pyproject.toml"], copied
        run = stage[first_install][1]
        assert "-r " in run or "--requirement" in run, run
        # its list is pyproject.toml's: the RUN's python program, run here on the file
        listed = subprocess.run([sys.executable, "-c", python_snippet(run)], cwd=ROOT, capture_output=True,
                                text=True, timeout=60, check=True).stdout.split("\n")
        assert [l for l in listed if l] == wanted
        # and every COPY after it brings what that install does not depend on
        later = [rest for w, rest in stage[first_install + 1:] if w == "COPY"]
        assert later, "no source copied after the dependencies"
    # the build stage makes the wheel offline, with the backend installed above; the image installs it
    # without dependencies (they are its layer above)
    [wheel] = [rest for w, rest in build if w == "RUN" and "pip wheel" in rest]
    assert "--no-build-isolation" in wheel and "--no-deps" in wheel
    [(_, package)] = [(w, rest) for w, rest in image if w == "RUN" and is_pip_install(rest) and ".whl" in rest]
    assert "--no-deps" in package
    froms = [copy_args(rest)[0].get("from") for w, rest in image if w == "COPY"]
    assert build[0][1].split()[-1] in froms                      # `FROM ... AS build`: the wheel comes from it


def test_the_build_copies_setup_py_and_every_part_it_packages():
    build = stages()[0]
    copied = {src.rstrip("/") for w, rest in build if w == "COPY" for src in copy_args(rest)[1]}
    assert {"pyproject.toml", "setup.py", "README.md", *setup_parts()} <= copied
    for src in copied:
        assert (ROOT / src).exists(), src


def user_of(stage: list[tuple[str, str]]) -> tuple[str, int]:
    """The last USER before the ENTRYPOINT, and where it is."""
    entrypoint = max(i for i, (w, _) in enumerate(stage) if w == "ENTRYPOINT")
    users = [(rest, i) for i, (w, rest) in enumerate(stage[:entrypoint]) if w == "USER"]
    assert users, "no USER before the ENTRYPOINT: the service runs as root"
    return users[-1]


def test_the_image_runs_as_a_user_that_is_not_root_and_owns_the_data_dir():
    image = stages()[-1]
    user, at = user_of(image)
    name, _, group = user.partition(":")
    assert name not in ("root", "0") and group not in ("root", "0"), user
    assert not [w for w, _ in image[at + 1:] if w == "USER"]     # nothing switches back
    runs = " && ".join(rest for w, rest in image[:at] if w == "RUN")
    # the user exists (created with that uid, or that name) ...
    created = re.search(r"\b(?:useradd|adduser)\b[^&;]*?(?:--uid\s+|-u\s+)(\d+)[^&;]*?\s(\S+)\s*(?:&&|;|$)", runs)
    assert created, runs
    uid, username = created.groups()
    assert name in (uid, username), (user, created.groups())
    # ... and owns /data before VOLUME /data freezes it (a new named volume takes the image's ownership)
    volume = next(i for i, (w, rest) in enumerate(image) if w == "VOLUME" and "/data" in rest)
    chowns = [rest for w, rest in image[:volume] if w == "RUN" and "chown" in rest]
    assert any(re.search(rf"chown\s+(?:-R\s+)?(?:{uid}|{username})(?::\S+)?\s+/data\b", r) for r in chowns), chowns
    entry = build_parser().parse_args(Image().command[1:])
    assert entry.data_dir == "/data"


def healthcheck() -> tuple[dict[str, str], list[str]]:
    """The image's HEALTHCHECK: its --options and its command (exec form)."""
    found = [rest for w, rest in stages()[-1] if w == "HEALTHCHECK"]
    assert found, "no HEALTHCHECK"
    m = re.fullmatch(r"((?:--\S+\s+)*)CMD\s+(.*)", found[-1], re.S)
    assert m, f"HEALTHCHECK {found[-1]} (NONE?)"
    options = dict(o[2:].partition("=")[::2] for o in m.group(1).split())
    return options, exec_form(m.group(2))


def seconds(duration: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", duration)
    assert m, duration
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


def test_the_healthcheck_asks_the_admin_listener_of_the_entrypoint_with_python():
    options, command = healthcheck()
    assert command[0] == "python"                 # the slim image has no curl or wget
    assert {"interval", "timeout", "start-period", "retries"} <= set(options)
    assert seconds(options["timeout"]) <= seconds(options["interval"])
    args = build_parser().parse_args(Image().command[1:])
    [url] = re.findall(r"http://[^'\"\s]+", " ".join(command))
    assert url == f"http://127.0.0.1:{args.http_port}/api/nodes"        # inside the container: loopback


@contextmanager
def image_command(tmp_path: Path):
    """The image's command as a subprocess (see the test above), on free ports: (process, admin port)."""
    image = Image()
    port, http_port = free_port(), free_port()
    env = {**os.environ, **image.env, "GROUPCOORD_ADVERTISED_LISTENERS": f"PLAINTEXT://localhost:{port}",
           "GROUPCOORD_HTTP_TOKEN": "test-token", "PYTHONUNBUFFERED": "1"}
    argv = [str(Path(sys.executable).parent / image.command[0]), *image.command[1:], "--port", str(port),
            "--http-port", str(http_port), "--data-dir", str(tmp_path / "data")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tmp_path)
    try:
        assert proc.stdout.readline().startswith("bootstrap servers:"), proc.stderr.read()
        assert proc.stdout.readline() == f"admin: http://0.0.0.0:{http_port}\n"
        yield proc, http_port
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_the_healthcheck_passes_while_the_image_command_serves_and_fails_once_it_stopped(tmp_path):
    options, command = healthcheck()
    args = build_parser().parse_args(Image().command[1:])
    timeout = seconds(options["timeout"])

    def check(http_port: int) -> subprocess.CompletedProcess:
        # this venv's python for the image's, and the port of this run for the image's 8080
        argv = [sys.executable, *[a.replace(f":{args.http_port}/", f":{http_port}/") for a in command[1:]]]
        assert argv[1:] != command[1:]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=tmp_path)

    with image_command(tmp_path) as (proc, http_port):
        ok = check(http_port)
        assert ok.returncode == 0, ok.stderr
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    assert check(http_port).returncode == 1      # docker's "unhealthy" (0 healthy, 1 unhealthy)


# .dockerignore as docker reads it (moby's patternmatcher): a pattern is anchored at the context's root,
# `*` and `?` stay within a path element, `**` spans any, `!` re-includes, the last match decides, and a
# pattern that matches a folder leaves out all it holds
def _pattern_regex(pattern: str) -> re.Pattern:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[" and "]" in pattern[i + 1:]:
            j = pattern.index("]", i + 1)
            body = pattern[i + 1:j]
            out, i = out + "[" + ("^" + body[1:] if body[:1] in "!^" and body else body) + "]", j + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def dockerignore(path: Path = ROOT / ".dockerignore"):
    rules = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = posixpath.normpath(line.lstrip("!").strip()).lstrip("/")
        rules.append((negated, _pattern_regex(pattern)))

    def ignored(name: str) -> bool:
        parts = name.split("/")
        candidates = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
        result = False
        for negated, rx in rules:
            if any(rx.fullmatch(c) for c in candidates):
                result = not negated
        return result
    return ignored


def test_dockerignore_keeps_tests_benchmarks_ci_and_local_state_out_and_the_copied_sources_in():
    ignored = dockerignore()
    for out in ("tests/install/test_dockerfile.py", "tests/interop/js/package.json", "bench/codec.py",
                ".ci/run", ".venv/bin/python", "groupcoord-data/__cluster_metadata.log", ".git/HEAD",
                "test-artifacts/x", "build/lib/x.py", "dist/x.whl", "groupcoord.egg-info/PKG-INFO",
                "coordinator/__pycache__/cli.cpython-311.pyc", "examples/scenarios/slow-members.toml",
                ".pytest_cache/README.md", ".hypothesis/x", "docs/_build/index.html"):
        assert ignored(out), out
    # what the Dockerfile copies from the context, and every file in it that goes into the wheel
    copied = [src.rstrip("/") for stage in stages() for w, rest in stage if w == "COPY"
              for flags, srcs, _ in [copy_args(rest)] if "from" not in flags for src in srcs]
    assert copied
    for src in copied:
        assert not ignored(src), src
        if (ROOT / src).is_dir():
            files = [p for p in (ROOT / src).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
            assert files, src
            for p in files:
                assert not ignored(p.relative_to(ROOT).as_posix()), p
