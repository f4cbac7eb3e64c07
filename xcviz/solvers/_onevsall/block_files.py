"""A block's weights on their way from a Dask worker to the driver through the run's folder.

A task that trains a block writes its pruned weight rows to a file in the run's folder (whole or
not at all: `write_atomic`) and returns only a `BlockFile` (path, SHA-256, non-zeros) with its
labels, bias weights and records; the weights never pass through the scheduler, whose messages and
the driver's memory are what run out first at scale (dask#1412). The driver reads the file back,
checks its SHA-256 against the one the worker computed before writing, and records the block in
the run store in one transaction as a threads run does (the store stays the model's one source:
a write there happens whole or not at all); the file is then removed.
"""
from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..._util.atomic_write import write_atomic


class BlockFileError(RuntimeError):
    """A block's weight file that is missing, or differs from what its worker wrote."""


class BlockFile(NamedTuple):
    """Where a worker wrote a block's weights, the SHA-256 of the file's bytes and its non-zeros."""

    path: str
    sha256: str
    nnz: int


def _describe(labels: np.ndarray) -> str:
    return f"the block of {labels.size} labels from {int(labels.min())} to {int(labels.max())}"


def write_block_file(folder: str | Path, name: str, labels: np.ndarray, weights: sp.csr_matrix) -> BlockFile:
    """Write `weights` (the rows of `labels`) to folder/name.npz, owner-only, whole or not at all."""
    buffer = io.BytesIO()
    np.savez(buffer, labels=labels, indptr=weights.indptr, indices=weights.indices, data=weights.data,
             shape=np.array(weights.shape))
    content = buffer.getvalue()
    path = Path(folder) / f"{name}.npz"
    write_atomic(path, content, mode=0o600)
    return BlockFile(str(path), hashlib.sha256(content).hexdigest(), int(weights.nnz))


def read_block_file(block: BlockFile, labels: np.ndarray) -> sp.csr_matrix:
    """The weight rows of `labels` from `block`'s file, once its SHA-256, labels and non-zeros are
    those its worker wrote; BlockFileError naming the block and the file (never its contents)."""
    try:
        content = Path(block.path).read_bytes()
    except OSError as exc:
        raise BlockFileError(f"{_describe(labels)}: its weight file {block.path} cannot be read "
                             f"({exc.strerror})") from None
    if hashlib.sha256(content).hexdigest() != block.sha256:
        raise BlockFileError(f"{_describe(labels)}: its weight file {block.path} differs from the one its worker "
                             "wrote (SHA-256 mismatch): changed or damaged after it was written")
    with np.load(io.BytesIO(content), allow_pickle=False) as z:
        weights = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        written = z["labels"]
    if not np.array_equal(written, labels) or weights.nnz != block.nnz:
        raise BlockFileError(f"{_describe(labels)}: its weight file {block.path} holds other labels or weights")
    return weights
