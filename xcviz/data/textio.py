"""Read and write XC-repository and LIBSVM text files, plus an .npz cache of parsed files.

Parsing has two paths. The fast path checks each line with one regular expression and converts a
whole chunk of lines with a single `np.fromstring`; range, finiteness and duplicate checks are then
vectorised. Only when a line is known to be bad does the slow path walk its tokens one by one to
name the exact problem, so every error carries file, line and the problem; never the file's text
(a data file may be something else, such as /etc/passwd behind a link, and errors reach web pages).
Sizes are refused before anything is allocated for them: header values and feature indices beyond
`max_size()`, lines longer than MAX_LINE characters, files that are not regular files.
"""
import contextlib
import gzip
import hashlib
import io
import lzma
import math
import os
import re
import zipfile
import zlib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Iterable, Sequence, TextIO

import numpy as np
import scipy.sparse as sp

from xcviz._util.atomic_write import write_atomic
from xcviz.data.dataset import Dataset
from xcviz.data.errors import DatasetFormatError
from xcviz._util.regular_file import NotARegularFile, open_regular

_GZIP_MAGIC = b"\x1f\x8b"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_CHUNK_LINES = 4096
_XZ_READ = 2**16  # compressed bytes read at a time
_MAX_EXACT = 2**53  # integers from here on are not exact in float64, the fast path's number type
_MAX_DIGITS = 19  # a longer index (leading zeros aside) is out of every range: refused by its length, not echoed
MAX_LINE = 64 * 2**20  # characters in one line: far beyond any real row, and a bound on /dev/zero-like input

_VALUE = r"[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|(?i:nan|inf(?:inity)?))"
_FEATURES = rf"((?:[ \t]+[0-9]+:{_VALUE})*)"
_XC_LINE = re.compile(rf"([0-9]+(?:,[0-9]+)*)?{_FEATURES}")
_LIBSVM_LINE = re.compile(rf"([-+]?[0-9]+(?:,[-+]?[0-9]+)*)?{_FEATURES}")
_VALUE_RE = re.compile(_VALUE)
_UINT = re.compile(r"[0-9]+")
_INT = re.compile(r"[-+]?[0-9]+")
_NEGATIVE = re.compile(r"-[0-9]+")
_LABEL_FIELD = re.compile(r"([^ \t]*)(.*)", re.DOTALL)
_BLANKS = re.compile(r"[ \t]+")
_HEADER = re.compile(r"[ \t]*([0-9]+)[ \t]+([0-9]+)[ \t]+([0-9]+)")
_HEADER_LIKE = re.compile(r"[ \t]*([-+]?[0-9]+)[ \t]+([-+]?[0-9]+)[ \t]+([-+]?[0-9]+)")


def max_size() -> int:
    """The largest D or L xcviz accepts on this machine: a dense float64 row of that many entries
    (what a solver allocates per label or per row) takes at most 1/32 of the physical memory, and
    indices fit the kernels' 32-bit unsigned type."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = 2**36
    return int(min(2**32 - 1, memory // 32 // 8 * 8))


class _CheckedReader(io.RawIOBase):
    """Raw byte stream that reports I/O and decompression failures as DatasetFormatError."""

    def __init__(self, streams: list, path: str, what: str) -> None:
        super().__init__()
        self._streams = streams
        self._path = path
        self._what = what

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            return self._streams[0].readinto(buffer)
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise DatasetFormatError(self._path, None, f"{self._what} ({detail})") from exc

    def close(self) -> None:
        if not self.closed:
            for stream in self._streams:
                stream.close()
        super().close()


class _XzStream(io.RawIOBase):
    """xz decompression that refuses what `lzma.LZMAFile` skips in silence: bytes after the last
    stream that are neither stream padding (NUL bytes) nor another whole xz stream. Such a tail is
    damage or something appended, and its rows would be lost without a word. Raises LZMAError or
    EOFError, which `_CheckedReader` reports with the file's name."""

    def __init__(self, raw) -> None:
        super().__init__()
        self._raw = raw
        self._decompressor = lzma.LZMADecompressor(lzma.FORMAT_XZ)
        self._pending = b""  # compressed bytes read but not yet given to the decompressor
        self._tail = False  # whether the current stream follows an ended one and has given nothing yet

    def readable(self) -> bool:
        return True

    def _next_stream(self) -> bool:
        """After a stream's end: start the next one; False at the end of the file (padding only)."""
        rest = self._decompressor.unused_data.lstrip(b"\0")
        while not rest:
            more = self._raw.read(_XZ_READ)
            if not more:
                return False
            rest = more.lstrip(b"\0")
        self._decompressor = lzma.LZMADecompressor(lzma.FORMAT_XZ)
        self._pending, self._tail = rest, True
        return True

    def _decompress(self, chunk: bytes, size: int) -> bytes:
        try:
            out = self._decompressor.decompress(chunk, max_length=size)
        except lzma.LZMAError:
            if self._tail:
                raise lzma.LZMAError("bytes after the end of the xz stream") from None
            raise
        self._tail = self._tail and not out
        return out

    def readinto(self, buffer) -> int:
        while True:
            if self._decompressor.eof and not self._next_stream():
                return 0
            chunk, self._pending = self._pending, b""
            if not chunk and self._decompressor.needs_input:
                chunk = self._raw.read(_XZ_READ)
                if not chunk:
                    raise EOFError("bytes after the end of the xz stream" if self._tail
                                   else "the file ends inside an xz stream")
            out = self._decompress(chunk, len(buffer))
            if out:
                buffer[: len(out)] = out
                return len(out)


