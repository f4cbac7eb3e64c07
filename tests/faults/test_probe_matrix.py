"""The hostile-input probe as a matrix (issue #42), rerun on every change: every parameter of every
family with values of the wrong type, outside its bounds and at its lowest bound; damaged data files
in each format and compression; hostile run specs. The cases run in-process through `xcviz.cli.main`,
the command's own code path, so that over a thousand of them take seconds (test_hostile_inputs.py
runs the probe's defects in fresh processes). Each is held to the failure model of docs/security.md:
no exception escapes, and the command either prints one `xcviz: error:` line that names the option,
field or file and echoes none of the file, or succeeds with finite numbers. A case marked refused
must be refused: accepting it would be a silently wrong result."""
from __future__ import annotations

import gzip
import json
import lzma
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import param
import pytest

from xcviz.cli import main
from xcviz.data.synthetic import generate, split
from xcviz.data.textio import write_libsvm, write_xc
from xcviz.solvers import SOLVERS

pytestmark = pytest.mark.slow  # 90 s in one process: `make test` (CI) runs it on every change, test-fast does not

SECRET = "s3cret-content"  # planted in damaged files: an error that echoes the file shows it
MULTICLASS = ("memoir", "dsmlr", "ldgs")

# lowest bounds a family refuses for a reason of its own, with the words of its refusal
LOWEST_REFUSED = {("memoir", "lam"): "l2 needs lam > 0"}

# values of the wrong type for any parameter, as typed after --set NAME= (parsed as JSON first)
WRONG_TYPE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity", "1e400": "1e400", "text": "abc",
              "list": "[1]", "object": '{"a": 1}', "nested": "[[[[1]]]]", "empty": ""}


@dataclass(frozen=True)
class Outcome:
    """What the command did: its exit code, its stderr and stdout."""

    code: int
    err: str
    out: str


def run_cli(args: list[str], capsys: pytest.CaptureFixture) -> Outcome:
    """`xcviz ARGS` in this process; an exception other than argparse's exit escapes the test."""
    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return Outcome(code, captured.err, captured.out)


def assert_refused(outcome: Outcome, *where: str) -> None:
    """One error line that names each of `where` and echoes no planted content."""
    assert outcome.code != 0, f"accepted: {outcome.out[-500:]}"
    (line,) = outcome.err.strip().splitlines()
    assert line.startswith("xcviz: error: "), line
    for name in where:
        assert name in line, line
    assert SECRET not in outcome.err + outcome.out


