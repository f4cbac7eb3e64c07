"""Readers, writers, error reporting and the .npz cache of xcviz.data.textio."""
import gzip
import lzma
import math
import os
import re
import stat
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz.data.dataset import Dataset
from xcviz.data.errors import DatasetFormatError
from xcviz.data.textio import (
    detect_format,
    load_cached,
    open_text,
    read_dataset,
    read_libsvm,
    read_xc,
    write_libsvm,
    write_xc,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared data folder not present")

XC_TEXT = "3 5 4\n0,2 0:1 3:0.5\n 1:2.25\n3\n"
LIBSVM_TEXT = "1,3 1:0.5 4:1\n-1 2:3\n 5:1e-3\n"


def write(path: Path, text: str, compress: str = "") -> Path:
    data = text.encode()
    if compress == "gz":
        data = gzip.compress(data)
    elif compress == "xz":
        data = lzma.compress(data)
    path.write_bytes(data)
    return path


def same(a: Dataset, b: Dataset) -> None:
    """Exact equality of both matrices, including shapes and stored values."""
    for m, n in ((a.X, b.X), (a.Y, b.Y)):
        assert m.shape == n.shape
        np.testing.assert_array_equal(m.indptr, n.indptr)
        np.testing.assert_array_equal(m.indices, n.indices)
        np.testing.assert_array_equal(m.data, n.data)


# --- hand-written files ------------------------------------------------------------------------


def test_read_xc_small(tmp_path):
    ds = read_xc(write(tmp_path / "small.txt", XC_TEXT))
    np.testing.assert_array_equal(
        ds.X.toarray(), [[1, 0, 0, 0.5, 0], [0, 2.25, 0, 0, 0], [0, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(ds.Y.toarray(), [[1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 1]])
    assert (ds.name, ds.path) == ("small", str(tmp_path / "small.txt"))
    assert ds.X.dtype == np.float64 and ds.X.has_canonical_format and ds.Y.has_canonical_format


def test_read_xc_tolerates_crlf_trailing_blanks_and_empty_lines(tmp_path):
    text = "3 5 4\r\n0,2 0:1 3:0.5  \r\n\t1:2.25\r\n\n"
    ds = read_xc(write(tmp_path / "crlf.txt", text))
    assert ds.X.nnz == 3 and ds.Y.nnz == 2
    assert ds.label_stats()["rows_without_labels"] == 2


def test_read_libsvm_small(tmp_path):
    ds, label_map = read_libsvm(write(tmp_path / "small.svm", LIBSVM_TEXT))
    assert label_map == {-1: 0, 1: 1, 3: 2}
    np.testing.assert_array_equal(
        ds.X.toarray(), [[0.5, 0, 0, 1, 0], [0, 3, 0, 0, 0], [0, 0, 0, 0, 1e-3]]
    )
    np.testing.assert_array_equal(ds.Y.toarray(), [[0, 1, 1], [1, 0, 0], [0, 0, 0]])


def test_read_libsvm_extends_given_label_map_and_declared_d(tmp_path):
    path = write(tmp_path / "small.svm", LIBSVM_TEXT)
    ds, label_map = read_libsvm(path, n_features=9, label_map={3: 0, 7: 1})
    assert label_map == {3: 0, 7: 1, -1: 2, 1: 3}
    assert ds.X.shape == (3, 9)
    np.testing.assert_array_equal(ds.Y.toarray(), [[1, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 0]])
    with pytest.raises(ValueError, match="label_map"):
        read_libsvm(path, label_map={3: 1})


@pytest.mark.parametrize("suffix", ["txt", "gz", "xz"])
def test_xc_round_trip_compressed(tmp_path, suffix):
    ds = read_xc(write(tmp_path / "small.txt", XC_TEXT))
    out = tmp_path / f"copy.{suffix}"
    write_xc(out, ds)
    if suffix == "txt":
        assert out.read_text() == XC_TEXT
    else:
        assert not out.read_bytes().startswith(b"3 5 4")
    same(read_xc(out), ds)


@pytest.mark.parametrize("suffix", ["svm", "gz", "xz"])
def test_libsvm_round_trip_compressed(tmp_path, suffix):
    ds, label_map = read_libsvm(write(tmp_path / "small.svm", LIBSVM_TEXT))
    values = sorted(label_map, key=label_map.get)
    out = tmp_path / f"copy.{suffix}"
    write_libsvm(out, ds, label_values=values)
    back, back_map = read_libsvm(out, n_features=ds.n_features, label_map=label_map)
    same(back, ds)
    assert back_map == label_map


def test_write_rejects_non_finite_and_bad_label_values(tmp_path):
    ds = Dataset(sp.csr_matrix([[np.nan]]), sp.csr_matrix([[1.0]]))
    with pytest.raises(ValueError, match="NaN"):
        write_xc(tmp_path / "bad.txt", ds)
    ok = Dataset(sp.csr_matrix([[1.0]]), sp.csr_matrix([[1.0, 1.0]]))
    with pytest.raises(ValueError, match="distinct"):
        write_libsvm(tmp_path / "bad.svm", ok, label_values=[5, 5])


def test_integral_values_written_without_decimal_point(tmp_path):
    ds = Dataset(sp.csr_matrix([[1.0, 0.1, -3.0, 1e300]]), sp.csr_matrix([[1.0]]))
    write_xc(tmp_path / "v.txt", ds)
    assert (tmp_path / "v.txt").read_text().splitlines()[1] == "0 0:1 1:0.1 2:-3 3:1e+300"


def test_compression_detected_by_magic_bytes(tmp_path):
    gz_named_txt = write(tmp_path / "data.txt", XC_TEXT, "gz")
    xz_named_gz = write(tmp_path / "data.gz", XC_TEXT, "xz")
    plain_named_xz = write(tmp_path / "data.xz", XC_TEXT)
    for path in (gz_named_txt, xz_named_gz, plain_named_xz):
        with open_text(path) as f:
            assert f.read() == XC_TEXT
        assert read_dataset(path).Y.nnz == 3


def test_read_dataset_detects_format(tmp_path):
    xc = read_dataset(write(tmp_path / "a", XC_TEXT))
    svm = read_dataset(write(tmp_path / "b", LIBSVM_TEXT), n_features=7)
    assert xc.X.shape == (3, 5) and svm.X.shape == (3, 7)
    assert (detect_format(tmp_path / "a"), detect_format(tmp_path / "b")) == ("xc", "libsvm")
    with pytest.raises(ValueError, match="unknown format"):
        read_dataset(tmp_path / "a", format="csv")
    assert read_dataset(tmp_path / "a", n_features=5).n_features == 5
    with pytest.raises(DatasetFormatError, match="header declares D = 5 but 7 features were expected"):
        read_dataset(tmp_path / "a", n_features=7)
    with pytest.raises(ValueError, match="LIBSVM files only"):
        read_dataset(tmp_path / "a", label_map={1: 0})


# --- random round trips ------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def datasets(draw):
    n, d, l = draw(st.integers(0, 6)), draw(st.integers(1, 8)), draw(st.integers(1, 5))
    x_mask = draw(st.lists(st.booleans(), min_size=n * d, max_size=n * d))
    y_mask = draw(st.lists(st.booleans(), min_size=n * l, max_size=n * l))
    values = draw(st.lists(finite, min_size=n * d, max_size=n * d))
    X = np.where(x_mask, values, 0.0).reshape(n, d)
    Y = np.array(y_mask, dtype=float).reshape(n, l)
    return Dataset(sp.csr_matrix(X), sp.csr_matrix(Y))


@settings(max_examples=40, deadline=None)
@given(ds=datasets(), suffix=st.sampled_from(["txt", "gz", "xz"]))
def test_random_xc_round_trip(ds, suffix):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"r.{suffix}"
        write_xc(path, ds)
        same(read_xc(path), ds)


@settings(max_examples=40, deadline=None)
@given(ds=datasets(), suffix=st.sampled_from(["svm", "gz", "xz"]), data=st.data())
def test_random_libsvm_round_trip(ds, suffix, data):
    if ds.n == 0:
        with pytest.raises(ValueError, match="without rows"):
            write_libsvm("unused.svm", ds)
        return
    size = ds.n_labels
    values = data.draw(st.lists(st.integers(-(10**6), 10**6), min_size=size, max_size=size, unique=True))
    label_map = {v: j for j, v in enumerate(values)}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"r.{suffix}"
        write_libsvm(path, ds, label_values=values)
        back, _ = read_libsvm(path, n_features=ds.n_features, label_map=label_map)
        same(back, ds)


UINT = "[0-9]+"
VALUE = r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?"


def reference_xc(lines: list[str], d: int, l: int) -> tuple[np.ndarray, np.ndarray] | int:
    """Dense X, Y of XC body lines by naive token parsing, or the index of the first bad line."""
    X, Y = np.zeros((len(lines), d)), np.zeros((len(lines), l))
    for i, line in enumerate(lines):
        field, rest = re.fullmatch(r"([^ \t]*)(.*)", line.rstrip()).groups()
        labels = field.split(",") if field else []
        if not all(re.fullmatch(UINT, t) and int(t) < l for t in labels) or len(set(labels)) < len(labels):
            return i
        Y[i, [int(t) for t in labels]] = 1
        tokens = [t.partition(":") for t in re.split("[ \t]+", rest.strip(" \t")) if t]
        indices = [int(t[0]) for t in tokens if re.fullmatch(UINT, t[0]) and t[1]]
        values = [t[2] for t in tokens if re.fullmatch(VALUE, t[2])]
        if len(indices) != len(tokens) or len(values) != len(tokens) or len(set(indices)) < len(indices):
            return i
        if any(j >= d for j in indices) or not all(math.isfinite(float(v)) for v in values):
            return i
        X[i, indices] = [float(v) for v in values]
    return X, Y


line_text = st.text(alphabet="0123456789:,. -+eEnaif\t x\u00a0\u0663", max_size=14)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(line_text, min_size=1, max_size=4))
def test_fuzzed_lines_parse_like_reference_or_raise(lines):
    expected = reference_xc(lines, 12, 12)
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder) / "f.txt", f"{len(lines)} 12 12\n" + "".join(f"{line}\n" for line in lines))
        if isinstance(expected, int):
            with pytest.raises(DatasetFormatError) as info:
                read_xc(path)
            assert info.value.line == expected + 2
            assert "\n" not in str(info.value)
        else:
            ds = read_xc(path)
            np.testing.assert_array_equal(ds.X.toarray(), expected[0])
            np.testing.assert_array_equal(ds.Y.toarray(), expected[1])


# --- bad input: one case each ------------------------------------------------------------------

BAD_XC = [
    ("header_missing", "0,1 2:1\n", 1, "header must be three non-negative integers"),
    ("header_two_numbers", "3 5\n", 1, "header must be three"),
    ("header_not_integer", "3 5 x\n", 1, "XC header must be three"),
    ("header_trailing_junk", "1 5 4 junk\n0 1:1\n", 1, "(4 fields found)"),
    ("header_negative", "1 -5 4\n0 1:1\n", 1, "negative number in header"),
    ("fewer_lines_than_n", "3 5 4\n0 1:1\n", 1, "N = 3 rows but the file has 1 data lines"),
    ("more_lines_than_n", "1 5 4\n0 1:1\n1 1:1\n", 1, "N = 1 rows but the file has 2 data lines"),
    ("feature_out_of_range", "2 5 4\n0 1:1\n1 5:1\n", 3, "feature index 5 out of range (D = 5)"),
    ("label_out_of_range", "1 5 4\n0,4 1:1\n", 2, "label index 4 out of range (L = 4)"),
    ("negative_feature", "1 5 4\n0 -1:1\n", 2, "negative feature index -1"),
    ("negative_label", "1 5 4\n-1 1:1\n", 2, "negative label index -1"),
    ("nan_value", "1 5 4\n0 1:nan\n", 2, "non-finite value for feature 1"),
    ("infinite_value", "1 5 4\n0 1:1e999\n", 2, "non-finite value for feature 1"),
    ("non_numeric_value", "1 5 4\n0 1:abc\n", 2, "non-numeric value in feature token 1 of the line (feature 1)"),
    ("non_numeric_index", "1 5 4\n0 x:1\n", 2, "non-numeric feature index in feature token 1"),
    ("non_numeric_label", "1 5 4\n0,b 1:1\n", 2, "non-numeric label (label 2 of the line)"),
    ("token_without_colon", "1 5 4\n0 1:1 3\n", 2, "feature token 2 of the line is not index:value"),
    ("duplicate_feature", "1 5 4\n0 1:1 3:1 1:2\n", 2, "duplicate feature index 1"),
    ("duplicate_label", "1 5 4\n2,0,2 1:1\n", 2, "duplicate label 2"),
    ("trailing_junk_token", "1 5 4\n0 1:1 2:1 junk\n", 2, "feature token 3 of the line is not"),
    ("trailing_junk_in_value", "1 5 4\n0 1:1.5abc\n", 2, "non-numeric value in feature token 1"),
    ("missing_leading_space", "1 5 4\n1:1 2:1\n", 2, "must start with a space"),
    ("empty_label", "1 5 4\n0,,1 2:1\n", 2, "empty label"),
    ("value_with_two_colons", "1 5 4\n0 1:2:3\n", 2, "non-numeric value in feature token 1"),
    ("non_utf8_bytes", "1 5 4\n0 1:\udcff\n", 2, "non-numeric value"),
]


@pytest.mark.parametrize("text,line,phrase", [c[1:] for c in BAD_XC], ids=[c[0] for c in BAD_XC])
def test_bad_xc(tmp_path, text, line, phrase):
    path = tmp_path / "bad.txt"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(DatasetFormatError) as info:
        read_xc(path)
    assert info.value.line == line
    assert phrase in info.value.problem
    assert str(info.value) == f"{path}:{line}: {info.value.problem}"
    assert "\n" not in str(info.value)
    for word in ("junk", "abc", "'x'", "'b'", "2:3"):  # the message never quotes the file
        assert word not in info.value.problem


BAD_LIBSVM = [
    ("index_zero", "1 1:1\n2 0:1\n", None, 2, "feature index 0 out of range (indices are 1-based)"),
    ("index_above_d", "1 4:1 5:1\n", 4, 1, "feature index 5 out of range (D = 4)"),
    ("negative_index", "1 -2:1\n", None, 1, "negative feature index -2"),
    ("non_integer_label", "1.5 1:1\n", None, 1, "non-numeric label (label 1 of the line)"),
    ("duplicate_label", "+1,1 1:1\n", None, 1, "duplicate label 1"),
    ("inf_value", "1 1:-inf\n", None, 1, "non-finite value for feature 1"),
]


@pytest.mark.parametrize("text,d,line,phrase", [c[1:] for c in BAD_LIBSVM], ids=[c[0] for c in BAD_LIBSVM])
def test_bad_libsvm(tmp_path, text, d, line, phrase):
    with pytest.raises(DatasetFormatError) as info:
        read_libsvm(write(tmp_path / "bad.svm", text), n_features=d)
    assert (info.value.line, phrase in info.value.problem) == (line, True)


@pytest.mark.parametrize("reader", [read_xc, read_libsvm, read_dataset])
def test_empty_file(tmp_path, reader):
    with pytest.raises(DatasetFormatError) as info:
        reader(write(tmp_path / "empty.txt", ""))
    assert info.value.line is None and info.value.problem == "empty file"


def test_missing_file(tmp_path):
    with pytest.raises(DatasetFormatError) as info:
        read_dataset(tmp_path / "nope.txt")
    assert info.value.line is None and info.value.problem == "no such file"


@pytest.mark.parametrize("compress,kind", [("gz", "gzip"), ("xz", "xz")])
def test_corrupt_compressed_stream(tmp_path, compress, kind):
    body = "".join(f"{i % 4} {i % 5}:1\n" for i in range(20000))
    good = write(tmp_path / "good", f"20000 5 4\n{body}", compress).read_bytes()
    truncated = write(tmp_path / "truncated", "")
    truncated.write_bytes(good[: len(good) // 2])
    flipped = write(tmp_path / "flipped", "")
    flipped.write_bytes(good[:40] + bytes(b ^ 0xFF for b in good[40:200]) + good[200:])
    for path in (truncated, flipped):
        with pytest.raises(DatasetFormatError) as info:
            read_xc(path)
        assert info.value.problem.startswith(f"corrupt {kind} stream")


def test_error_line_numbers_across_chunks(tmp_path):
    body = ["0 1:1"] * 9000
    body[7000] = "0 1:1 1:2"
    path = write(tmp_path / "long.txt", "9000 5 4\n" + "\n".join(body) + "\n")
    with pytest.raises(DatasetFormatError) as info:
        read_xc(path)
    assert (info.value.line, info.value.problem) == (7002, "duplicate feature index 1")


@pytest.mark.parametrize("first,second", [("0 9:1", "0 1:x"), ("0 1:x", "0 9:1")])
def test_first_bad_line_in_file_order_is_reported(tmp_path, first, second):
    path = write(tmp_path / "two.txt", f"4 5 4\n0 1:1\n{first}\n0 1:1\n{second}\n")
    with pytest.raises(DatasetFormatError) as info:
        read_xc(path, name="x")
    assert info.value.line == 3


def test_long_token_is_shortened_in_message(tmp_path):
    path = write(tmp_path / "long.txt", "1 5 4\n0 1:" + "x" * 5000 + "\n")
    with pytest.raises(DatasetFormatError) as info:
        read_xc(path)
    assert len(str(info.value)) < 200


# --- Dataset -----------------------------------------------------------------------------------


def test_dataset_canonicalises_and_validates():
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3])), shape=(1, 3))
    before = X.data.copy()
    ds = Dataset(X, sp.csr_matrix(np.array([[0, 1]], dtype=np.int32)))
    np.testing.assert_array_equal(ds.X.toarray(), [[2.0, 0.0, 4.0]])
    np.testing.assert_array_equal(X.data, before)
    assert ds.X.has_canonical_format and ds.Y.dtype == np.float64
    assert (ds.n, ds.n_features, ds.n_labels, ds.is_multiclass) == (1, 3, 2, True)
    with pytest.raises(ValueError, match="rows"):
        Dataset(sp.csr_matrix((2, 3)), sp.csr_matrix((3, 2)))
    with pytest.raises(ValueError, match="0/1"):
        Dataset(sp.csr_matrix((1, 3)), sp.csr_matrix([[2.0, 0.0]]))