def open_text(path: str | os.PathLike) -> TextIO:
    """Open a text file for reading, decompressing gzip or xz detected by their magic bytes.

    Lines end at '\\n' only, so line numbers are physical line numbers; undecodable bytes become
    U+FFFD and are then reported as bad tokens by the parsers instead of crashing them.
    """
    shown = os.fspath(path)
    try:
        raw = open_regular(path)
    except FileNotFoundError:
        raise DatasetFormatError(shown, None, "no such file") from None
    except NotARegularFile as exc:
        raise DatasetFormatError(shown, None, exc.strerror) from None
    except OSError as exc:
        raise DatasetFormatError(shown, None, f"cannot open ({exc.strerror or exc})") from None
    try:
        magic = raw.peek(len(_XZ_MAGIC))[: len(_XZ_MAGIC)]
    except OSError as exc:
        raw.close()
        raise DatasetFormatError(shown, None, f"cannot read ({exc.strerror or exc})") from None
    if magic.startswith(_GZIP_MAGIC):
        reader = _CheckedReader([gzip.GzipFile(fileobj=raw), raw], shown, "corrupt gzip stream")
    elif magic.startswith(_XZ_MAGIC):
        reader = _CheckedReader([_XzStream(raw), raw], shown, "corrupt xz stream")
    else:
        reader = _CheckedReader([raw], shown, "read error")
    # utf-8-sig: a byte order mark at the start (written by some editors) is skipped
    return io.TextIOWrapper(io.BufferedReader(reader), encoding="utf-8-sig", errors="replace", newline="\n")


def _lines_of(path: str, f: TextIO, first_line: int) -> Iterable[str]:
    """The lines of `f`, refusing one longer than MAX_LINE before reading all of it."""
    line_no = first_line
    while True:
        line = f.readline(MAX_LINE)
        if not line:
            return
        if len(line) == MAX_LINE and not line.endswith("\n"):
            raise DatasetFormatError(path, line_no, f"line longer than {MAX_LINE} characters")
        yield line
        line_no += 1


def _open_write(path: str | os.PathLike) -> TextIO:
    """Open a text file for writing, compressing when the name ends in .gz or .xz."""
    suffix = os.fspath(path).lower()
    if suffix.endswith(".gz"):
        return gzip.open(path, "wt", encoding="ascii", newline="\n", compresslevel=6)
    if suffix.endswith(".xz"):
        return lzma.open(path, "wt", encoding="ascii", newline="\n")
    return open(path, "w", encoding="ascii", newline="\n")


def _default_name(path: str | os.PathLike) -> str:
    """Dataset name from a file name: without a compression suffix and without '.txt'."""
    name = Path(path).name
    for suffix in (".gz", ".xz", ".txt"):
        name = name.removesuffix(suffix)
    return name


@dataclass(frozen=True)
class _Format:
    """What a body line may contain: XC (0-based, bounded) or LIBSVM (1-based features)."""

    line_re: re.Pattern
    label_re: re.Pattern
    base: int
    n_features: int | None
    n_labels: int | None


