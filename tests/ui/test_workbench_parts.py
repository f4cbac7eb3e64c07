"""The workbench's parts without a browser: a run's counterpart under another solver, the sweep
box's values and specs, when ticked runs are drawn as a sweep, and a seed group's bands as the
live plots read them."""
import json

import numpy as np
import pandas as pd
import pytest

from xcviz.app.ui.compare import counterpart, shared_params, targets
from xcviz.app.ui.launch import LaunchPanel
from xcviz.app.ui.records import RunRecords
from xcviz.app.ui.seed_view import SeedGroupRecords
from xcviz.app.ui.sweep_launch import SweepLaunch, default_values
from xcviz.app.ui.sweep_panel import page_sweep
from xcviz.runs.seed_groups import across_seeds
from xcviz.runs.spec import RunSpec
from xcviz.solvers import SOLVERS

NEWTON = {"dataset": "/data/x_train.txt", "test": "/data/x_test.txt", "solver": "dismec", "threads": 1,
          "cluster": "local:2x1", "params": {"C": 4.0, "eps": 1e-3, "init": "zero", "loss": "logistic",
                                              "normalize": False, "prune_threshold": 0.0}}


def test_a_counterpart_keeps_the_data_and_the_parameters_both_solvers_mean_alike():
    spec = counterpart(NEWTON, "ppdsparse", "squared_hinge")
    assert (spec.dataset, spec.test, spec.threads, spec.cluster) == ("/data/x_train.txt", "/data/x_test.txt", 1,
                                                                     "local:2x1")
    defaults = SOLVERS["ppdsparse"].params()
    assert spec.params["C"] == 4.0 and spec.params["normalize"] is False  # same name, same default: kept
    assert spec.params["loss"] == "squared_hinge"  # the chosen variant, not the run's logistic loss
    assert spec.params["eps"] == defaults.eps == 0.1  # Newton's 0.01 default is not PPDSparse's 0.1
    assert spec.params["prune_threshold"] == defaults.prune_threshold  # defaults differ (0.01, 0): not copied
    assert spec.name == "x-ppdsparse-squared_hinge"
    assert counterpart(NEWTON, "memoir", "exact").cluster is None  # MEMOIR trains in one process
    assert counterpart({**NEWTON, "solver": "ppdsparse", "params": {"C": 4.0}}, "dismec", "msi").name == "x-msi"
    assert set(shared_params("dismec", NEWTON["params"], "ppdsparse")) == {"C", "normalize"}


def test_a_counterpart_the_solver_refuses_is_said():
    with pytest.raises(ValueError, match="C"):
        counterpart({**NEWTON, "params": {"C": 1e9}}, "ppdsparse", "hinge")
    assert ("ppdsparse", "hinge") in targets().values() and len(targets()) >= len(SOLVERS)


def test_sweep_values_start_around_the_parameter_and_give_one_spec_each(tmp_path):
    train = tmp_path / "x_train.txt"
    launcher = LaunchPanel({"x": str(train)})
    sweep = SweepLaunch(launcher)
    assert sweep.parameter.value == "C" and sweep.values.value == "0.1,1,10"
    launcher.inputs["C"].widget.value = "2"
    sweep.parameter.value = "max_iter"
    sweep.parameter.value = "C"
    assert sweep.values.value == "0.2,2,20"
    sweep.values.value = "log:0.01:1:3"
    specs = sweep.specs(str(train), None)
    assert [s.params["C"] for s in specs] == [0.01, 0.1, 1.0]
    assert [s.name for s in specs] == ["x-zero C=0.01", "x-zero C=0.1", "x-zero C=1"]
    assert all(s.params["init"] == "zero" for s in specs)  # Compare's first selected variant
    sweep.values.value = "0.1,abc"
    with pytest.raises(ValueError):
        sweep.specs(str(train), None)
    launcher.solver.value = "ppdsparse"
    assert "seed" in sweep.parameter.options and "loss" not in sweep.parameter.options
    assert default_values(SOLVERS["ppdsparse"].params(), "seed") == "0,1,2"
    assert default_values(SOLVERS["ppdsparse"].params(), "passes") == "3,6,12"


def _row(name: str, **params) -> dict:
    spec = RunSpec(dataset="bibtex", solver="ppdsparse", params=params, name=name).validate()
    return {"spec": spec.to_json(), "name": name, "status": "done", "summary": {"p@1": 50.0}}


def test_ticked_runs_are_drawn_as_a_sweep_only_over_one_numeric_parameter():
    assert page_sweep([_row("a", C=0.1), _row("b", C=1.0), _row("c", C=10.0)]) == "C"
    assert page_sweep([_row("a", loss="hinge"), _row("b", loss="squared_hinge")]) is None  # a Compare
    assert page_sweep([_row("a", seed=0), _row("b", seed=1)]) is None  # seeds: a seed group
    assert page_sweep([_row("a", C=0.1), _row("b", C=1.0, seed=1)]) is None  # two parameters differ
    assert page_sweep([_row("a", C=0.1)]) is None


def test_a_seed_group_gives_the_live_plots_its_band_across_seeds():
    members = []
    for shift in (0.0, 1.0, 3.0):
        records = RunRecords()
        records.iterations.add(pd.DataFrame({"label": np.repeat([0, 1], 3), "iteration": np.tile([0, 1, 2], 2),
                                             "objective": np.array([5, 4, 3, 7, 6, 5], float) + shift,
                                             "wall": np.linspace(0, 1, 6)}))
        members.append(records)
    group = SeedGroupRecords(members)
    band = group.iterations.bands("objective")
    expected = across_seeds([m.iterations.bands("objective") for m in members])
    pd.testing.assert_frame_equal(band, expected)
    assert band["median"].tolist() == [7.0, 6.0, 5.0]  # per-run medians over labels 6, 5, 4 plus the shifts 0, 1, 3
    assert group.band_members() == "seeds" and "objective" in group.iterations.fields()
    before = group.iterations.version
    members[0].iterations.add(pd.DataFrame({"label": [2], "iteration": [0], "objective": [1.0], "wall": [2.0]}))
    assert group.iterations.version != before  # a member's new records redraw the group
