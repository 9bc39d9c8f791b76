"""The package as pip builds it, from a copy of the sources: a wheel (`pip install .`) and an editable
install (`pip install -e .`, as `make run` does) print no setuptools warning box (a folder left out of
setup.py's package list, such as the web page's, used to print 40 lines), and the wheel holds every
module of the parts and the web page's files, which the installed package then serves.

The build uses this venv's setuptools (no network) when it is the one pyproject.toml's [build-system]
requires; otherwise pip's isolated build fetches it (from its cache or index), and without either the
tests are skipped."""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from groupcoord.coordinator.admin import web_page

ROOT = Path(__file__).parents[2]

pytestmark = pytest.mark.slow

#: what pip shows of a warning of the build backend: `...py:215: BuildBackendWarning: Package ...`
#: (or SetuptoolsDeprecationWarning, ...), and setuptools' box around its text
WARNING = re.compile(r"\b[A-Za-z_]*Warning: |^\s*!!\s*$|\*{40}", re.M)


def parts() -> tuple[str, ...]:
    """setup.py's PARTS, read without running setup()."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PARTS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no PARTS")


def build_requirements_met() -> bool:
    """Whether this interpreter has every package of [build-system] requires, in a version it allows."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    for text in requires:
        req = Requirement(text)
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            return False
        if not req.specifier.contains(version, prereleases=True):
            return False
    return True


NO_ISOLATION = build_requirements_met()      # else pip's isolated build, which fetches the backend


def pip(*args: str, cwd: Path) -> str:
    """Run pip (verbose: older pips show the backend's output only so); its output, or a skip when the
    isolated build could not get the build backend."""
    isolation = ["--no-build-isolation"] if NO_ISOLATION else []
    r = subprocess.run([sys.executable, "-m", "pip", *args, "-v", "--no-deps", *isolation], cwd=cwd,
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    out = r.stdout + r.stderr
    if r.returncode != 0 and not isolation and re.search(r"No matching distribution found for|"
                                                         r"Could not find a version that satisfies", out):
        pytest.skip("no build backend: this venv's setuptools is older than [build-system] requires, "
                    "and pip could not fetch it (offline?)")
    assert r.returncode == 0, out[-5000:]
    return out


def backend_warnings(out: str) -> list[str]:
    return [line for line in out.splitlines() if WARNING.search(line)]


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    """A copy of what a clean checkout builds from: no egg-info, build folder or bytecode of this tree,
    and no build left in it."""
    dst = tmp_path_factory.mktemp("sources")
    for name in ("pyproject.toml", "setup.py", "README.md", "MANIFEST.in"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dst / name)
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*")
    for part in parts():
        shutil.copytree(ROOT / part, dst / part, ignore=junk)
    return dst


@pytest.fixture(scope="module")
def wheel(sources, tmp_path_factory) -> tuple[Path, str]:
    out_dir = tmp_path_factory.mktemp("wheel")
    out = pip("wheel", "--wheel-dir", str(out_dir), ".", cwd=sources)
    [built] = out_dir.glob("groupcoord-*.whl")
    return built, out


def test_building_the_wheel_prints_no_setuptools_warning(wheel):
    _, out = wheel
    assert "is absent from the" not in out                 # 'packages' configuration (a folder left out)
    assert backend_warnings(out) == []


def test_the_wheel_holds_every_module_of_the_parts_and_the_web_page(wheel, sources):
    built, _ = wheel
    names = set(zipfile.ZipFile(built).namelist())
    expected = {f"groupcoord/{p.relative_to(sources).as_posix()}" for part in parts()
                for p in (sources / part).rglob("*.py")}
    assert expected and expected <= names, sorted(expected - names)
    web = {f"groupcoord/coordinator/admin/web/{name}" for name in web_page.static_files()}
    assert {f"groupcoord/coordinator/admin/web/{n}" for n in ("index.html", "app.js", "style.css",
                                                              "favicon.svg")} <= web
    assert web <= names, sorted(web - names)
    # the package and its metadata only: no tests, benchmarks, examples or top-level modules
    assert {n.split("/")[0] for n in names} == {"groupcoord", built.name.split("-py")[0] + ".dist-info"}


def test_the_installed_wheel_serves_the_web_page_from_its_own_files(wheel, tmp_path):
    built, _ = wheel
    target = tmp_path / "site"
    zipfile.ZipFile(built).extractall(target)
    # the unpacked wheel first, then this venv's dependencies; no site: this tree's editable install
    # (a .pth) is not loaded
    path = os.pathsep.join([str(target), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    code = ("import json; from groupcoord.coordinator.admin import web_page as w; "
            "print(json.dumps([str(w.WEB_DIR), sorted(w.static_files())]))")
    r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": path})
    assert r.returncode == 0, r.stderr
    web_dir, served = json.loads(r.stdout)
    assert Path(web_dir).is_relative_to(target)
    assert served == sorted(web_page.static_files())


def test_the_editable_install_prints_no_setuptools_warning_and_finds_the_web_page(sources, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # the dependencies: this venv's folders as plain paths (not site dirs: its .pth files, this tree's
    # editable install among them, are not read)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    Path(site, "dependencies.pth").write_text("".join(p + "\n" for p in paths), encoding="utf-8")
    out = pip("--python", str(python), "install", "-e", ".", cwd=sources)
    assert "is absent from the" not in out
    assert backend_warnings(out) == []
    code = ("import json; from groupcoord.coordinator.admin import web_page as w; "
            "print(json.dumps([str(w.WEB_DIR), sorted(w.static_files())]))")
    r = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    web_dir, served = json.loads(r.stdout)
    assert Path(web_dir) == sources / "coordinator" / "admin" / "web"
    assert served == sorted(web_page.static_files())
