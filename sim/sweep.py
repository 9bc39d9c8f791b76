"""``groupcoord sweep``: simulations over a parameter grid, one Spark task per cell, then the
analysis of every cell's log (tables get a ``cell`` column; the report puts the cells side by side).

Grid file (TOML)::

    scenario = "rolling-restart.toml"    # relative to the grid file; or a list of them (an axis)
    seeds = [1, 2]                        # default: the scenario's seed
    compare = "protocol"                  # the axis the report puts side by side (optional)
    [grid]                                # scenario overrides, each a list of values
    strategy = ["range", "cooperative-sticky"]
    members = [50, 200]
    session_timeout_ms = [10000, 45000]
    protocol = [                          # a table sets several keys at once; "label" names it
      { label = "eager range", strategy = "range" },
      { label = "consumer uniform", group_protocol = "consumer", remote_assignor = "uniform" },
    ]

Cells are the product of the scenarios, the grid's values and the seeds, in the file's order, named
``c000``, ``c001``, ... A cell's parameters (``cells.json``, the report) name each axis's value:
the scenario's name, a value, or a table's label. Each runs
``simulate.run(apply_overrides(load(scenario), overrides), seed, DIR)`` in a Spark task, DIR being
a temporary directory of the executor; the task returns the cell's files and the driver writes
them to ``OUT/cells/<cell>/`` (a local path or a Hadoop URI), so a cell does not depend on the
executor's disk being the driver's. The scenarios are read and the overrides applied on the
driver (the executors get the Scenario objects). ``sweep(axes=...)`` (``--axis KEY=[...]``)
replaces an axis's values, ``sweep(overrides=...)`` (``--set``) adds overrides to every cell.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import signal
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


class GridError(ValueError):
    """An invalid grid file; the message names the key."""


@dataclass
class Cell:
    cell: str
    params: dict          # axis -> the value's name (a value, a table's label, a scenario's name)
    seed: int | None
    overrides: dict = None  # the scenario overrides the cell applies
    scenario: Path = None

    def describe(self) -> dict:
        return {**self.params, "seed": self.seed}


@dataclass
class Grid:
    scenarios: list       # the scenario files (Paths)
    seeds: list
    axes: dict            # key -> list of values
    cells: list
    compare: str | None = None

    @property
    def scenario(self) -> Path:
        """The first scenario."""
        return self.scenarios[0]


def _label(value) -> object:
    """How a cell's parameters name an axis value: a table by its label, a list (an assignor
    list, say) as its items joined by commas, a value as itself."""
    if isinstance(value, dict):
        return value.get("label") or ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list):
        return ",".join(map(str, value))
    return value


def load_grid(path, axes: dict | None = None) -> Grid:
    """``axes``: axis -> values replacing the file's (``--axis``)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GridError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise GridError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - {"scenario", "seeds", "grid", "compare"})
    if unknown:
        raise GridError(f"{path}: unknown key {unknown[0]!r} (known: compare, grid, scenario, seeds)")
    scenario = data.get("scenario")
    names = scenario if isinstance(scenario, list) else [scenario]
    if not names or not all(isinstance(n, str) and n for n in names):
        raise GridError(f"{path}: scenario: expected the path of a scenario file, or a list of them")
    scenarios = []
    for n in names:
        p = (path.parent / n).resolve()
        if not p.is_file():
            raise GridError(f"{path}: scenario: {p} does not exist")
        scenarios.append(p)
    seeds = data.get("seeds", [None])
    if not isinstance(seeds, list) or not seeds or not all(
            s is None or (isinstance(s, int) and not isinstance(s, bool)) for s in seeds):
        raise GridError(f"{path}: seeds: expected a non-empty list of integers")
    grid_axes = data.get("grid", {})
    if not isinstance(grid_axes, dict):
        raise GridError(f"{path}: grid: expected a table of lists")
    for key, values in (axes or {}).items():
        if key not in grid_axes:
            raise GridError(f"--axis {key}: the grid has no axis {key!r} (its axes: {', '.join(grid_axes)})")
        grid_axes[key] = values
    for key, values in list(grid_axes.items()):
        if not isinstance(values, list):
            values = grid_axes[key] = [values]
        if not values:
            raise GridError(f"{path}: grid.{key}: empty list")
        labels = [_label(v) for v in values]
        if len(set(map(str, labels))) != len(labels):
            raise GridError(f"{path}: grid.{key}: two values have the same name {labels}")
    compare = data.get("compare")
    if compare is not None and compare not in grid_axes and not (compare == "scenario" and len(scenarios) > 1):
        raise GridError(f"{path}: compare: {compare!r} is not an axis of the grid")
    keys = list(grid_axes)
    scenario_axis = len(scenarios) > 1
    cells = []
    combos = itertools.product(scenarios, itertools.product(*(grid_axes[k] for k in keys)), seeds)
    for i, (sc_path, combo, seed) in enumerate(combos):
        params = {"scenario": sc_path.stem} if scenario_axis else {}
        overrides = {}
        for k, v in zip(keys, combo):
            params[k] = _label(v)
            if isinstance(v, dict):
                overrides.update({kk: vv for kk, vv in v.items() if kk != "label"})
            else:
                overrides[k] = v
        cells.append(Cell(f"c{i:03d}", params, seed, overrides, sc_path))
    return Grid(scenarios, seeds, grid_axes, cells, compare)


