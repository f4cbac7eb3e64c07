"""Sweeps (issue #40): the values `--set KEY=VALUES` reads, the specs they make, the runs a report
recognises as one sweep, and `xcviz sweep` launching background runs one after another."""
import json

import pytest

from xcviz.data.synthetic import generate, split
from xcviz.data.textio import write_xc
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz.runs.sweep import log_scaled, parse_values, sweep_specs, sweep_table, swept_parameter


def test_values_are_a_list_or_an_even_range_in_linear_or_log_space():
    assert parse_values("0.1, 1,10") == [0.1, 1, 10]
    assert parse_values("squared_hinge,hinge") == ["squared_hinge", "hinge"]
    assert parse_values("log:0.01:100:5") == [0.01, 0.1, 1.0, 10.0, 100.0]
    assert parse_values("lin:-1:1:5") == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert parse_values("log:1:1000:4") == [1.0, 10.0, 100.0, 1000.0]


@pytest.mark.parametrize("text,words", [
    ("log:0:10:3", "positive ends"), ("lin:1:2:1", "from 2 to 64 values"), ("lin:1:2:65", "from 2 to 64"),
    ("log:1:2", "START:STOP:COUNT"), ("lin:a:2:3", "of numbers"), ("1,,2", "empty value"),
    (",".join(["1"] * 65), "at most 64"), ("lin:1:inf:3", "finite ends")])
def test_a_malformed_value_list_is_refused_with_what_is_wrong(text, words):
    with pytest.raises(ValueError, match=words):
        parse_values(text)


def test_specs_take_each_value_once_as_the_parameter_wants_it_and_are_named_by_it():
    base = RunSpec(dataset="bibtex", params={"init": "zero"}, threads=1)
    specs = sweep_specs(base, "max_iter", parse_values("lin:10:30:3") + [20])
    assert [s.params["max_iter"] for s in specs] == [10, 20, 30]
    assert all(isinstance(s.params["max_iter"], int) for s in specs)
    assert [s.name for s in specs] == ["bibtex-dismec max_iter=10", "bibtex-dismec max_iter=20",
                                       "bibtex-dismec max_iter=30"]
    assert all(s.params["init"] == "zero" for s in specs) and base.params == {"init": "zero"}
    assert [s.name for s in sweep_specs(RunSpec(dataset="bibtex", name="mine"), "C", [0.5, 2.0])] == \
        ["mine C=0.5", "mine C=2"]


@pytest.mark.parametrize("key,values,words", [
    ("C", [1, -5], "C must be at least"), ("Cee", [1, 2], "no parameter 'Cee'"), ("C", [1, 1.0], "at least two")])
def test_a_sweep_with_one_bad_value_makes_no_spec(key, values, words):
    with pytest.raises(ValueError, match=words):
        sweep_specs(RunSpec(dataset="bibtex"), key, values)


def _row(name, params, dataset="bibtex", summary=None, status="done"):
    spec = RunSpec(dataset=dataset, params=params, name=name).validate()
    return {"name": name, "spec": spec.to_json(), "status": status, "summary": summary or {}}


def test_runs_are_a_sweep_when_one_parameter_alone_differs():
    a, b = _row("a", {"C": 1.0}), _row("b", {"C": 10.0})
    assert swept_parameter([a, b]) == "C"
    assert swept_parameter([a]) is None
    assert swept_parameter([a, _row("c", {"C": 10.0, "eps": 0.1})]) is None  # two differ
    assert swept_parameter([a, _row("d", {"C": 10.0}, dataset="delicious")]) is None  # other data
    assert swept_parameter([a, _row("e", {"C": 1.0})]) is None  # nothing differs


def test_the_table_orders_runs_by_the_value_and_keeps_missing_metrics_blank():
    rows = [_row("ten", {"C": 10.0}, summary={"p@1": 50.0, "train_seconds": 2.0}),
            _row("tenth", {"C": 0.1}, summary={"p@1": 40.0}, status="failed"),
            _row("one", {"C": 1.0}, summary={"p@1": 60.0, "model_nnz": 7})]
    table = sweep_table(rows, "C")
    assert table["C"].tolist() == [0.1, 1.0, 10.0] and table["run"].tolist() == ["tenth", "one", "ten"]
    assert table["p@1"].tolist() == [40.0, 60.0, 50.0] and table["status"].tolist() == ["failed", "done", "done"]
    assert table["model_nnz"].isna().tolist() == [True, False, True]


def test_a_log_axis_for_positive_values_spanning_a_decade():
    assert log_scaled([0.1, 1, 10]) and log_scaled([1, 10])
    assert not log_scaled([1, 5]) and not log_scaled([0, 1, 100]) and not log_scaled(["hinge", "squared_hinge"])


@pytest.mark.slow
def test_xcviz_sweep_trains_one_run_after_another_and_reports_them_as_a_sweep(tmp_path, xcviz_cli):
    train, test = split(generate(600, 60, 20, avg_labels=2, avg_nnz=8, seed=1), 0.25, seed=1)
    write_xc(tmp_path / "t_train.txt", train)
    write_xc(tmp_path / "t_test.txt", test)
    spec = RunSpec(dataset=str(tmp_path / "t_train.txt"), test=str(tmp_path / "t_test.txt"),
                   params={"init": "zero"}, threads=1, name="tiny")
    (tmp_path / "spec.json").write_text(spec.to_json())
    home = tmp_path / "home"
    swept = xcviz_cli("sweep", tmp_path / "spec.json", "--set", "C=log:0.01:1:3", "--home", home)
    assert swept.returncode == 0, swept.stderr[-2000:]
    rows = sorted(RunStore(home).list(), key=lambda r: r["number"])
    assert [r["name"] for r in rows] == ["tiny C=0.01", "tiny C=0.1", "tiny C=1"]
    assert all(r["status"] == "done" for r in rows)
    for before, after in zip(rows, rows[1:]):  # one at a time: each started once the one before had ended
        assert after["started"] >= before["ended"], (before, after)
    lines = swept.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines[:3]] == [r["id"] for r in rows]
    header, *table = lines[3:]
    assert header.split()[:3] == ["C", "run", "status"]
    p1 = header.split().index("p@1") + 1  # the run column's name holds a space
    assert [float(line.split()[p1]) for line in table] == pytest.approx([r["summary"]["p@1"] for r in rows], abs=0.01)
    report = xcviz_cli("report", *[r["id"] for r in rows], "--home", home, "-o", tmp_path / "sweep.html")
    assert report.returncode == 0, report.stderr[-2000:]
    page = (tmp_path / "sweep.html").read_text()
    assert "Sweep over C" in page and "P@k against C" in page and "C (log)" in page
    assert json.loads(rows[0]["spec"])["params"]["C"] == 0.01
