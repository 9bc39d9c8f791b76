"""Where the analytics job runs and where its inputs and outputs live (issue #16).

* Locations are local paths (the driver's disk) or Hadoop filesystem URIs (``hdfs://``, ``s3a://``,
  ``viewfs://``...; ``file:///x`` is the local path ``/x``). URIs are read and written through the
  Hadoop ``FileSystem`` of the Spark session (Spark's readers and writers for the logs and tables,
  :class:`HadoopFs` from the driver for the report and the sweep's cell logs).
* On a cluster (a master that is not ``local``), a local path is the driver's disk: before the job
  an executor task writes a probe file into OUT and checks every input log, and the driver looks for
  the probe. An OUT or a log the executors do not share with the driver is a one-line error, and
  after each table is written the driver checks that its files are there (no silent success).
* The job's code is shipped to executors (:func:`ship_code`): a zip of the ``groupcoord`` package
  built at run time, added with ``SparkContext.addPyFile``, so executors need only Python and, for
  ``sweep``, groupcoord's runtime dependencies.
"""
from __future__ import annotations

import os
import re
import socket
import tempfile
import uuid
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlparse

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class LocationError(ValueError):
    """A location that cannot be used: one line."""


def is_uri(location) -> bool:
    """True for a Hadoop filesystem URI other than ``file:`` (those are local paths here)."""
    return bool(_SCHEME.match(str(location))) and not str(location).startswith("file:")


def local(location) -> str:
    """``file:///x`` -> ``/x``; anything else unchanged."""
    text = str(location)
    if text.startswith("file:"):
        parsed = urlparse(text)
        if parsed.netloc not in ("", "localhost"):
            raise LocationError(f"{text}: a file: URI names no host (file:///path)")
        return unquote(parsed.path)
    return text


def location(text) -> str:
    """A URI as given; a path (or file: URI) as pathlib spells it ("out/" is "out", as before)."""
    return str(text) if is_uri(text) else str(Path(local(text)))


#: Hadoop's glob characters: Spark's readers take each path as a pattern
_GLOB = re.compile(r"([\\*?\[\]{}])")
#: a URI's scheme and authority (not a pattern: "hdfs://[::1]:8020")
_AUTHORITY = re.compile(_SCHEME.pattern + "[^/]*")


def literal(location) -> str:
    """A path or URI for Spark's readers, which take its path as a Hadoop glob pattern: the path's
    glob characters escaped, so that a log under "run[1]" or "a{b,c}" (or with a backslash) is read
    as named, not taken for a pattern that names nothing or other files."""
    text = str(location)
    m = _AUTHORITY.match(text)
    head = m.group(0) if m else ""
    return head + _GLOB.sub(r"\\\1", text[len(head):])


def join(location, *names) -> str:
    """``location/name/...`` for a local path or a URI (pathlib would fold a URI's ``//``)."""
    if is_uri(location):
        return "/".join([str(location).rstrip("/"), *names])
    return str(Path(location, *names))


def is_cluster(spark) -> bool:
    return not spark.sparkContext.master.startswith("local")


class HadoopFs:
    """The driver's handle on a Hadoop filesystem URI, through the session's JVM."""

    def __init__(self, spark, uri: str):
        sc = spark.sparkContext
        self._jvm = sc._jvm
        self._path = self._jvm.org.apache.hadoop.fs.Path(uri)
        self._fs = self._path.getFileSystem(sc._jsc.hadoopConfiguration())

    def _p(self, *names):
        p = self._path
        for n in names:
            p = self._jvm.org.apache.hadoop.fs.Path(p, n)
        return p

    def exists(self, *names) -> bool:
        return self._fs.exists(self._p(*names))

    def is_dir(self, *names) -> bool:
        return self._fs.getFileStatus(self._p(*names)).isDirectory()

    def list(self, *names) -> list[str]:
        return [s.getPath().getName() for s in self._fs.listStatus(self._p(*names))]

    def read_bytes(self, *names, limit: int | None = None) -> bytes:
        stream = self._fs.open(self._p(*names))
        try:
            if limit is None:
                return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
            buf = self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream, min(limit, self.size(*names)))
            return bytes(buf)
        finally:
            stream.close()

    def size(self, *names) -> int:
        return self._fs.getFileStatus(self._p(*names)).getLen()

    def write_bytes(self, data: bytes, *names) -> None:
        stream = self._fs.create(self._p(*names), True)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    def mkdirs(self, *names) -> None:
        self._fs.mkdirs(self._p(*names))

    def delete(self, *names) -> None:
        self._fs.delete(self._p(*names), True)