def run_cell(item) -> dict:
    """A Spark task: simulate one cell into a temporary directory of the executor and return its
    files (``files``: name -> zlib-compressed bytes). Never raises (errors are returned)."""
    import shutil
    import tempfile
    import zlib
    cell, scenario, seed = item
    # Ctrl-C at a terminal reaches Spark's Python workers too: the command ends the run itself (an
    # interrupted cell would only have the JVM log the task's failure after the command's line)
    with contextlib.suppress(ValueError):         # (not the main thread: left as it is)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix=f"groupcoord-{cell}-")
    try:
        from groupcoord.sim import simulate
        events = simulate.run(scenario, seed, tmp)
        files = {p.name: zlib.compress(p.read_bytes(), 1) for p in sorted(Path(tmp).iterdir()) if p.is_file()}
        return {"cell": cell, "events": len(events), "seconds": time.perf_counter() - t0, "error": None,
                "files": files}
    except Exception as e:  # reported by the driver, naming the cell
        return {"cell": cell, "events": 0, "seconds": time.perf_counter() - t0,
                "error": f"{type(e).__name__}: {e}", "files": {}}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sweep(grid_path, out, spark=None, master: str | None = None, report: bool = True, conf: dict | None = None,
          axes: dict | None = None, overrides: dict | None = None, started: Callable[[], None] | None = None):
    """Run the grid's cells as Spark tasks, then analyse them all; returns the Analysis. The grid
    and every cell's overrides are checked before Spark starts. ``axes``: axis -> values replacing
    the file's; ``overrides``: applied to every cell, before its own; ``started``: called once the
    Spark session this starts is up (the command takes Ctrl-C back from PySpark's handler)."""
    import zlib

    from groupcoord.analytics import storage
    from groupcoord.analytics.job import analyze, find_logs, spark_session
    from groupcoord.sim import scenario as scenario_mod

    grid = load_grid(grid_path, axes)
    bases = {}
    for p in grid.scenarios:
        try:
            bases[p] = scenario_mod.load(p)
        except ValueError as e:
            raise GridError(f"{p}: {e}") from None
    scenarios = {}
    for c in grid.cells:                         # bad overrides fail here, before any task runs
        try:
            scenarios[c.cell] = scenario_mod.apply_overrides(bases[c.scenario], {**(overrides or {}), **c.overrides})
        except ValueError as e:
            raise GridError(f"{grid_path}: cell {c.cell} {c.params}: {e}") from None
    out = storage.location(out)
    if not storage.is_uri(out):
        Path(out, "cells").mkdir(parents=True, exist_ok=True)
    if spark is None:
        spark = spark_session(master, conf=conf)
        if started is not None:
            started()
    storage.check_shared(spark, out, [])         # the analysis reads the cells' logs from OUT
    items = [(c.cell, scenarios[c.cell], c.seed) for c in grid.cells]
    results = spark.sparkContext.parallelize(items, len(items)).map(run_cell).collect()
    failed = [r for r in results if r["error"]]
    if failed:
        raise GridError("; ".join(f"cell {r['cell']}: {r['error']}" for r in failed))
    for r in results:                            # the driver writes each cell's log under OUT
        for name, data in r.pop("files").items():
            storage.write_bytes(spark, out, f"cells/{r['cell']}/{name}", zlib.decompress(data))
    params = {c.cell: c.describe() for c in grid.cells}
    storage.write_bytes(spark, out, "cells.json", json.dumps(
        {"scenario": str(grid.scenario), "scenarios": [str(p) for p in grid.scenarios], "compare": grid.compare,
         "cells": params, "runs": results}, indent=1).encode("utf-8"))
    from pyspark.sql import types as T
    schema = T.StructType([T.StructField("cell", T.StringType()), T.StructField("seed", T.LongType()),
                           T.StructField("params", T.StringType()), T.StructField("sim_seconds", T.DoubleType())])
    secs = {r["cell"]: r["seconds"] for r in results}
    spark.createDataFrame([(c.cell, c.seed, json.dumps(c.params, sort_keys=True), secs[c.cell]) for c in grid.cells],
                          schema).write.mode("overwrite").parquet(storage.join(out, "grid"))
    storage.check_written(spark, storage.join(out, "grid"))
    sources = find_logs([storage.join(out, "cells", c.cell) for c in grid.cells], cells=[c.cell for c in grid.cells],
                        spark=spark)
    analysis = analyze(sources, out, spark=spark, report=False)
    analysis.tables["grid"] = storage.join(out, "grid")
    if report:
        from groupcoord.analytics.report import write_report
        write_report(analysis, cell_params=params, compare=grid.compare)
    return analysis
