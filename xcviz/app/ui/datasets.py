"""The data sets a page may offer: the bundled ones and the training files in the configured data
folders, and nothing outside them (a path that leads out of the folders, by `..` or a link, is
refused). A symbolic link in a folder is followed when its target is inside one of the folders, and
listed as refused, with the reason, when it is not. A training file `NAME_train.txt*` is paired
with `NAME_test.txt*` beside it if present. A folder written by `xcviz shard` (a `manifest.json`
inside) is offered too, by its name; its parts are confined one by one at launch (runs.inputs)."""
from __future__ import annotations

from pathlib import Path

from ...data.registry import bundled
from ...data.shards import MANIFEST, is_sharded
from ..._util.text import printable


class DatasetRefused(ValueError):
    """A data set the page may not use."""


def _inside(path: Path, folders: list[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(folder.resolve()) for folder in folders)


def dataset_choices(data_dirs: list[str | Path]) -> dict[str, str]:
    """Label -> value of every data set the page offers: bundled names, then each folder's
    training files (label: the file name, value: its path)."""
    folders = [Path(d) for d in data_dirs]
    choices = {name: name for name in bundled()}
    for folder in folders:
        for path in sorted(folder.glob("*_train.txt*")):
            if path.is_file() and _inside(path, folders):
                choices[printable(path.name)] = str(path)
        for manifest in sorted(folder.glob(f"*/{MANIFEST}")):
            if manifest.is_file() and _inside(manifest, folders):
                choices[f"{printable(manifest.parent.name)}/ (sharded)"] = str(manifest.parent)
    return choices


def refused_datasets(data_dirs: list[str | Path]) -> dict[str, str]:
    """Training files of the folders the page does not offer: file name -> why (for the user to see)."""
    folders = [Path(d) for d in data_dirs]
    refused = {}
    for folder in folders:
        for path in sorted(folder.glob("*_train.txt*")):
            if not _inside(path, folders):
                refused[printable(path.name)] = "a link to a file outside the data folders"
            elif not path.is_file():
                refused[printable(path.name)] = "not a readable file (a broken link or a folder)"
    return refused


def checked_dataset(value: str, data_dirs: list[str | Path]) -> tuple[str, str | None]:
    """(training file or bundled name, test file or None) for a dataset the page offers, or
    DatasetRefused naming the problem."""
    if value in bundled():
        return value, None
    folders = [Path(d) for d in data_dirs]
    path = Path(value)
    if not folders or not _inside(path, folders):
        raise DatasetRefused(f"data set {value!r} is outside the data folders this server was started with")
    if is_sharded(path):
        return str(path), None
    if not path.is_file():
        raise DatasetRefused(f"data set {value!r}: no such file")
    stem, _, suffix = path.name.partition("_train.txt")
    test = path.with_name(f"{stem}_test.txt{suffix}")
    return str(path), str(test) if test.is_file() else None
