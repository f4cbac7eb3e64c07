"""The command line for runs of the store and for data: runs by id prefix or name, delete, wait
--json with the keys of train --json, quiet end on a closed pipe, paired test files, suggestions
for a mistyped data set, symbolic links in data folders."""
import json
import os
import subprocess
import sys

import pytest

from xcviz.cli import main
from xcviz.runs.launcher import launch
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz.app.ui.datasets import dataset_choices, refused_datasets


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("data") / "syn"
    assert main(["generate", str(prefix), "--n", "400", "--d", "100", "--labels", "12", "--seed", "3"]) == 0
    return prefix


@pytest.mark.slow
def test_train_pairs_the_test_file_and_wait_json_has_the_keys_of_train_json(capsys, problem, tmp_path):
    code, out, err = _run(capsys, "train", f"{problem}_train.txt", "--threads", "1", "--json")
    assert code == 0 and f"testing on {problem}_test.txt" in err  # said, on stderr
    trained = json.loads(out)
    assert trained["n_test"] == 120 and "p@1" in trained
    store = RunStore(tmp_path / "home")
    spec = RunSpec(dataset=f"{problem}_train.txt", test=f"{problem}_test.txt", solver="dismec", threads=1,
                   name="syn-msi").validate()
    run = launch(spec, store)
    code, out, err = _run(capsys, "wait", "syn-msi", "--json", "--home", store.home)  # by name
    waited = json.loads(out)
    assert code == 0 and waited["id"] == run and waited["status"] == "done"
    assert set(trained) <= set(waited) and set(waited) - set(trained) == {"id", "name", "status", "error",
                                                                          "labels_done"}
    metrics = [k for k in trained if "@" in k]
    assert metrics and all(waited[k] == trained[k] for k in metrics)  # the same training, the same numbers,
    assert all(round(waited[k], 4) == waited[k] for k in metrics)  # in the same format (4 decimals)
    second = launch(spec, store)  # the name is taken: the second run gets a suffix
    assert store.get(second)["name"] == "syn-msi-2"
    code, out, _ = _run(capsys, "wait", second[:-3], "--home", store.home)  # a unique start of the id
    assert code == 0 and "syn-msi-2" in out and "p@1" in out
    code, _, err = _run(capsys, "wait", second[:9], "--home", store.home)  # the date: both runs start so
    assert code == 2 and "give more of it" in err
    code, out, _ = _run(capsys, "delete", "syn-msi-2", "--home", store.home)
    assert code == 0 and [r["name"] for r in store.list()] == ["syn-msi"]
    code, _, err = _run(capsys, "delete", "nothing-like-it", "--home", store.home)
    assert code == 2 and "xcviz runs" in err


def test_delete_refuses_a_running_run(capsys, tmp_path):
    store = RunStore(tmp_path / "home")
    run = store.create(RunSpec(dataset="bibtex", solver="dismec").validate().to_json(), "busy")
    store.update(run, status="running", pid=os.getpid(), host=os.uname().nodename)
    code, _, err = _run(capsys, "delete", "busy", "--home", store.home)
    assert code == 2 and "cancel it" in err and len(store.list()) == 1


@pytest.mark.slow
def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    store = RunStore(tmp_path / "home")
    spec = RunSpec(dataset="bibtex", solver="dismec").validate().to_json()
    for k in range(1500):  # more than a pipe holds, so the writer meets the closed end
        store.create(spec, f"run-{k}")
    proc = subprocess.Popen([sys.executable, "-m", "xcviz.cli", "runs", "--home", str(store.home)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"id")
    proc.stdout.close()  # what `| head -1` does after its line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and err == ""


def test_a_mistyped_dataset_gets_a_suggestion(capsys):
    code, _, err = _run(capsys, "train", "bibtx")
    assert code == 2 and "did you mean bibtex?" in err and "`xcviz datasets`" in err
    code, _, err = _run(capsys, "spec", "bibtx")  # a spec is refused as train refuses it
    assert code == 2 and "did you mean bibtex?" in err


def test_a_spec_pairs_the_test_file_as_train_does(capsys, problem):
    """A background run of PREFIX_train.txt was never tested: `train` paired PREFIX_test.txt, `spec`
    left the test out and the run ended without metrics."""
    code, out, err = _run(capsys, "spec", f"{problem}_train.txt", "--threads", "1")
    assert code == 0 and f"testing on {problem}_test.txt" in err
    assert json.loads(out)["test"] == f"{problem}_test.txt"


def test_links_in_a_data_folder(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    (data / "sub").mkdir(parents=True)
    outside.mkdir()
    (data / "sub" / "real_train.txt").write_text("1 2 2\n0 0:1.0\n")
    (outside / "secret_train.txt").write_text("1 2 2\n0 0:1.0\n")
    (data / "inner_train.txt").symlink_to(data / "sub" / "real_train.txt")
    (data / "escape_train.txt").symlink_to(outside / "secret_train.txt")
    assert dataset_choices([data])["inner_train.txt"] == str(data / "inner_train.txt")  # followed
    assert "escape_train.txt" not in dataset_choices([data])
    assert refused_datasets([data]) == {"escape_train.txt": "a link to a file outside the data folders"}
