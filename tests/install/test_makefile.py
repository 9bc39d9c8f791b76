"""The README's first two commands, as make would run them (`make -n -B`: every command printed,
none run): `make run` installs what running needs and serves the admin listener at the README's
address; `make test` installs the dev extra and Debian's chromium without recommended packages."""
from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from groupcoord.cli import build_parser

ROOT = Path(__file__).parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def dry_run(*targets_and_vars: str) -> list[str]:
    r = subprocess.run(["make", "-n", "-B", *targets_and_vars], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def serve_args(lines: list[str]):
    """The options `make run` gives `groupcoord serve`, parsed by the command's own parser."""
    [line] = [l for l in lines if "groupcoord serve" in l]
    words = shlex.split(line)
    return build_parser().parse_args(words[words.index("serve"):])


def pip_installs(lines: list[str]) -> list[list[str]]:
    return [shlex.split(l) for l in lines if "pip install" in l and "--upgrade pip" not in l]


def test_make_run_installs_the_runtime_only_and_serves_the_web_page_at_the_readme_address():
    lines = dry_run("run")
    [install] = pip_installs(lines)
    assert install[-2:] == ["-e", "."]                    # no extra: no PySpark, Playwright, test clients
    assert not any("npm" in l or "apt-get" in l for l in lines)
    args = serve_args(lines)
    assert (args.http_host, args.http_port) == ("127.0.0.1", 8080)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_hour = readme[:readme.index("## ")]
    assert f"http://{args.http_host}:{args.http_port}/" in first_hour
    assert "make run" in first_hour and "make test" in first_hour


def test_make_run_args_override_the_admin_port_and_http_port_empty_leaves_it_out():
    assert serve_args(dry_run("run", "ARGS=--http-port 9000 --topic orders:6")).http_port == 9000
    args = serve_args(dry_run("run", "HTTP_PORT="))
    assert args.http_port is None


def test_make_test_installs_the_dev_extra_and_chromium_without_recommends_and_says_so():
    lines = dry_run("test")
    [install] = pip_installs(lines)
    assert install[-2:] == ["-e", ".[dev]"]
    apt = [l for l in lines if "apt-get install" in l]
    assert apt and all("--no-install-recommends" in l for l in apt)
    said = [l for l in lines if "echo" in l and "installing" in l]
    assert len(said) == 1 and "chromium" in said[0] and "--no-install-recommends" in said[0]
    assert any("pytest" in l for l in lines)


def test_make_run_and_make_test_write_every_parts_bytecode_before_they_start():
    # (setup.py's parts, read without running setup())
    import ast
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    [parts] = [ast.literal_eval(node.value) for node in tree.body
               if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "PARTS"]
    for target, starts in (("run", "groupcoord serve"), ("test", "pytest")):
        lines = dry_run(target)
        [at] = [i for i, l in enumerate(lines) if "compileall" in l]
        assert set(parts) <= set(shlex.split(lines[at])), target
        assert at < min(i for i, l in enumerate(lines) if starts in l), target
