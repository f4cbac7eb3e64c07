"""Hostile or broken input files and specs: each refused with one located line (file, line, size
or field), never a traceback, a huge allocation or a silently wrong answer."""
import json
import resource
from types import SimpleNamespace

import pytest

from xcviz.cli import main
from xcviz.data.synthetic import generate
from xcviz.data.textio import write_xc


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    """`xcviz` in this process (fast, for checks that need no process of their own)."""
    monkeypatch.setenv("XCVIZ_CACHE", str(tmp_path / "cache"))

    def run(*args):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out, stderr=err)
    return run


def _limited(gigabytes: float):
    """preexec_fn capping the child's address space: an allocation for a declared size fails loudly."""
    def apply():
        limit = int(gigabytes * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def _one_line_error(result, *phrases):
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xcviz: error: "), result.stderr[-2000:]
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("header,body,phrases", [
    ("4 1000000000 5", "0 1:1\n1 2:1\n2 3:1\n3 4:1\n", ["D = 1000000000"]),
    ("4 5 1000000000000", "0 1:1\n1 2:1\n2 3:1\n3 4:1\n", ["L = 1000000000000"]),
    ("4 100000000 5", "0 1:1\n1 2:1\n2 3:1\n3 4:1\n", ["D = 100000000", "4 rows"]),
    ("4 5 100000000", "0 1:1\n1 2:1\n2 3:1\n3 4:1\n", ["L = 100000000", "4 rows"]),
    (None, "1 1:1\n2 1000000000000:1\n", [":2:", "feature index 1000000000000 too large"]),
    (None, "1 1:1\n2 300000000:1\n", ["D = 300000000", "2 rows"]),
], ids=["xc_D_1e9", "xc_L_1e12", "xc_D_1e8_four_rows", "xc_L_1e8_four_rows", "libsvm_index_1e12",
        "libsvm_index_3e8_two_rows"])
def test_sizes_beyond_the_machine_are_refused_before_allocating(tmp_path, xcviz_cli, header, body, phrases):
    path = tmp_path / "huge.txt"
    path.write_text((f"{header}\n" if header else "") + body)
    result = xcviz_cli("train", path, "--threads", "1", preexec_fn=_limited(3), env=_env(tmp_path))
    _one_line_error(result, str(path), *phrases)


def _env(tmp_path):
    import os
    return {**os.environ, "XCVIZ_CACHE": str(tmp_path / "cache")}


def test_a_device_is_refused(tmp_path, xcviz_cli):
    _one_line_error(xcviz_cli("train", "/dev/zero", preexec_fn=_limited(3), timeout=60), "/dev/zero",
                    "not a regular file")


def test_an_xc_test_file_without_its_header_is_refused(tmp_path, small_xc, cli):
    """Read as LIBSVM its features shift by one and P@1 collapses; it must be refused instead."""
    train, test = small_xc
    headless = tmp_path / "headless_test.txt"
    headless.write_text("".join(test.read_text().splitlines(keepends=True)[1:]))
    result = cli("train", train, "--test", headless, "--threads", "1")
    _one_line_error(result, str(headless), "format of the training file")


def test_a_utf8_bom_is_accepted_in_data_and_spec_files(tmp_path, small_xc, cli):
    train, test = small_xc
    for path in (train, test):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    result = cli("train", train, "--test", test, "--threads", "1", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["p@1"] > 30
    spec = tmp_path / "spec.json"
    spec.write_bytes(b"\xef\xbb\xbf" + json.dumps({"dataset": str(train), "threads": 1, "name": "bom"}).encode())
    result = cli("launch", spec, "--home", tmp_path / "home")
    assert result.returncode == 0, result.stderr[-2000:]
    run = result.stdout.strip()
    result = cli("wait", run, "--json", "--home", tmp_path / "home", "--timeout", "240")
    assert json.loads(result.stdout)["status"] == "done", result.stdout


@pytest.mark.parametrize("header", ["5 10", "5 10 3 7", "5 x 3"])
def test_a_malformed_xc_header_gets_an_xc_message(tmp_path, cli, header):
    path = tmp_path / "bad_header.txt"
    path.write_text(f"{header}\n0 1:1\n")
    _one_line_error(cli("train", path), f"{path}:1:", "XC header")


def test_errors_name_the_test_file_given_with_a_bundled_name(tmp_path, cli):
    bad = tmp_path / "bad.txt"
    bad.write_text("3 1836 159\n0 1:1\n")
    _one_line_error(cli("train", "bibtex", "--test", bad), str(bad))
    _one_line_error(cli("train", "bibtex", "--test", tmp_path / "missing.txt"), str(tmp_path / "missing.txt"),
                    "no such file")


@pytest.mark.parametrize("field,value,phrase", [
    ("name", 5, "'name': must be a string"),
    ("name", ["x"], "'name': must be a string"),
    ("test", 7, "'test': must be a string"),
    ("threads", True, "'threads'"),
    ("params", {"max_iter": True}, "'max_iter'"),
], ids=["name_int", "name_list", "test_int", "threads_bool", "param_bool"])
def test_spec_fields_of_the_wrong_type_are_refused(tmp_path, cli, field, value, phrase):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"dataset": "bibtex", field: value}))
    _one_line_error(cli("launch", spec, "--home", tmp_path / "home"), str(spec), phrase)


def test_deeply_nested_spec_json_is_refused(tmp_path, cli):
    spec = tmp_path / "deep.json"
    spec.write_text('{"dataset": "bibtex", "params": ' + "[" * 100000 + "]" * 100000 + "}")
    _one_line_error(cli("launch", spec, "--home", tmp_path / "home"), str(spec), "nested")


def test_set_true_for_a_number_is_refused(tmp_path, small_xc, cli):
    train, _ = small_xc
    _one_line_error(cli("train", train, "--set", "max_iter=true"), "max_iter")


def test_out_on_an_existing_file_is_refused_before_training(tmp_path, small_xc, cli):
    train, _ = small_xc
    out = tmp_path / "model.txt"
    out.write_text("keep me")
    records = tmp_path / "records.jsonl"
    result = cli("train", train, "--out", out, "--records", records)
    _one_line_error(result, str(out))
    assert out.read_text() == "keep me" and not records.exists()  # refused before training began


@pytest.mark.slow
def test_runs_escapes_control_characters_in_names(tmp_path, xcviz_cli):
    from xcviz.runs.store import RunStore

    store = RunStore(tmp_path / "home")
    store.create(json.dumps({"dataset": "bibtex"}), "evil\x1b]0;owned\x07\x1b[2J\rname")
    result = xcviz_cli("runs", "--home", tmp_path / "home")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\r" not in result.stdout
    assert "evil\\x1b]0;owned\\x07\\x1b[2J\\rname" in result.stdout


def test_a_small_file_with_a_modest_d_still_trains(tmp_path, cli):
    """The size check is no blanket refusal: 200 rows may declare D = 50000."""
    path = tmp_path / "ok_train.txt"
    write_xc(path, generate(200, 50000, 20, avg_labels=2, avg_nnz=10, seed=2))
    result = cli("train", path, "--threads", "1", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
