"""The `xcviz` command: datasets, generate, train --json, evaluate, and one-line errors."""
import json
import os
import subprocess
import sys

import pytest

from xcviz.cli import main

JSON_KEYS = {"dataset", "solver", "init", "threads", "train_seconds", "compile_seconds", "newton_iterations", "p@1",
             "p@3", "p@5", "ndcg@3", "ndcg@5", "psp@5", "model_nnz"}


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_datasets_lists_the_bundled_sets(capsys):
    code, out, _ = _run(capsys, "datasets", "--json")
    sets = {d["name"]: d for d in json.loads(out)}
    assert code == 0 and set(sets) == {"bibtex", "delicious"}
    assert (sets["bibtex"]["train"]["n"], sets["bibtex"]["train"]["d"], sets["bibtex"]["train"]["l"]) == (4880, 1836, 159)
    assert sets["delicious"]["test"]["n"] == 3185
    code, out, _ = _run(capsys, "datasets")
    assert "bibtex" in out and "4880" in out


def test_train_json_then_evaluate_the_saved_model(capsys, tmp_path):
    code, out, _ = _run(capsys, "train", "bibtex", "--init", "msi", "--threads", "2", "--out",
                        str(tmp_path / "model"), "--json", "--records", str(tmp_path / "rec.jsonl"))
    assert code == 0
    summary = json.loads(out.strip().splitlines()[-1])
    assert JSON_KEYS <= set(summary)
    assert summary["threads"] == 2 and summary["init"] == "msi"
    assert abs(summary["p@1"] - 63.9) < 0.6 and abs(summary["p@5"] - 28.02) < 0.5
    assert summary["newton_iterations"] > 159
    code, out, _ = _run(capsys, "evaluate", str(tmp_path / "model"), "bibtex", "--json")
    again = json.loads(out)
    assert code == 0 and again["p@1"] == summary["p@1"] and again["psp@5"] == summary["psp@5"]
    assert (tmp_path / "rec.jsonl").stat().st_size > 0


def test_generate_then_train_on_files(capsys, tmp_path):
    prefix = tmp_path / "syn"
    code, out, _ = _run(capsys, "generate", str(prefix), "--n", "800", "--d", "200", "--labels", "30",
                        "--avg-labels", "2", "--avg-nnz", "15", "--seed", "4", "--test-fraction", "0.25")
    assert code == 0 and (tmp_path / "syn_train.txt").exists() and (tmp_path / "syn_test.txt").exists()
    code, out, _ = _run(capsys, "train", str(tmp_path / "syn_train.txt"), "--test", str(tmp_path / "syn_test.txt"),
                        "--threads", "1", "--json")
    summary = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and summary["n_train"] == 600 and summary["n_test"] == 200
    assert summary["p@1"] > 30  # the generator's labels are learnable


def test_a_libsvm_models_test_file_is_read_with_its_training_files_label_map(capsys, tmp_path):
    """LIBSVM labels are arbitrary integers: a saved model keeps its training file's, so a test file
    evaluated on its own maps them the same way (its columns used to follow its own labels: a test
    file lacking one training label was refused, one of unrelated labels scored P@1 = 100)."""
    (tmp_path / "train.txt").write_text("1 1:1\n5 2:1\n1 3:1\n5 4:1\n9 1:1 2:1\n")
    (tmp_path / "same.txt").write_text("5 2:1\n1 1:1\n")  # labels 5 and 1, not 9: columns 1 and 0
    (tmp_path / "other.txt").write_text("2 1:1\n50 2:1\n90 1:1 2:1\n")  # labels never trained
    model = tmp_path / "model"
    assert _run(capsys, "train", str(tmp_path / "train.txt"), "--threads", "1", "--out", str(model))[0] == 0
    assert json.loads((model / "model.json").read_text())["info"]["label_values"] == [1, 5, 9]
    code, out, _ = _run(capsys, "evaluate", str(model), str(tmp_path / "same.txt"), "--json")
    assert code == 0 and json.loads(out)["p@1"] == 100.0  # each row's own feature picks its label
    code, out, err = _run(capsys, "evaluate", str(model), str(tmp_path / "other.txt"), "--json")
    scores = json.loads(out)
    assert code == 0 and scores["p@1"] == 0.0 and scores["recall@5"] == 0.0
    assert "3 label(s) of" in err and "count as misses" in err


