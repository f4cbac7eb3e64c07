"""What the launch panel and the live plots say before anything trains, without a browser: threads
refused as typed (the CLI's bound, 1 to the machine's cores), a refused data set that blocks Compare
and says why beside it, launch errors beside Compare, and the live plots' message while the shown
runs have no records (not recorded yet, failed) or none on the chosen x-axis."""
import numpy as np
import panel as pn
import pytest
from bokeh.document import Document

from xcviz.engine.threads import max_threads
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz._util.text import markdown_text
from xcviz.app.dashboard import Dashboard
from xcviz.app.ui.launch import LaunchPanel

REASON = "a link to a file outside the data folders"


def _widget(layout, label: str):
    """The widget labelled `label` on the page, as a user finds it."""
    return next(w for w in layout.select(pn.widgets.Widget) if getattr(w, "label", None) == label)


def _said(layout) -> list:
    """The visible message panes of a layout that have text, in page order."""
    return [p for p in layout.select(lambda o: isinstance(o, (pn.pane.HTML, pn.pane.Markdown)))
            if p.visible and isinstance(p.object, str) and p.object]


@pytest.mark.parametrize("typed", ["-1", "0", str(10**6), "abc", "1.5", ""])
def test_threads_out_of_range_or_not_whole_are_refused_as_typed(typed):
    panel = LaunchPanel({"bibtex": "bibtex"})
    layout = panel.panel()
    threads = _widget(layout, "threads")
    threads.value = typed
    assert threads.value == typed  # not replaced by a bound or a default
    says = [p.object for p in _said(layout) if "threads" in p.object]
    assert says and f"between 1 and {max_threads()}" in says[0]
    assert panel.compare_button.disabled
    with pytest.raises(ValueError, match="threads"):
        panel.specs("bibtex", None)
    threads.value = str(max_threads())
    assert not [p for p in _said(layout) if "threads" in p.object] and not panel.compare_button.disabled
    assert {s.threads for s in panel.specs("bibtex", None)} == {max_threads()}


