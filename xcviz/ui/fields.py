"""How each record field is shown: its axis label and whether its y-axis is logarithmic by default.

Plots are data-driven: a run's plots are the fields of this table that its iteration records hold,
in this order, whichever solver wrote them (field names are shared across solvers where the
meaning is the same). A new solver's field gets a plot by getting a row here.
"""
from __future__ import annotations

from typing import NamedTuple


class Field(NamedTuple):
    label: str
    log: bool


FIELDS: dict[str, Field] = {
    "objective_gap": Field("(f - f_final) / |f_final|", True),
    "objective": Field("objective", True),
    "active_fraction": Field("active set / n", False),
    "active_set": Field("active set", False),
    "nnz": Field("nnz(w)", False),
    "step_size": Field("line-search multiplier", False),
    "cg_steps": Field("CG steps", False),
    "seconds": Field("seconds per iteration", True),
    "duality_gap": Field("duality gap", True),
    "violators": Field("margin violators", True),
    "oracle_recall": Field("oracle recall", False),
    "margin_error": Field("margin error", False),
    "query_seconds": Field("oracle query seconds", True),
    "update_seconds": Field("update seconds", True),
    "accuracy": Field("accuracy", False),
    # LDGS (per record window, on a fixed diagnostic sample against exact scores)
    "p_at_1": Field("P@1 (sample)", False),
    "p_at_5": Field("P@5 (sample)", False),
    "search_recall_mips": Field("mips search recall", False),
    "search_recall_decomp": Field("decomp search recall", False),
    "gradient_error": Field("gradient relative l2 error", True),
    "gradient_cosine": Field("gradient cosine vs exact", False),
    "loss_error": Field("loss approximation error", True),
    "active_set": Field("|A| per sample", True),
    "retrieved": Field("sum |S_j| per sample", True),
    "certified_decomp": Field("decomp certificate share", False),
    "rescore_seconds": Field("rescoring seconds", True),
    "message_seconds": Field("message-passing seconds", True),
}
# a field that a more telling derived field replaces when both are there
REPLACED_BY = {"objective": "objective_gap", "active_set": "active_fraction"}
# one label's trajectory in the label inspector: the first four of these its records hold
TRAJECTORY = ("objective", "grad_norm", "active_set", "step_size", "duality_gap", "nnz")
TRAJECTORY_LABELS = {"grad_norm": "gradient norm", **{k: v.label for k, v in FIELDS.items()}}


def plotted_fields(available: set[str]) -> list[str]:
    """The fields of FIELDS that records with these columns are plotted by, in table order."""
    return [f for f in FIELDS if f in available and REPLACED_BY.get(f) not in available]


def field_label(field: str) -> str:
    return TRAJECTORY_LABELS.get(field, field)