@pytest.mark.parametrize("argv, phrase", [
    (["train", "no/such/file.txt"], "no such file"),
    (["train", "bibtex", "--init", "nonsense"], "init"),
    (["train", "bibtex", "--C", "-1"], "C"),
    (["train", "bibtex", "--set", "bogus=1"], "unknown parameter"),
    (["train", "bibtex", "--set", "threads=4"], "unknown parameter"),  # an option of its own, not a parameter
    (["train", "bibtex", "--set", "solver=ppdsparse"], "unknown parameter"),
    (["train", "bibtex", "--set", "=3"], "NAME=VALUE"),
    (["train", "bibtex", "--init", "mis"], "dismec's init must be one of zero, bias, ovap, msi, not 'mis' (did you mean msi?)"),
    (["train", "bibtex", "--C", "nan"], "dismec's C must be a number, not nan"),
    (["train", "bibtex", "--set", "max_iter=1.5"], "dismec's max_iter must be a whole number, not 1.5"),
    (["generate", "huge", "--n", "1000000000000", "--d", "10", "--labels", "5"], "--n"),
    (["evaluate", "no/such/model", "bibtex"], "no such file"),
    (["generate", "g", "--n", "50", "--d", "10", "--labels", "4", "--avg-labels", "9"],
     "avg_labels (9) cannot exceed the number of labels (4)"),
    (["train", "bibtex", "--set", "C=1", "--C", "2"], "--C 2 and --set C=1 disagree; give C once"),
    (["train", "bibtex", "--set", "msi_t=-3", "--set", "msi_t=-2"], "--set msi_t=-3 and --set msi_t=-2 disagree"),
    (["train", "bibtex", "--no-normalize", "--set", "normalize=true"], "--no-normalize and --set normalize=true"),
    (["train", "bibtex", "--records", "/"], "--records /: a folder"),
    (["report", "some-run", "-o", "/"], "-o /: a folder"),
    (["serve", "--port", "99999"], "--port must be from 0 to 65535, not 99999"),  # was Bokeh's AssertionError
    (["shard", "bibtex", "no-such-out", "--parts", "0"], "from 1 to 4096 (at most 4096 parts), got 0"),
    (["serve", "--port", "-1"], "--port must be from 0 to 65535, not -1"),
])
def test_bad_input_gives_one_line_and_exit_2(capsys, argv, phrase):
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert err.startswith("xcviz: error:") and err.count("\n") == 1 and phrase in err


def test_a_binary_spec_file_is_named_and_not_shown(capsys, tmp_path):
    (tmp_path / "bin.dat").write_bytes(b"\xff\xfe secret \x00\x81")
    code, _, err = _run(capsys, "launch", str(tmp_path / "bin.dat"), "--home", str(tmp_path / "home"))
    assert code == 2 and "bin.dat: not a run spec" in err and "secret" not in err


def test_an_empty_test_split_is_not_written_nor_trained_for(capsys, tmp_path):
    """--test-fraction 0 used to write a test file of no rows, and training on its pair failed only
    after training ('Y has no rows', no file named), its model lost."""
    code, out, _ = _run(capsys, "generate", str(tmp_path / "g"), "--n", "60", "--d", "20", "--labels", "4",
                        "--test-fraction", "0")
    assert code == 0 and (tmp_path / "g_train.txt").exists() and not (tmp_path / "g_test.txt").exists()
    (tmp_path / "e_train.txt").write_text("2 5 3\n0 0:1\n1 1:1\n")
    (tmp_path / "e_test.txt").write_text("0 5 3\n")
    code, _, err = _run(capsys, "train", str(tmp_path / "e_train.txt"), "--threads", "1")
    assert code == 2 and "e_test.txt: no rows to test on" in err