@dataclass
class _Body:
    """Parsed body lines: per-row sorted feature indices/values and labels, as flat arrays."""

    indices: np.ndarray
    data: np.ndarray
    feature_counts: np.ndarray
    labels: np.ndarray
    label_counts: np.ndarray

    @property
    def n_rows(self) -> int:
        return len(self.feature_counts)


def _too_many_digits(number: str) -> bool:
    """Whether an integer token has more than _MAX_DIGITS digits, its sign and leading zeros aside:
    refused by its length, before int() parses it (or Python's 4,300-digit limit refuses it)."""
    return len(number.lstrip("+-").lstrip("0")) > _MAX_DIGITS


def _label_problem(field: str, fmt: _Format) -> str | None:
    """First problem in the comma-separated label field of a line, if any."""
    if not field:
        return None
    if ":" in field:
        return "label field contains ':' (a line without labels must start with a space)"
    seen = set()
    for k, token in enumerate(field.split(","), 1):
        if not token:
            return f"empty label (label {k} of the line)"
        if not fmt.label_re.fullmatch(token):
            if _NEGATIVE.fullmatch(token):
                return f"negative label index {token}"
            return f"non-numeric label (label {k} of the line)"
        if _too_many_digits(token):
            return f"label index too large (label {k} of the line has {len(token)} digits)"
        label = int(token)
        if fmt.n_labels is not None and label >= fmt.n_labels:
            return f"label index {label} out of range (L = {fmt.n_labels})"
        if abs(label) >= _MAX_EXACT:
            return f"label {label} too large"
        if label in seen:
            return f"duplicate label {label}"
        seen.add(label)
    return None


def _feature_problem(text: str, fmt: _Format) -> str | None:
    """First problem among the index:value tokens of a line, if any."""
    seen = set()
    stripped = text.strip(" \t")
    for k, token in enumerate(_BLANKS.split(stripped) if stripped else [], 1):
        index_text, colon, value_text = token.partition(":")
        where = f"feature token {k} of the line"
        if not colon:
            return f"{where} is not index:value"
        if not _UINT.fullmatch(index_text):
            if _NEGATIVE.fullmatch(index_text):
                return f"negative feature index {index_text}"
            return f"non-numeric feature index in {where}"
        if _too_many_digits(index_text):
            return f"feature index too large ({where} has {len(index_text)} digits)"
        index = int(index_text)
        if index < fmt.base:
            return f"feature index {index} out of range (indices are {fmt.base}-based)"
        if fmt.n_features is not None and index - fmt.base >= fmt.n_features:
            return f"feature index {index} out of range (D = {fmt.n_features})"
        if index - fmt.base >= max_size():
            return f"feature index {index} too large (at most {max_size()} features on this machine)"
        if not _VALUE_RE.fullmatch(value_text):
            return f"non-numeric value in {where} (feature {index})"
        if not math.isfinite(float(value_text)):
            return f"non-finite value for feature {index}"
        if index in seen:
            return f"duplicate feature index {index}"
        seen.add(index)
    return None


def _diagnose(path: str, line_no: int, line: str, fmt: _Format) -> DatasetFormatError:
    """Slow path: the precise error for a line that failed a fast check."""
    field, rest = _LABEL_FIELD.fullmatch(line).groups()
    problem = _label_problem(field, fmt) or _feature_problem(rest, fmt) or "malformed line"
    return DatasetFormatError(path, line_no, problem)