# ---------------------------------------------------------------- writing from the driver
def write_bytes(spark, location, name: str, data: bytes) -> None:
    """Write one file under OUT from the driver (a local path, or a URI through Hadoop)."""
    if is_uri(location):
        HadoopFs(spark, str(location)).write_bytes(data, *name.split("/"))
    else:
        path = Path(location, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def upload_dir(spark, local_dir, location) -> None:
    """Copy the files of ``local_dir`` (the report, written locally first) into a URI."""
    fs = HadoopFs(spark, str(location))
    for f in sorted(Path(local_dir).iterdir()):
        if f.is_file():
            fs.write_bytes(f.read_bytes(), f.name)


# ---------------------------------------------------------------- shared with the executors?
class NotShared(LocationError):
    """An input or output location the driver and the executors do not share."""


_HINT = "give locations every node sees (a shared filesystem, hdfs://, s3a://)"


def _probe_task(out_dir, probe, paths):
    """Runs on an executor: write the probe into OUT (a local path there), look at the inputs."""
    host = socket.gethostname()
    wrote = None
    if out_dir is not None:
        try:
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, probe), "w") as f:
                f.write(host)
            wrote = True
        except OSError as e:
            wrote = f"{e.strerror}"
    missing = [p for p in paths if not os.path.exists(p)]
    return [(host, wrote, missing)]


def check_shared(spark, out, inputs: list[str]) -> None:
    """On a cluster, before the job: OUT (a local path) and the local input files must be the
    executors' too. An executor task writes a probe file into OUT and checks the inputs; the
    driver then looks for the probe. Raises NotShared in one line. Nothing to do in local mode or
    for URIs (shared by construction; the tables are still checked after writing)."""
    if not is_cluster(spark):
        return
    out_dir = None if out is None or is_uri(out) else os.path.abspath(local(out))
    paths = [p for p in inputs if not is_uri(p)]
    if out_dir is None and not paths:
        return
    probe = f".groupcoord-probe-{uuid.uuid4().hex}"
    sc = spark.sparkContext
    n = max(1, sc.defaultParallelism)
    results = sc.parallelize(range(n), n).mapPartitions(
        lambda _it, o=out_dir, p=probe, ps=paths: _probe_task(o, p, ps)).collect()
    for host, _wrote, missing in results:
        if missing:
            raise NotShared(f"{missing[0]}: the executors cannot read it (an executor on {host} does not see "
                            f"it; the driver does): with a cluster, {_HINT}")
    if out_dir is None:
        return
    probe_path = Path(out_dir, probe)
    try:
        for host, wrote, _missing in results:
            if wrote is not True:
                raise NotShared(f"--out {out}: an executor on {host} cannot write there ({wrote}): "
                                f"with a cluster, {_HINT}")
        if not probe_path.exists():
            host = results[0][0]
            raise NotShared(f"--out {out}: not shared between the driver and the executors (a file an executor "
                            f"on {host} wrote there is not in the driver's {out_dir}): with a cluster, {_HINT}")
    finally:
        probe_path.unlink(missing_ok=True)


def check_written(spark, table_location) -> None:
    """After a table is written: its data files must be where the driver looks (a committer that
    wrote _SUCCESS on the driver and the Parquet files on a worker's own disk is not a success).
    Nothing to check in local mode (with ``spark`` None: checked)."""
    if spark is not None and not is_cluster(spark):
        return
    if is_uri(table_location):
        names = HadoopFs(spark, str(table_location)).list()
    else:
        path = Path(local(table_location))
        names = [p.name for p in path.iterdir()] if path.is_dir() else []
    if not any(n.endswith(".parquet") for n in names):
        raise NotShared(f"--out: the Parquet files of {table_location} are not there as the driver sees it "
                        f"(found: {', '.join(sorted(names)) or 'nothing'}): the executors wrote them somewhere "
                        f"else; with a cluster, {_HINT}")


# ---------------------------------------------------------------- shipping the code
#: the parts of the groupcoord package shipped (the sweep's simulations need all but cli); found by
#: name, not imported (analytics imports none of them)
SHIPPED_PARTS = ("analytics", "sim", "client", "coordinator", "protocol")


def package_zip(dest_dir) -> str:
    """A zip of the ``groupcoord`` package as this interpreter imports it (the .py files of its
    parts, with an empty groupcoord/__init__.py so that it is a regular package in front of
    anything installed on the executors)."""
    import importlib.util
    zpath = os.path.join(dest_dir, "groupcoord.zip")
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("groupcoord/__init__.py", "")
        for name in SHIPPED_PARTS:
            for root in importlib.util.find_spec(f"groupcoord.{name}").submodule_search_locations:
                for dirpath, dirnames, filenames in os.walk(root):
                    dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                    for f in sorted(filenames):
                        if f.endswith(".py"):
                            full = os.path.join(dirpath, f)
                            rel = os.path.relpath(full, root)
                            z.write(full, f"groupcoord/{name}/{rel}")
    return zpath


def ship_code(spark) -> None:
    """On a cluster, add the zip of the groupcoord package to the session's Python files (once)."""
    sc = spark.sparkContext
    if not is_cluster(spark) or getattr(sc, "_groupcoord_shipped", False):
        return
    import atexit
    import shutil
    tmp = tempfile.mkdtemp(prefix="groupcoord-ship-")
    atexit.register(shutil.rmtree, tmp, True)
    sc.addPyFile(package_zip(tmp))
    sc._groupcoord_shipped = True
