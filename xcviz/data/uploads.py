"""A data file a user hands over (the dashboard's upload), kept as a training or test file of a data
folder: named safely, written whole, read as the command line reads it, or refused.

The name comes from the file's own name, reduced to letters, digits, `.`, `_` and `-` (no folder
part, at most STEM_CHARS characters, "upload" if nothing is left), as `STEM_train.txt` (or
`_test.txt`), with `.gz` or `.xz` when the content is compressed (told by its magic bytes, not its
name). A name already in the folder is never overwritten: the stem gets `-2`, `-3`, ... (a test file
pairs with the training file of its exact stem instead, which must exist and have no test file yet).
The bytes are written to a temporary file in the folder first and linked to the final name, which
fails rather than replace a file that appeared meanwhile; the file is then read with
`registry.load_files`, as `xcviz train` reads it, and removed again if that fails, the error naming
the file as the user named it (never quoting its content, as every reader's errors do not)."""
from __future__ import annotations

import glob
import os
import re
import tempfile
from pathlib import Path, PurePosixPath, PureWindowsPath

from .._util.text import printable
from .errors import DatasetFormatError
from .registry import load_files

MAX_UPLOAD_MB = 50  # larger files go into a data folder by hand, or through the command line
STEM_CHARS = 40
_GZIP, _XZ = b"\x1f\x8b", b"\xfd7zXZ\x00"
_SUFFIXES = re.compile(r"(_(train|test))?(\.(txt|svm|libsvm|xc|dat|gz|xz))*$", re.IGNORECASE)


class UploadRefused(ValueError):
    """An upload the data folder does not take, and why."""


def safe_stem(filename: str) -> str:
    """The part of a user's file name a data set may be named by: no folder part (either slash),
    no `_train.txt`-like ending, only letters, digits, `.`, `_`, `-` (others become `-`), no
    leading dot or dash, at most STEM_CHARS characters; "upload" if nothing is left."""
    name = PureWindowsPath(PurePosixPath(filename).name).name
    name = _SUFFIXES.sub("", name)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).lstrip(".-")[:STEM_CHARS].rstrip(".-")
    return name or "upload"


def _compression(data: bytes) -> str:
    return ".gz" if data.startswith(_GZIP) else ".xz" if data.startswith(_XZ) else ""


def _final_name(folder: Path, stem: str, split: str) -> tuple[str, Path | None]:
    """(the stem to use, the training file a test file pairs with, or None for a training file)."""
    if split == "test":
        trains = sorted(folder.glob(f"{glob.escape(stem)}_train.txt*"))
        if not trains:
            raise UploadRefused(f"a test file pairs with a training file of the same name: upload "
                                f"{stem}_train.txt first (or name this file after the training file you uploaded)")
        if list(folder.glob(f"{glob.escape(stem)}_test.txt*")):
            raise UploadRefused(f"{stem} has a test file already")
        return stem, trains[0]
    taken = {p.name.partition("_train.txt")[0] for p in folder.glob("*_train.txt*")}
    if stem not in taken:
        return stem, None
    k = 2
    while f"{stem}-{k}" in taken:
        k += 1
    return f"{stem}-{k}", None


def save_upload(data: bytes, filename: str, folder: str | os.PathLike, split: str = "train") -> Path:
    """Keep an uploaded file in `folder` as a training (or test) file; returns its path, or raises
    UploadRefused / DatasetFormatError (located, naming the file as uploaded)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    if len(data) > MAX_UPLOAD_MB * 2**20:
        raise UploadRefused(f"the file is larger than {MAX_UPLOAD_MB} MB: copy it into a data folder, or train "
                            "it with `xcviz train FILE`")
    if not data.strip():
        raise UploadRefused("the file is empty")
    folder = Path(folder)
    stem, train = _final_name(folder, safe_stem(filename), split)
    final = folder / f"{stem}_{split}.txt{_compression(data)}"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".upload-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, final)  # never over a file that appeared meanwhile
        except FileExistsError:
            raise UploadRefused(f"{final.name} appeared in the data folder meanwhile: upload again") from None
    finally:
        os.unlink(tmp)
    try:
        load_files(train if train is not None else final, final if train is not None else None)
    except DatasetFormatError as exc:
        final.unlink(missing_ok=True)
        shown = printable(PureWindowsPath(PurePosixPath(filename).name).name[:STEM_CHARS * 2])
        where = f"{shown}:{exc.line}" if exc.line is not None and Path(exc.path) == final else shown
        raise DatasetFormatError(where, None, exc.problem) from None
    except BaseException:
        final.unlink(missing_ok=True)
        raise
    return final
