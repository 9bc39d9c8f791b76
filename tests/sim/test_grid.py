"""Sweep grid files: cells and clear errors, checked before Spark starts."""
import pytest

from groupcoord.sim.sweep import GridError, load_grid
from groupcoord.cli import main


def write(tmp_path, text):
    (tmp_path / "tiny.toml").write_text('name = "tiny"\n[topics]\nt = 2\n[[groups]]\nname = "g"\ntopics = ["t"]\n')
    grid = tmp_path / "grid.toml"
    grid.write_text(text)
    return grid


def test_cells_are_the_product_in_file_order(tmp_path):
    grid = load_grid(write(tmp_path, 'scenario = "tiny.toml"\nseeds = [1, 2]\n[grid]\n'
                                     'strategy = ["range", "sticky"]\nmembers = [3, 5]\n'))
    assert grid.scenario == (tmp_path / "tiny.toml").resolve()
    assert [(c.cell, c.params, c.seed) for c in grid.cells] == [
        ("c000", {"strategy": "range", "members": 3}, 1), ("c001", {"strategy": "range", "members": 3}, 2),
        ("c002", {"strategy": "range", "members": 5}, 1), ("c003", {"strategy": "range", "members": 5}, 2),
        ("c004", {"strategy": "sticky", "members": 3}, 1), ("c005", {"strategy": "sticky", "members": 3}, 2),
        ("c006", {"strategy": "sticky", "members": 5}, 1), ("c007", {"strategy": "sticky", "members": 5}, 2)]


@pytest.mark.parametrize("text, message", [
    ('seeds = [1]\n', "scenario: expected the path"),
    ('scenario = "other.toml"\n', "does not exist"),
    ('scenario = "tiny.toml"\nseeds = ["a"]\n', "seeds: expected a non-empty list of integers"),
    ('scenario = "tiny.toml"\n[grid]\nmembers = []\n', "grid.members: empty list"),
    ('scenario = "tiny.toml"\ncells = 3\n', "unknown key 'cells'"),
    ('scenario = "tiny.toml"\n[grid\n', "not valid TOML"),
])
def test_bad_grid(tmp_path, text, message):
    with pytest.raises(GridError, match=message):
        load_grid(write(tmp_path, text))


def test_bad_override_fails_before_spark(tmp_path, capsys):
    grid = write(tmp_path, 'scenario = "tiny.toml"\n[grid]\nstrategy = ["range", "nope"]\n')
    assert main(["sweep", str(grid), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "cell c001 {'strategy': 'nope'}" in err and "unknown assignor 'nope'" in err
    assert not (tmp_path / "out").exists()


def test_tables_lists_and_several_scenarios_name_their_cells(tmp_path):
    write(tmp_path, "")
    (tmp_path / "other.toml").write_text('name = "other"\n[topics]\nt = 2\n[[groups]]\nname = "g"\ntopics = ["t"]\n')
    grid = tmp_path / "g2.toml"
    grid.write_text('scenario = ["tiny.toml", "other.toml"]\ncompare = "protocol"\n[grid]\n'
                    'strategy = [["cooperative-sticky", "range"], "range"]\n'
                    'protocol = [{ label = "new", group_protocol = "consumer" }, { group_protocol = "classic" }]\n')
    g = load_grid(grid)
    assert g.compare == "protocol" and len(g.cells) == 8
    first = g.cells[0]
    assert first.params == {"scenario": "tiny", "strategy": "cooperative-sticky,range", "protocol": "new"}
    assert first.overrides == {"strategy": ["cooperative-sticky", "range"], "group_protocol": "consumer"}
    assert g.cells[1].params["protocol"] == "group_protocol=classic"
    assert g.cells[4].params["scenario"] == "other" and g.cells[4].scenario == (tmp_path / "other.toml").resolve()
    # --axis replaces an axis's values; a compare that is no axis is refused
    assert [c.params["strategy"] for c in load_grid(grid, {"strategy": ["range"]}).cells][:2] == ["range", "range"]
    grid.write_text('scenario = "tiny.toml"\ncompare = "nope"\n[grid]\nmembers = [1]\n')
    with pytest.raises(GridError, match="compare: 'nope' is not an axis"):
        load_grid(grid)


def test_the_share_vs_consumer_sweep_runs_each_workload_as_a_consumer_group_and_as_a_share_group():
    from pathlib import Path

    from groupcoord.sim import scenario
    sweeps = Path(__file__).resolve().parents[2] / "examples" / "sweeps"
    grid = load_grid(sweeps / "share-vs-consumer.toml")
    base = scenario.load(grid.scenario)
    resolved = [(c.params["members"], scenario.apply_overrides(base, c.overrides).groups[0]) for c in grid.cells]
    assert [(n, g.group_type, g.members, g.strategy, g.work_queue) for n, g in resolved] == [
        (6, "consumer", 6, ["cooperative-sticky"], True), (6, "share", 6, [], True),
        (12, "consumer", 12, ["cooperative-sticky"], True), (12, "share", 12, [], True)]
    assert base.topics == {"jobs": 8} and base.produce[0].rate_per_s == 100