def test_label_stats_small(tmp_path):
    stats = read_xc(write(tmp_path / "small.txt", XC_TEXT)).label_stats()
    assert stats == {
        "n": 3, "d": 5, "l": 4, "avg_labels": 1.0, "max_labels": 2, "avg_nnz": 1.0,
        "labels_occurring": 3, "avg_points_per_label": 1.0, "rows_without_labels": 1,
    }


# --- cache -------------------------------------------------------------------------------------


@pytest.fixture
def big_file(tmp_path):
    rng = np.random.default_rng(0)
    lines = []
    for _ in range(3000):
        idx = np.sort(rng.choice(2000, 60, replace=False))
        lines.append("1,7 " + " ".join(f"{i}:{v!r}" for i, v in zip(idx.tolist(), rng.random(60).tolist())))
    return write(tmp_path / "big.txt", "3000 2000 10\n" + "\n".join(lines) + "\n")


def test_cache_hit_is_identical_and_faster(big_file, tmp_path):
    cache = tmp_path / "cache"
    start = time.perf_counter()
    parsed = load_cached(big_file, cache_dir=cache)
    parse_time = time.perf_counter() - start
    assert len(list(cache.glob("*.npz"))) == 1
    start = time.perf_counter()
    cached = load_cached(big_file, cache_dir=cache)
    hit_time = time.perf_counter() - start
    same(cached, parsed)
    assert (cached.name, cached.path) == ("big", str(big_file))
    assert hit_time < parse_time