def assert_trained(outcome: Outcome) -> dict:
    """A successful `train --json`: its numbers finite, its precision a percentage."""
    assert outcome.code == 0, outcome.err[-2000:]
    result = json.loads(outcome.out.strip().splitlines()[-1])
    numbers = {k: v for k, v in result.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert all(math.isfinite(v) for v in numbers.values()), numbers
    assert 0 <= result["p@1"] <= 100, result
    return result


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Small train/test files: a multi-label problem and a multiclass one."""
    folder = tmp_path_factory.mktemp("probe-data")
    made = {}
    for kind, ds in (("multilabel", generate(300, 60, 40, avg_labels=2, avg_nnz=8, seed=0)),
                     ("multiclass", generate(300, 60, 20, multiclass=True, avg_nnz=8, seed=0))):
        train, test = split(ds, 0.25, seed=0)
        made[kind] = (folder / f"{kind}_train.txt", folder / f"{kind}_test.txt")
        write_xc(made[kind][0], train)
        write_xc(made[kind][1], test)
    return made


def _train_args(solver: str, data: dict, *sets: str) -> list[str]:
    train, test = data["multiclass" if solver in MULTICLASS else "multilabel"]
    return ["train", train, "--test", test, "--solver", solver, "--threads", "1", "--json",
            *[a for s in sets for a in ("--set", s)]]


# ---- parameters: every declared parameter of every family ---------------------------------------

def _parameters() -> list[tuple[str, str, param.Parameter]]:
    return [(s.name, k, p) for s in SOLVERS.values() for k, p in s.params.param.objects().items() if k != "name"]


def _param_cases() -> list[tuple[str, str, str, bool]]:
    """(solver, parameter, value typed, refused?) for every parameter: the wrong types, null,
    booleans, each side just outside the bounds, the lowest bound, each choice and a misspelt one."""
    cases = []
    for solver, key, p in _parameters():
        number = isinstance(p, param.Number)
        for text in WRONG_TYPE.values():
            cases.append((solver, key, text, True))
        cases.append((solver, key, "null", not p.allow_None))
        for text in ("true", "false"):
            cases.append((solver, key, text, not isinstance(p, param.Boolean)))
        if number and p.bounds is not None:
            low, high = p.bounds
            if low is not None:
                cases.append((solver, key, json.dumps(low - max(1, abs(low))), True))
                cases.append((solver, key, json.dumps(low), (solver, key) in LOWEST_REFUSED))
            if high is not None:
                cases.append((solver, key, json.dumps(high * 10 + 1), True))
        if isinstance(p, param.Selector):
            cases += [(solver, key, json.dumps(choice), False) for choice in p.objects]
            cases.append((solver, key, json.dumps(f"{p.objects[0]}x"), True))
    return cases


PARAM_CASES = _param_cases()


@pytest.mark.parametrize("solver,key,text,refused", PARAM_CASES,
                         ids=[f"{s}-{k}={t or 'empty'}" for s, k, t, _ in PARAM_CASES])
def test_a_parameter_value_is_refused_in_one_line_or_trains(solver, key, text, refused, data, capsys):
    outcome = run_cli(_train_args(solver, data, f"{key}={text}"), capsys)
    if refused:
        assert_refused(outcome, key)
    else:
        assert_trained(outcome)


def test_the_parameter_matrix_covers_every_parameter_of_every_family():
    """New parameters join the probe by themselves: the cases come from the declarations."""
    covered = {(s, k) for s, k, _, _ in PARAM_CASES}
    assert covered == {(s, k) for s, k, _ in _parameters()}
    assert {s for s, _ in covered} == set(SOLVERS) and len(PARAM_CASES) > 1000


# ---- data files: damaged XC and LIBSVM files, plain, gzip and xz --------------------------------

def _xc_damage() -> dict[str, tuple[Callable[[list[str]], list[str]], bool]]:
    """Damage to an XC file's lines (header first): (change, refused?)."""
    def row(change: Callable[[str], str], at: int = 3) -> Callable[[list[str]], list[str]]:
        return lambda lines: lines[:at] + [change(lines[at])] + lines[at + 1:]

    def header(text: str) -> Callable[[list[str]], list[str]]:
        return lambda lines: [text] + lines[1:]

    n, d, labels = (int(v) for v in _XC_HEADER.split())
    return {
        "empty": (lambda lines: [], True),
        "header-only": (lambda lines: lines[:1], True),
        "header-too-many-rows": (header(f"{n + 5} {d} {labels}"), True),
        "header-too-few-rows": (header(f"{n - 5} {d} {labels}"), True),
        "header-negative": (header(f"-{n} {d} {labels}"), True),
        "header-four-fields": (header(f"{n} {d} {labels} 7"), True),
        "header-text": (header(f"{SECRET} {d} {labels}"), True),
        "header-huge-d": (header(f"{n} {10**15} {labels}"), True),
        "label-out-of-range": (row(lambda s: f"{labels + 3}" + s[s.index(" "):]), True),
        "label-negative": (row(lambda s: "-1" + s[s.index(" "):]), True),
        "label-text": (row(lambda s: SECRET + s[s.index(" "):]), True),
        "label-repeated": (row(lambda s: "1,1" + s[s.index(" "):]), True),
        "feature-out-of-range": (row(lambda s: s + f" {d + 10}:1"), True),
        "feature-negative": (row(lambda s: s + " -4:1"), True),
        "feature-repeated": (row(lambda s: s + " " + s.split()[-1]), True),
        "value-nan": (row(lambda s: s + f" {d - 1}:nan"), True),
        "value-inf": (row(lambda s: s + f" {d - 1}:inf"), True),
        "value-text": (row(lambda s: s + f" {d - 1}:{SECRET}"), True),
        "missing-colon": (row(lambda s: s + f" {d - 1}"), True),
        "nul-byte": (row(lambda s: s + "\0"), True),
        "long-line": (row(lambda s: s + " " + "7" * (64 * 2**20 + 1)), True),
        "blank-line-inside": (lambda lines: lines[:3] + [""] + lines[3:], True),
        "crlf": (lambda lines: [s + "\r" for s in lines], False),
        "trailing-spaces": (lambda lines: [s + "   " for s in lines], False),
        "features-unsorted": (row(lambda s: " ".join([s.split()[0], *reversed(s.split()[1:])])), False),
    }


_XC_HEADER = "300 60 40"


def _libsvm_damage() -> dict[str, tuple[Callable[[list[str]], list[str]], bool]]:
    """Damage to a LIBSVM file's lines (no header; 1-based features): (change, refused?)."""
    def row(change: Callable[[str], str], at: int = 2) -> Callable[[list[str]], list[str]]:
        return lambda lines: lines[:at] + [change(lines[at])] + lines[at + 1:]

    return {
        "empty": (lambda lines: [], True),
        "feature-zero": (row(lambda s: s + " 0:1"), True),
        "feature-negative": (row(lambda s: s + " -3:1"), True),
        "feature-huge": (row(lambda s: s + f" {10**15}:1"), True),
        "feature-repeated": (row(lambda s: s + " " + s.split()[-1]), True),
        "value-nan": (row(lambda s: s + " 59:nan"), True),
        "value-text": (row(lambda s: s + f" 59:{SECRET}"), True),
        "label-text": (row(lambda s: SECRET + s[s.index(" "):]), True),
        "label-huge": (row(lambda s: f"{10**17}" + s[s.index(" "):]), True),
        "label-repeated": (row(lambda s: "1,1" + s[s.index(" "):]), True),
        "missing-colon": (row(lambda s: s + " 59"), True),
        "nul-byte": (row(lambda s: s + "\0"), True),
        "not-utf8": (row(lambda s: s + " \udcff"), True),
        "crlf": (lambda lines: [s + "\r" for s in lines], False),
        "labels-arbitrary": (row(lambda s: "900001" + s[s.index(" "):]), False),
    }


def _write(path: Path, lines: list[str], compression: str) -> Path:
    body = "".join(f"{s}\n" for s in lines).encode("utf-8", "surrogateescape")
    if compression == "gz":
        body, path = gzip.compress(body), path.with_name(path.name + ".gz")
    elif compression == "xz":
        body, path = lzma.compress(body), path.with_name(path.name + ".xz")
    path.write_bytes(body)
    return path


def _file_cases() -> list[tuple[str, str, str, bool]]:
    return [(fmt, kind, compression, refused)
            for fmt, damage in (("xc", _xc_damage()), ("libsvm", _libsvm_damage()))
            for kind, (_, refused) in damage.items() for compression in ("plain", "gz", "xz")
            if not (kind == "long-line" and compression != "plain")]  # 64 MiB once is enough


FILE_CASES = _file_cases()


@pytest.mark.parametrize("fmt,kind,compression,refused", FILE_CASES,
                         ids=[f"{f}-{k}-{c}" for f, k, c, _ in FILE_CASES])
def test_a_damaged_data_file_is_refused_at_its_line_or_read_right(fmt, kind, compression, refused, tmp_path, capsys):
    ds = generate(300, 60, 40, avg_labels=2, avg_nnz=8, seed=0)
    clean = tmp_path / f"clean.{fmt}"
    (write_xc if fmt == "xc" else write_libsvm)(clean, ds)
    lines = clean.read_text().splitlines()
    assert fmt == "libsvm" or lines[0] == _XC_HEADER
    change = (_xc_damage() if fmt == "xc" else _libsvm_damage())[kind][0]
    damaged = _write(tmp_path / f"damaged.{fmt}", change(lines), compression)
    outcome = run_cli(["train", damaged, "--threads", "1", "--json"], capsys)
    if refused:
        assert_refused(outcome, damaged.name)
        return
    result = json.loads(outcome.out.strip().splitlines()[-1]) if outcome.code == 0 else None
    assert result is not None, outcome.err[-2000:]
    assert result["n_train"] == 300 and math.isfinite(result["train_seconds"]), result


def test_a_gzip_or_xz_file_cut_short_is_refused(tmp_path, capsys):
    ds = generate(300, 60, 40, avg_labels=2, avg_nnz=8, seed=0)
    write_xc(tmp_path / "clean.txt", ds)
    body = (tmp_path / "clean.txt").read_bytes()
    for name, packed in (("cut.txt.gz", gzip.compress(body)), ("cut.txt.xz", lzma.compress(body))):
        (tmp_path / name).write_bytes(packed[: len(packed) // 2])
        assert_refused(run_cli(["train", tmp_path / name, "--threads", "1"], capsys), name)


# ---- run specs: hostile fields of a spec given to `xcviz launch` --------------------------------

def _spec_cases(folder: Path) -> dict[str, tuple[dict, str]]:
    """Specs `launch` must refuse before it records a run: (spec, what the error names)."""
    base = {"dataset": "bibtex", "solver": "dismec"}
    return {
        "dataset-missing": ({"solver": "dismec"}, "dataset"),
        "dataset-empty": ({**base, "dataset": ""}, "dataset"),
        "dataset-number": ({**base, "dataset": 7}, "dataset"),
        "dataset-nul": ({**base, "dataset": "bib\0tex"}, "dataset"),
        "dataset-unknown": ({**base, "dataset": "no-such-set"}, "no-such-set"),
        "dataset-a-folder": ({**base, "dataset": str(folder / "a-folder")}, "a-folder"),
        "dataset-dev-zero": ({**base, "dataset": "/dev/zero"}, "/dev/zero"),
        "test-missing-file": ({**base, "test": str(folder / "gone.txt")}, "gone.txt"),
        "solver-unknown": ({**base, "solver": "sgd"}, "sgd"),
        "solver-list": ({**base, "solver": ["dismec"]}, "solver"),
        "name-newline": ({**base, "name": "a\nb"}, "name"),
        "name-rtl-override": ({**base, "name": "a\u202eb"}, "name"),
        "name-too-long": ({**base, "name": "n" * 201}, "name"),
        "name-object": ({**base, "name": {"x": 1}}, "name"),
        "threads-zero": ({**base, "threads": 0}, "threads"),
        "threads-negative": ({**base, "threads": -2}, "threads"),
        "threads-huge": ({**base, "threads": 10**9}, "threads"),
        "threads-text": ({**base, "threads": "two"}, "threads"),
        "threads-float": ({**base, "threads": 1.5}, "threads"),
        "threads-bool": ({**base, "threads": True}, "threads"),
        "params-list": ({**base, "params": [1]}, "params"),
        "params-unknown": ({**base, "params": {"Cee": 1}}, "Cee"),
        "params-out-of-bounds": ({**base, "params": {"C": -1}}, "C"),
        "params-nan": ({**base, "params": {"C": float("nan")}}, "C"),
        "cluster-text": ({**base, "cluster": "everywhere"}, "cluster"),
        "cluster-local-zero": ({**base, "cluster": "local:0"}, "cluster"),
        "cluster-multiclass": ({**base, "solver": "memoir", "cluster": "local:2"}, "cluster"),
        "cluster-dsmlr-async": ({**base, "solver": "dsmlr", "params": {"mode": "async"}, "cluster": "local:2"},
                                "async"),
        "unknown-field": ({**base, "colour": "red"}, "colour"),
    }


SPEC_NAMES = list(_spec_cases(Path("/nonexistent")))


@pytest.mark.parametrize("case", SPEC_NAMES)
def test_a_hostile_spec_is_refused_before_any_run_is_recorded(case, tmp_path, capsys):
    (tmp_path / "a-folder").mkdir()
    spec, where = _spec_cases(tmp_path)[case]
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    home = tmp_path / "home"
    outcome = run_cli(["launch", tmp_path / "spec.json", "--home", home], capsys)
    assert_refused(outcome, where)
    listed = run_cli(["runs", "--home", home, "--json"], capsys)
    assert listed.code != 0 or json.loads(listed.out or "[]") == [], listed
