"""A one-vs-all fit of a label sample (the families' `label_sample` parameter): the label columns it
trains, drawn by data.label_sample, and the note on the model that says which they are."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...data.label_sample import SEED, draw_labels, positives_per_label
from ...models.sparse import SparseModel


def sample_columns(Y: sp.spmatrix, value: float) -> tuple[sp.spmatrix, np.ndarray | None]:
    """(the label columns to train, their indices in Y): Y itself and None when `value` asks for every
    label, else the columns of the stratified sample it draws, in label order."""
    labels = draw_labels(positives_per_label(Y), value)
    return (Y, None) if labels is None else (sp.csr_matrix(Y)[:, labels].tocsr(), labels)


def note_sample(model: SparseModel, labels: np.ndarray | None, n_labels: int) -> SparseModel:
    """The model with its info's `label_sample` when it was trained on a sample: {"labels": the
    original index of each of its rows, "of": the data set's labels, "seed"}; returns the model."""
    if labels is not None:
        model.info["label_sample"] = {"labels": labels.tolist(), "of": int(n_labels), "seed": SEED}
    return model