def test_out_replaces_a_model_but_not_other_files_and_psp_says_why_it_is_missing(capsys, tmp_path):
    """--out used to write into any folder, silently; a training file of fewer than 3 rows failed
    after training (the propensities of PSP@k), losing the model."""
    (tmp_path / "tiny_train.txt").write_text("2 3 2\n0 0:1\n1 1:1 2:1\n")
    (tmp_path / "tiny_test.txt").write_text("2 3 2\n0 0:1\n1 1:1\n")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    code, _, err = _run(capsys, "train", str(tmp_path / "tiny_train.txt"), "--out", str(tmp_path / "mine"))
    assert code == 2 and "a folder holding other files" in err and sorted(os.listdir(tmp_path / "mine")) == ["notes.txt"]
    model = tmp_path / "model"
    for replaced in (False, True):
        code, out, err = _run(capsys, "train", str(tmp_path / "tiny_train.txt"), "--threads", "1", "--out", str(model),
                              "--json")
        summary = json.loads(out)
        assert code == 0 and summary["p@1"] == 100.0 and "psp@1" not in summary
        assert "psp@k and psndcg@k left out: the propensities need at least 3 training rows" in err
        assert ("replacing the model saved in" in err) == replaced
    code, out, err = _run(capsys, "evaluate", str(model), str(tmp_path / "tiny_test.txt"), "--json")
    assert code == 0 and json.loads(out)["p@1"] == 100.0 and "a saved model does not keep" in err