def test_a_refused_data_set_blocks_compare_and_says_why_beside_it(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    data.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0\n")
    (data / "passwd_train.txt").symlink_to(outside / "passwd")
    dashboard = Dashboard(RunStore(tmp_path / "home"), data_dirs=[data])
    page = dashboard.view()
    page.get_root(Document())
    select, compare = dashboard.launcher.dataset, dashboard.launcher.compare_button
    select.value = next(v for label, v in select.options.items() if label.startswith("passwd_train.txt"))
    assert compare.disabled
    (reason,) = [p for p in _said(page) if REASON in p.object]
    assert "passwd_train.txt" in reason.object and "refused:" not in reason.object
    order = page.select(lambda o: o is select or o is reason or o is compare)
    assert order == [select, reason, compare]  # beside the select, above the button
    dashboard._launch()  # a click that reached the server anyway: nothing launched, said in user words
    assert dashboard.store.list() == [] and "refused:" not in dashboard.launch_message.object
    select.value = "bibtex"
    assert not compare.disabled and not [p for p in _said(page) if REASON in p.object]


def test_a_launch_error_shows_beside_compare(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "gone_train.txt").write_text("1 2 2\n0 0:1.0\n")
    dashboard = Dashboard(RunStore(tmp_path / "home"), data_dirs=[data])
    page = dashboard.view()
    page.get_root(Document())
    dashboard.launcher.dataset.value = str(data / "gone_train.txt")
    (data / "gone_train.txt").unlink()
    dashboard._launch()
    message, compare = dashboard.launch_message, dashboard.launcher.compare_button
    assert message.visible and "no such file" in message.object
    first_parameter = dashboard.launcher.inputs["C"].widget
    order = page.select(lambda o: o is compare or o is message or o is first_parameter)
    assert order == [compare, message, first_parameter]  # where the user looks, not below every parameter


def test_a_new_launch_clears_the_last_run_action_message(tmp_path):
    dashboard = Dashboard(RunStore(tmp_path / "home"))
    page = dashboard.view()
    page.get_root(Document())
    dashboard.runs.say("delicious-msi has already ended as done, nothing to cancel")
    _widget(page, "threads").value = "abc"  # refused: nothing is launched, the click is still new
    dashboard._launch()
    assert not dashboard.runs.message.visible


def test_live_plots_say_whether_runs_have_not_recorded_yet_failed_or_miss_the_axis(tmp_path):
    store = RunStore(tmp_path / "home")
    run = store.create(RunSpec(dataset="bibtex", solver="dismec", params={}).validate().to_json(), "slow-start")
    dashboard = Dashboard(store)
    dashboard.view().get_root(Document())  # a queued run: shown while nothing is ticked
    empty = dashboard.plots.empty
    assert dashboard.shown() == [run] and empty.visible
    assert "slow-start has not recorded anything yet" in empty.object and "numba" in empty.object
    assert "pick another x-axis" not in empty.object
    store.update(run, status="failed", error="boom")
    dashboard.refresh()
    assert "slow-start failed" in empty.object and "runs table" in empty.object
    assert "pick another x-axis" not in empty.object
    store.append_batch(run, "iteration", {"label": np.zeros(3, np.int64), "iteration": np.arange(3),
                                          "objective": np.array([3.0, 2.0, 1.0])})
    store.update(run, status="running")
    dashboard.refresh()
    assert not empty.visible
    dashboard.plots.x_axis.value = "epoch"  # records, but none against this axis
    assert empty.visible and "pick another x-axis" in empty.object


def test_resume_says_a_multiclass_run_starts_again_and_delete_refuses_a_training_run_first(tmp_path, monkeypatch):
    """Resume continued a one-vs-all run but silently restarted an LDGS one (cancelled at epoch 12
    of 30, it trained from epoch 0 again); Delete asked to confirm, then refused a running run by
    its id. Resume now says which runs start again, and Delete refuses by name before asking."""
    import xcviz.app.ui.runs_table as runs_table

    resumed = []
    monkeypatch.setattr(runs_table, "resume", lambda _store, run, _schedulers: resumed.append(run))  # no worker process
    store = RunStore(tmp_path / "home")
    ldgs = store.create(RunSpec(dataset="bibtex", solver="ldgs", params={}).validate().to_json(), "bibtex-decomp")
    dismec = store.create(RunSpec(dataset="bibtex", params={}).validate().to_json(), "bibtex-zero")
    for run in (ldgs, dismec):
        store.update(run, status="cancelled")
    dashboard = Dashboard(store)
    dashboard.view().get_root(Document())
    table = dashboard.runs
    table.ticked_ids = [ldgs, dismec]
    table.resume_button.clicks += 1
    assert resumed == [ldgs, dismec] and table.message.visible and table.message.alert_type == "info"
    assert "bibtex-decomp starts again from its first epoch" in table.message.object
    assert "bibtex-zero" not in table.message.object  # a one-vs-all run continues: nothing to say
    store.update(ldgs, status="running")
    table.ticked_ids = [ldgs]
    table.delete_button.clicks += 1
    assert not table.confirm.visible and markdown_text("bibtex-decomp is still training: cancel, then delete") in table.message.object
    assert len(store.list()) == 2


@pytest.mark.parametrize("typed", ["nan", "inf", "-inf"])
def test_a_value_that_is_not_finite_is_refused_as_such(typed):
    """C = nan passed no bound and was refused as "C must be at most 1000000.0, not nan"."""
    panel = LaunchPanel({"bibtex": "bibtex"})
    panel.inputs["C"].widget.value = typed
    assert panel.check() == [f"C must be a finite number, not {typed!r}"] and panel.compare_button.disabled


@pytest.mark.parametrize("typed", ["0", "-1", "65", "abc", "1.5"])
def test_workers_of_a_local_cluster_are_refused_as_typed_while_that_backend_is_chosen(typed):
    """The workers box was a spinner like threads (which replaced what was typed without a word)."""
    panel = LaunchPanel({"bibtex": "bibtex"})
    panel.backend.workers.widget.value = typed  # not in use yet: running on threads
    assert panel.check() == [] and not panel.compare_button.disabled
    panel.backend.kind.value = "local cluster"
    assert panel.check() == ["workers must be a whole number between 1 and 64"] and panel.compare_button.disabled
    assert panel.backend.workers.widget.value == typed
    panel.backend.workers.widget.value = "3"
    assert panel.check() == [] and panel.backend.cluster(1) == "local:3x1"