def _sorted_within_rows(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Order that sorts values inside each row, the row of each entry, and rows holding a repeat."""
    rows = np.repeat(np.arange(len(counts)), counts)
    order = np.lexsort((values, rows))
    ordered = values[order]
    repeated = (ordered[1:] == ordered[:-1]) & (rows[1:] == rows[:-1])
    return order, rows, rows[1:][repeated]


def _parse_chunk(path: str, first_line: int, lines: list[str], fmt: _Format) -> _Body:
    """Fast path over a chunk of (right-stripped) lines; raises at the first bad line."""
    label_texts, feature_texts = [], []
    for offset, line in enumerate(lines):
        match = fmt.line_re.fullmatch(line)
        if match is None:
            _parse_chunk(path, first_line, lines[:offset], fmt)
            raise _diagnose(path, first_line + offset, line, fmt)
        label_texts.append(match.group(1) or "")
        feature_texts.append(match.group(2))
    label_counts = np.array([t.count(",") + 1 if t else 0 for t in label_texts], dtype=np.int64)
    feature_counts = np.array([t.count(":") for t in feature_texts], dtype=np.int64)
    labels = np.fromstring(",".join(filter(None, label_texts)), sep=",")
    pairs = np.fromstring(" ".join(filter(None, feature_texts)).replace(":", " "), sep=" ")
    assert pairs.size == 2 * feature_counts.sum() and labels.size == label_counts.sum()
    raw_indices, data = pairs[0::2], pairs[1::2]
    indices = raw_indices - fmt.base

    bad = ~np.isfinite(data) | (indices < 0) | (indices >= max_size())
    if fmt.n_features is not None:
        bad |= indices >= fmt.n_features
    label_bad = np.abs(labels) >= _MAX_EXACT
    if fmt.n_labels is not None:
        label_bad |= labels >= fmt.n_labels
    order, rows, repeated = _sorted_within_rows(indices, feature_counts)
    label_order, label_rows, label_repeated = _sorted_within_rows(labels, label_counts)
    bad_rows = np.concatenate([rows[bad], repeated, label_rows[label_bad], label_repeated])
    if bad_rows.size:
        row = int(bad_rows.min())
        raise _diagnose(path, first_line + row, lines[row], fmt)
    return _Body(indices[order].astype(np.int64), data[order], feature_counts, labels[label_order], label_counts)


def _read_body(path: str, lines: TextIO, first_line: int, fmt: _Format) -> _Body:
    """Parse all remaining lines in chunks, so memory stays close to the size of the result."""
    parts, chunk, line_no = [], [], first_line
    for raw in _lines_of(path, lines, first_line):
        chunk.append(raw.rstrip())
        if len(chunk) == _CHUNK_LINES:
            parts.append(_parse_chunk(path, line_no, chunk, fmt))
            line_no += len(chunk)
            chunk = []
    parts.append(_parse_chunk(path, line_no, chunk, fmt))
    return _Body(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(_Body)))


def _csr(indices: np.ndarray, counts: np.ndarray, data: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """CSR matrix from flat row-major entries and the number of entries per row."""
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return sp.csr_matrix((data, indices, indptr), shape=shape)


def _parse_header(path: str, line: str) -> tuple[int, int, int]:
    """N, D, L from the XC header line; sizes beyond `max_size()` are refused here, before
    anything is allocated for them."""
    text = line.rstrip()
    match = _HEADER.fullmatch(text)
    if match is None:
        if _HEADER_LIKE.fullmatch(text):
            raise DatasetFormatError(path, 1, "negative number in header 'N D L' (XC format)")
        problem = f"XC header must be three non-negative integers 'N D L' ({len(text.split())} fields found)"
        raise DatasetFormatError(path, 1, problem)
    for what, digits in zip("NDL", match.groups()):
        if _too_many_digits(digits):
            raise DatasetFormatError(path, 1, f"XC header's {what} has {len(digits)} digits, more than this machine "
                                     f"can train (at most {max_size()})")
    n, d, l = (int(g) for g in match.groups())
    for what, value in (("N", n), ("D", d), ("L", l)):
        if value > max_size():
            raise DatasetFormatError(path, 1, f"XC header declares {what} = {value}, more than this machine can "
                                     f"train (at most {max_size()})")
    return n, d, l


def read_xc(path: str | os.PathLike, *, name: str | None = None) -> Dataset:
    """Read an Extreme Classification Repository file: header 'N D L', then N lines of
    'l1,l2,... f:v f:v ...' with 0-based labels and features."""
    shown = os.fspath(path)
    with open_text(path) as f:
        header = f.readline(MAX_LINE)
        if not header:
            raise DatasetFormatError(shown, None, "empty file")
        n, d, l = _parse_header(shown, header)
        body = _read_body(shown, f, 2, _Format(_XC_LINE, _UINT, 0, d, l))
    if body.n_rows != n:
        problem = f"header declares N = {n} rows but the file has {body.n_rows} data lines"
        raise DatasetFormatError(shown, 1, problem)
    X = _csr(body.indices, body.feature_counts, body.data, (n, d))
    Y = _csr(body.labels.astype(np.int64), body.label_counts, np.ones(body.labels.size), (n, l))
    return Dataset(X, Y, name=_default_name(path) if name is None else name, path=shown)


def _checked_label_map(label_map: dict | None) -> dict[int, int]:
    """A copy of `label_map` with int keys, after checking it fills columns 0..len-1."""
    mapping = {int(k): int(v) for k, v in (label_map or {}).items()}
    if sorted(mapping.values()) != list(range(len(mapping))):
        raise ValueError("label_map must map labels to the columns 0..len(label_map)-1, each used once")
    return mapping


def read_libsvm(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    label_map: dict[int, int] | None = None,
    name: str | None = None,
) -> tuple[Dataset, dict[int, int]]:
    """Read a LIBSVM multi-label/multi-class file: 'l1,l2 idx:val ...' with 1-based features.

    Labels are arbitrary integers mapped to columns by `label_map`, extended with the file's new
    labels in numeric order. Returns the dataset and the final label map. D is `n_features` when
    given (larger indices are errors), else the largest index in the file.
    """
    shown = os.fspath(path)
    if n_features is not None:
        if int(n_features) != n_features or n_features < 0:
            raise ValueError(f"n_features must be a non-negative integer, got {n_features!r}")
        n_features = int(n_features)
    mapping = _checked_label_map(label_map)
    with open_text(path) as f:
        body = _read_body(shown, f, 1, _Format(_LIBSVM_LINE, _INT, 1, n_features, None))
    if body.n_rows == 0:
        raise DatasetFormatError(shown, None, "empty file")
    labels = body.labels.astype(np.int64)
    for label in np.unique(labels).tolist():
        mapping.setdefault(label, len(mapping))
    keys = np.array(sorted(mapping), dtype=np.int64)
    columns = np.array([mapping[k] for k in keys.tolist()], dtype=np.int64)
    label_columns = columns[np.searchsorted(keys, labels)]
    d = n_features if n_features is not None else int(body.indices.max(initial=-1)) + 1
    X = _csr(body.indices, body.feature_counts, body.data, (body.n_rows, d))
    Y = _csr(label_columns, body.label_counts, np.ones(labels.size), (body.n_rows, len(mapping)))
    return Dataset(X, Y, name=_default_name(path) if name is None else name, path=shown), mapping


def _format_value(value: float) -> str:
    """Shortest text that reads back as exactly `value`; integral values without '.0'."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _lines(ds: Dataset, base: int, label_texts: Sequence[str]) -> Iterable[str]:
    """Body lines of `ds`: labels by their texts, features shifted to `base`."""
    if not np.all(np.isfinite(ds.X.data)):
        raise ValueError("X contains NaN or infinite values, which the text formats cannot hold")
    tokens = [f"{i}:{_format_value(v)}" for i, v in zip((ds.X.indices + base).tolist(), ds.X.data.tolist())]
    labels = [label_texts[j] for j in ds.Y.indices.tolist()]
    x_ptr, y_ptr = ds.X.indptr.tolist(), ds.Y.indptr.tolist()
    for i in range(ds.n):
        label_part = ",".join(labels[y_ptr[i] : y_ptr[i + 1]])
        feature_part = " ".join(tokens[x_ptr[i] : x_ptr[i + 1]])
        yield f"{label_part} {feature_part}\n" if feature_part else f"{label_part}\n"


def write_xc(path: str | os.PathLike, ds: Dataset) -> None:
    """Write `ds` in the XC format (gzip/xz when the name ends in .gz/.xz); values round-trip exactly."""
    label_texts = [str(j) for j in range(ds.n_labels)]
    lines = _lines(ds, 0, label_texts)
    with _open_write(path) as f:
        f.write(f"{ds.n} {ds.n_features} {ds.n_labels}\n")
        f.writelines(lines)


def write_libsvm(path: str | os.PathLike, ds: Dataset, label_values: Sequence[int] | None = None) -> None:
    """Write `ds` in LIBSVM format with 1-based features; column j is written as label_values[j]
    (default j). Read it back with n_features=ds.n_features and the matching label_map.
    A dataset without rows is refused: its empty file would not read back.
    """
    if ds.n == 0:
        raise ValueError("a LIBSVM file cannot hold a dataset without rows")
    values = list(range(ds.n_labels)) if label_values is None else [int(v) for v in label_values]
    if len(values) != ds.n_labels or len(set(values)) != len(values):
        raise ValueError(f"label_values must hold {ds.n_labels} distinct integers")
    lines = _lines(ds, 1, [str(v) for v in values])
    with _open_write(path) as f:
        f.writelines(lines)


def detect_format(path: str | os.PathLike) -> str:
    """Return "xc" when the first line is an XC header, else "libsvm". A first line of two or more
    fields none of which is index:value cannot be LIBSVM: it is taken as a (malformed) XC header,
    so that its error speaks of the header."""
    with open_text(path) as f:
        first = f.readline(MAX_LINE)
    if not first:
        raise DatasetFormatError(os.fspath(path), None, "empty file")
    fields = first.split()
    return "xc" if len(fields) >= 2 and not any(":" in t for t in fields) else "libsvm"


def read_dataset(
    path: str | os.PathLike,
    *,
    format: str = "auto",
    name: str | None = None,
    n_features: int | None = None,
    label_map: dict[int, int] | None = None,
) -> Dataset:
    """Read an XC or LIBSVM file; "auto" picks XC when the first line is three integers.

    `n_features` is the declared D: for LIBSVM see `read_libsvm`; an XC header must agree with it.
    `label_map` applies to LIBSVM only.
    """
    if format == "auto":
        format = detect_format(path)
    if format == "xc":
        if label_map is not None:
            raise ValueError("label_map applies to LIBSVM files only")
        ds = read_xc(path, name=name)
        if n_features is not None and ds.n_features != n_features:
            raise DatasetFormatError(
                os.fspath(path), 1, f"header declares D = {ds.n_features} but {n_features} features were expected"
            )
        return ds
    if format == "libsvm":
        return read_libsvm(path, n_features=n_features, label_map=label_map, name=name)[0]
    raise ValueError(f"unknown format {format!r} (expected 'auto', 'xc' or 'libsvm')")


def _cache_file(path: str | os.PathLike, format: str, cache_dir: str | os.PathLike | None, kw: dict) -> Path:
    """Cache file for this version of the file (absolute path, size, mtime) read this way."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DatasetFormatError(os.fspath(path), None, "no such file") from None
    except OSError as exc:
        raise DatasetFormatError(os.fspath(path), None, f"cannot open ({exc.strerror or exc})") from None
    folder = cache_dir or os.environ.get("XCVIZ_CACHE") or Path.home() / ".cache" / "xcviz"
    key = repr((os.path.abspath(path), st.st_size, st.st_mtime_ns, format, sorted(kw.items())))
    return Path(folder) / f"{hashlib.sha1(key.encode()).hexdigest()}.npz"


def _load_cache(file: Path, path: str | os.PathLike, name: str) -> Dataset | None:
    """The cached dataset, or None when the cache is missing or unusable."""
    try:
        with np.load(file, allow_pickle=False) as z:
            X, Y = (
                sp.csr_matrix((z[f"{m}_data"], z[f"{m}_indices"], z[f"{m}_indptr"]), shape=tuple(z[f"{m}_shape"]))
                for m in "XY"
            )
        X.check_format(full_check=True)
        Y.check_format(full_check=True)
        return Dataset(X, Y, name=name, path=os.fspath(path))
    except (OSError, EOFError, ValueError, TypeError, KeyError, zipfile.BadZipFile):
        return None


def _store_cache(file: Path, ds: Dataset) -> None:
    """Write the cache whole or not at all (xcviz._util.atomic_write); an unwritable cache is skipped."""
    arrays = {f"{m}_{a}": getattr(getattr(ds, m), a) for m in "XY" for a in ("data", "indices", "indptr")}
    arrays.update(X_shape=np.array(ds.X.shape), Y_shape=np.array(ds.Y.shape))
    with contextlib.suppress(OSError):
        file.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(file, lambda out: np.savez(out, **arrays))


def load_cached(
    path: str | os.PathLike, *, format: str = "auto", cache_dir: str | os.PathLike | None = None, **kw
) -> Dataset:
    """`read_dataset` through an .npz cache keyed by path, size, mtime, format and `kw`.

    The cache folder is `cache_dir`, else $XCVIZ_CACHE, else ~/.cache/xcviz. A corrupt cache file is
    ignored and rewritten.
    """
    file = _cache_file(path, format, cache_dir, kw)
    name = kw["name"] if kw.get("name") is not None else _default_name(path)
    cached = _load_cache(file, path, name)
    if cached is not None:
        return cached
    ds = read_dataset(path, format=format, **kw)
    _store_cache(file, ds)
    return ds