def test_corrupt_cache_is_rewritten(big_file, tmp_path):
    cache = tmp_path / "cache"
    parsed = load_cached(big_file, cache_dir=cache)
    (file,) = cache.glob("*.npz")
    file.write_bytes(b"garbage")
    same(load_cached(big_file, cache_dir=cache), parsed)
    with np.load(file) as z:
        assert "X_data" in z


def test_unwritable_cache_is_skipped(big_file, tmp_path):
    blocker = write(tmp_path / "not_a_folder", "x")
    same(load_cached(big_file, cache_dir=blocker / "cache"), read_xc(big_file))


def test_an_interrupted_cache_write_leaves_no_file_and_a_whole_one_is_private(big_file, tmp_path, monkeypatch):
    cache = tmp_path / "cache"

    def fail_midway(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(np, "savez", fail_midway)
        same(load_cached(big_file, cache_dir=cache), read_xc(big_file))  # the unwritable cache is skipped
    assert list(cache.iterdir()) == []
    load_cached(big_file, cache_dir=cache)
    (file,) = cache.iterdir()
    assert file.suffix == ".npz" and stat.S_IMODE(file.stat().st_mode) == 0o600


def test_cache_follows_env_and_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("XCVIZ_CACHE", str(tmp_path / "env_cache"))
    path = write(tmp_path / "small.txt", XC_TEXT)
    assert load_cached(path).X.nnz == 3
    assert len(list((tmp_path / "env_cache").glob("*.npz"))) == 1
    write(path, XC_TEXT.replace("3:0.5", "3:0.5 4:1"))
    os.utime(path, ns=(0, 10**18))
    assert load_cached(path).X.nnz == 4


# --- real files --------------------------------------------------------------------------------


@needs_shared
def test_bibtex_train():
    stats = read_dataset(SHARED / "bibtex" / "bibtex_train.txt").label_stats()
    assert (stats["n"], stats["d"], stats["l"], stats["max_labels"]) == (4880, 1836, 159, 28)
    assert round(stats["avg_labels"], 4) == 2.3803
    assert round(stats["avg_nnz"], 2) == 68.49


@needs_shared
def test_delicious_train():
    stats = read_xc(SHARED / "delicious" / "delicious_train.txt").label_stats()
    assert (stats["n"], stats["d"], stats["l"], stats["rows_without_labels"]) == (12920, 500, 983, 10)
    assert round(stats["avg_labels"], 4) == 19.0471


@needs_shared
def test_sector_heldout_libsvm():
    ds, label_map = read_libsvm(SHARED / "sector_pdsparse_partial" / "sector.heldout.gz", n_features=55197)
    assert (ds.n, ds.n_features, ds.n_labels) == (865, 55197, 105)
    assert ds.is_multiclass and sorted(label_map) == list(range(1, 106))
    norms = np.sqrt(np.asarray(ds.X.multiply(ds.X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0, atol=1e-4)