@pytest.mark.parametrize("argv, phrase", [
    (["train", "bibtex", "--C", "abc"], "argument --C: invalid float value: 'abc' (see `xcviz train --help`)"),
    (["trian", "bibtex"], "invalid choice: 'trian'"),
    ([], "required: command (see `xcviz --help`)"),
])
def test_a_malformed_command_line_gives_one_line_too(capsys, argv, phrase):
    """argparse's own refusals: one line and where to read more, not the usage block."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("xcviz: error:") and err.count("\n") == 1 and phrase in err


def test_malformed_training_file_names_file_and_line(capsys, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3 2\n0 0:1 1:1\n1 0:1 7:1\n")
    code, _, err = _run(capsys, "train", str(bad))
    assert code == 2 and "bad.txt:3" in err and "7" in err


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "xcviz.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("xcviz ")


@pytest.mark.slow
def test_train_ppdsparse_json(capsys):
    code, out, _ = _run(capsys, "train", "bibtex", "--solver", "ppdsparse", "--lam", "0.3", "--threads", "2", "--json")
    summary = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and summary["solver"] == "ppdsparse" and "init" not in summary
    assert summary["outer_iterations"] > 159 and summary["p@1"] > 63
    code, _, err = _run(capsys, "train", "bibtex", "--solver", "ppdsparse", "--init", "msi")
    assert code == 2 and "unknown parameter" in err and "init" in err


@pytest.mark.slow
def test_train_memoir_json_has_the_multiclass_summary(capsys, tmp_path):
    code, out, _ = _run(capsys, "train", "bibtex", "--solver", "memoir", "--variant", "l1", "--oracle", "hnsw",
                        "--epochs", "1", "--threads", "2", "--json", "--records", str(tmp_path / "rec.jsonl"))
    assert code == 0
    summary = json.loads(out.strip().splitlines()[-1])
    assert {"accuracy", "macro_f1", "train_seconds", "epoch_seconds", "oracle_recall", "model_nnz",
            "peak_rss_mb"} <= set(summary)
    assert summary["variant"] == "l1" and summary["oracle"] == "hnsw" and summary["n_train"] == 11616
    assert 0 <= summary["oracle_recall"] <= 1 and 1 < summary["accuracy"] < 60
    assert summary["epoch_seconds"] == pytest.approx(summary["train_seconds"], rel=1e-3)
    assert summary["peak_rss_mb"] > 50
    code, _, err = _run(capsys, "train", "bibtex", "--solver", "memoir", "--oracle", "nope")
    assert code == 2 and "oracle" in err


def test_the_progress_bar_redraws_ten_times_a_second_and_at_the_end():
    """A multiclass solver reports after every batch (LDGS's a millisecond apart): the bar draws the
    first report, then at most one per 0.1 s, and always the last, with its newline."""
    import io
    import time

    from xcviz.cli import ProgressBar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    bar = ProgressBar("batches", out)
    start, done = time.monotonic(), 0
    while time.monotonic() - start < 0.25:
        done += 1
        bar(done, 10**9)
    draws = out.getvalue().split("\r")[1:]
    assert done > 100 and 2 <= len(draws) <= 4, (done, len(draws))
    assert draws[0].startswith("\x1b[K[") and " 1/1000000000 batches" in draws[0]
    assert draws[0].endswith("ETA   --  ")  # no rate after one report (it read "ETA   nans")
    bar(10**9, 10**9)
    assert out.getvalue().endswith("\n") and " 1000000000/1000000000 batches" in out.getvalue().split("\r")[-1]


def test_the_progress_bar_says_the_kernels_may_be_compiling_and_paces_its_eta_after_it():
    """A fresh install's first run compiles for up to a minute before its first report: a line
    says so, and the ETA counts from the first report (1 batch in 58 s had read ETA 28,068 s)."""
    import io
    import re
    import time

    from xcviz.cli import STARTING, ProgressBar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    bar = ProgressBar("batches", out, notice=0.05)
    time.sleep(0.5)  # the compile
    assert out.getvalue() == f"{STARTING}\n"
    bar(1, 1000)
    time.sleep(0.15)
    bar(101, 1000)  # 100 batches in 0.15 s: about 1.35 s to go, not 0.65 s x 899 = 580 s
    eta = float(re.findall(r"ETA\s+([0-9.]+)s", out.getvalue())[-1])
    assert 0.5 < eta < 5, out.getvalue()
    quiet = Terminal()
    ProgressBar("labels", quiet, notice=0.05)(1, 2)
    time.sleep(0.2)
    assert STARTING not in quiet.getvalue()  # a run that reports at once gets no notice
    done = Terminal()
    ProgressBar("labels", done)(2, 2)  # a first report that is the last: nothing left to wait for
    assert "ETA   0.0s" in done.getvalue()


def test_evaluate_suggests_the_bundled_name_a_typo_meant(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "model"), "bibtx"]) == 2
    assert "did you mean bibtex?" in capsys.readouterr().err


def test_serve_on_a_busy_port_names_the_port_and_the_remedy(capsys):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"port {port} on 127.0.0.1 is in use" in line and "--port" in line


def test_every_solver_parameter_has_a_generated_option_with_its_doc():
    """The train and spec options come from the parameter classes: each parameter is --NAME (a
    switch pair for a Boolean), typed by its kind, helped by its doc, a Selector's choices shown."""
    from xcviz.cli import build_parser
    from xcviz.solvers import SOLVERS

    parser = build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    actions = {a.dest: a for a in train._actions}
    for family in SOLVERS.values():
        for name, parameter in family.params.param.objects("existing").items():
            if name == "name":
                continue
            action = actions[name]
            assert f"--{name.replace('_', '-')}" in action.option_strings
            assert parameter.doc.split(".")[0][:40].replace("%", "%%") in action.help
            for choice in getattr(parameter, "objects", None) or []:
                assert str(choice) in action.metavar
    assert "--no-normalize" in actions["normalize"].option_strings
    args = parser.parse_args(["train", "bibtex", "--max-iter", "7", "--no-deal", "--mode", "lc"])
    assert (args.max_iter, args.deal, args.mode, args.eps) == (7, False, "lc", None)


def test_the_progress_bar_says_when_the_kernels_compile():
    """The fit's phase callback: "compiling" shows at once on a line of its own (no waiting
    notice after it), "training" says how long the kernels took, then the bar draws as usual."""
    import io
    import time

    from xcviz.cli import COMPILING, STARTING, ProgressBar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    bar = ProgressBar("labels", out, notice=0.05)
    bar.phase("compiling")
    time.sleep(0.3)
    bar.phase("training")
    bar(159, 159)
    lines = out.getvalue().split("\n")
    assert lines[0] == COMPILING and "not counted in train_seconds" in COMPILING and STARTING not in out.getvalue()
    seconds = float(lines[1].removeprefix("kernels ready in ").removesuffix("s"))
    assert 0.25 <= seconds < 2.0 and " 159/159 labels" in lines[2]
    quiet = io.StringIO()  # not a terminal: nothing drawn
    ProgressBar("labels", quiet).phase("compiling")
    assert quiet.getvalue() == ""
