"""``groupcoord sweep``: simulations over a parameter grid, one Spark task per cell, then the
analysis of every cell's log (tables get a ``cell`` column; the report puts the cells side by side).

Grid file (TOML)::

    scenario = "rolling-restart.toml"    # relative to the grid file
    seeds = [1, 2]                        # default: the scenario's seed
    [grid]                                # scenario overrides, each a list of values
    strategy = ["range", "cooperative-sticky"]
    members = [50, 200]
    session_timeout_ms = [10000, 45000]

Cells are the product of the grid's values and the seeds, in the file's order, named
``c000``, ``c001``, ... Each runs ``simulate.run(apply_overrides(load(scenario), params), seed, DIR)``
in a Spark task, DIR being a temporary directory of the executor; the task returns the cell's files
and the driver writes them to ``OUT/cells/<cell>/`` (a local path or a Hadoop URI), so a cell does
not depend on the executor's disk being the driver's. The scenario is read and the overrides
applied on the driver (the executors get the Scenario objects).
"""
from __future__ import annotations

import itertools
import json
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path


class GridError(ValueError):
    """An invalid grid file; the message names the key."""


@dataclass
class Cell:
    cell: str
    params: dict          # the overrides
    seed: int | None

    def describe(self) -> dict:
        return {**self.params, "seed": self.seed}


@dataclass
class Grid:
    scenario: Path
    seeds: list
    axes: dict            # key -> list of values
    cells: list


def load_grid(path) -> Grid:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GridError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise GridError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - {"scenario", "seeds", "grid"})
    if unknown:
        raise GridError(f"{path}: unknown key {unknown[0]!r} (known: grid, scenario, seeds)")
    scenario = data.get("scenario")
    if not isinstance(scenario, str) or not scenario:
        raise GridError(f"{path}: scenario: expected the path of a scenario file")
    scenario_path = (path.parent / scenario).resolve()
    if not scenario_path.is_file():
        raise GridError(f"{path}: scenario: {scenario_path} does not exist")
    seeds = data.get("seeds", [None])
    if not isinstance(seeds, list) or not seeds or not all(
            s is None or (isinstance(s, int) and not isinstance(s, bool)) for s in seeds):
        raise GridError(f"{path}: seeds: expected a non-empty list of integers")
    axes = data.get("grid", {})
    if not isinstance(axes, dict):
        raise GridError(f"{path}: grid: expected a table of lists")
    for key, values in list(axes.items()):
        if not isinstance(values, list):
            values = axes[key] = [values]
        if not values:
            raise GridError(f"{path}: grid.{key}: empty list")
    keys = list(axes)
    cells = []
    for i, (combo, seed) in enumerate(itertools.product(itertools.product(*(axes[k] for k in keys)), seeds)):
        cells.append(Cell(f"c{i:03d}", dict(zip(keys, combo)), seed))
    return Grid(scenario_path, seeds, axes, cells)


def run_cell(item) -> dict:
    """A Spark task: simulate one cell into a temporary directory of the executor and return its
    files (``files``: name -> zlib-compressed bytes). Never raises (errors are returned)."""
    import shutil
    import tempfile
    import zlib
    cell, scenario, seed = item
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


def sweep(grid_path, out, spark=None, master: str | None = None, report: bool = True, conf: dict | None = None):
    """Run the grid's cells as Spark tasks, then analyse them all; returns the Analysis. The grid
    and every cell's overrides are checked before Spark starts."""
    import zlib

    from groupcoord.analytics import storage
    from groupcoord.analytics.job import analyze, find_logs, spark_session
    from groupcoord.sim import scenario as scenario_mod

    grid = load_grid(grid_path)
    try:
        base = scenario_mod.load(grid.scenario)
    except ValueError as e:
        raise GridError(f"{grid.scenario}: {e}") from None
    scenarios = {}
    for c in grid.cells:                         # bad overrides fail here, before any task runs
        try:
            scenarios[c.cell] = scenario_mod.apply_overrides(base, c.params)
        except ValueError as e:
            raise GridError(f"{grid_path}: cell {c.cell} {c.params}: {e}") from None
    out = storage.location(out)
    if not storage.is_uri(out):
        Path(out, "cells").mkdir(parents=True, exist_ok=True)
    spark = spark or spark_session(master, conf=conf)
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
        {"scenario": str(grid.scenario), "cells": params, "runs": results}, indent=1).encode("utf-8"))
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
        write_report(analysis, cell_params=params)
    return analysis
