"""How each record field is shown: its axis label, whether its y-axis is logarithmic by default,
and its unit: a share (0 to 1) is drawn on a linear axis from 0 to 1; a percent field is recorded
as a share and drawn times 100, as the runs table prints it.

Plots are data-driven: a run's plots are the fields of this table that its iteration records hold,
in this order, whichever solver wrote them (field names are shared across solvers where the
meaning is the same). A new solver's field gets a plot by getting a row here.
"""
from __future__ import annotations

from typing import NamedTuple

from ...runs.aggregate import PER_BATCH


class Field(NamedTuple):
    label: str
    log: bool
    unit: str = ""  # "share", "percent" or "" (a plain value)
    floor: float = 0.0  # on a log axis, values below are drawn at it (0: none)


# a gap below the tightest tolerance any solver accepts (DS-MLR's lc_tol bound) is rounding, not
# progress: on a log axis, gaps are drawn at this floor at least, so that DS-MLR async's variational
# gap of about 1e-29 no longer stretches the axis over 30 decades (issue 40)
GAP_FLOOR = 1e-12


FIELDS: dict[str, Field] = {
    "objective_gap": Field("(f - f_final) / |f_final|", True, floor=GAP_FLOOR),
    "objective": Field("objective", True),
    "active_fraction": Field("active set / n", False, "share"),
    "active_set": Field("active set", False),
    "nnz": Field("nnz(w)", False),
    "step_size": Field("line-search multiplier", False),
    "cg_steps": Field("CG steps", False),
    "seconds": Field("seconds per iteration", True),
    "seconds_per_batch": Field("training seconds per batch", True),
    "duality_gap": Field("duality gap", True, floor=GAP_FLOOR),
    "dual_objective": Field("dual objective", False),
    "nnz_search": Field("nnz of the searched w", False),
    "rows_fraction": Field("rows the search touched / N", False),  # not pinned to 0-1: a fallback search can pass 1
    "rows_touched": Field("rows the search touched (Newton: all N)", False),
    "search_seconds": Field("search seconds", True),
    "solve_seconds": Field("solve seconds", True),
    "maintain_seconds": Field("maintain seconds", True),
    "violators": Field("margin violators (share of rows)", False, "share"),
    "oracle_recall": Field("oracle recall (within tolerance)", False, "share"),
    "oracle_recall_at_1": Field("oracle recall@1 (rank)", False, "share"),
    "oracle_recall_at_10": Field("oracle recall@10 (rank)", False, "share"),
    "margin_error": Field("margin error", False),
    "query_seconds": Field("oracle query seconds", True),
    "query_seconds_per_batch": Field("query seconds per batch", True),
    "update_seconds": Field("update seconds", True),
    "update_seconds_per_batch": Field("update seconds per batch", True),
    "truncation_change": Field("drop of ||W||_2 by a truncation", False),
    "accuracy": Field("validation accuracy (%)", False, "percent"),
    # DS-MLR (xcviz.solvers.dsmlr.solver); the per-worker fields are drawn as bands over workers
    "optimum_gap": Field("(L1 - reference optimum) / |optimum|", True, floor=GAP_FLOOR),
    "variational_gap": Field("variational gap L2(W,b_old)-L1(W)", True, floor=GAP_FLOOR),
    "macro_f1": Field("validation macro-F1 (%)", False, "percent"),  # in % as accuracy and the runs table
    "compute_seconds": Field("compute seconds per worker", False),
    "idle_seconds": Field("idle seconds per worker", False),
    "queue_length": Field("longest queue per worker", False),
    # LDGS (per record window, on a fixed diagnostic sample against exact scores; its active_set is |A|)
    "p_at_1": Field("P@1 (sample, %)", False, "percent"),
    "p_at_5": Field("P@5 (sample, %)", False, "percent"),
    "search_recall_mips": Field("mips search recall", False, "share"),
    "search_recall_decomp": Field("decomp search recall", False, "share"),
    "gradient_error": Field("gradient relative l2 error (batch)", True),  # ||g~ - g|| / ||g|| over the sample
    "gradient_error_row_mean": Field("gradient relative l2 error (row mean)", True),  # mean of per-row ratios
    # one-vs-all runs on the wall-time axis (runs.aggregate.RunAggregate): labels finished by then
    "labels_done": Field("labels done", False),
    "gradient_cosine": Field("gradient cosine vs exact", False),
    "loss_error": Field("loss approximation error", True),
    "retrieved": Field("sum |S_j| per sample", True),
    "certified_decomp": Field("decomp certificate share", False, "share"),
    "rescore_seconds": Field("rescoring seconds", True),
    "rescore_seconds_per_batch": Field("rescoring seconds per batch", True),
    "message_seconds": Field("message-passing seconds", True),
    "message_seconds_per_batch": Field("message-passing seconds per batch", True),
}
# a field that a more telling derived field replaces when both are there
REPLACED_BY = {"objective": "objective_gap", "active_set": "active_fraction", "rows_touched": "rows_fraction",
               **{f: f"{f}_per_batch" for f in PER_BATCH}}  # a streaming solver's window times
# one label's trajectory in the label inspector: the first four of these its records hold
TRAJECTORY = ("objective", "grad_norm", "active_set", "step_size", "duality_gap", "nnz")
TRAJECTORY_LABELS = {"grad_norm": "gradient norm", **{k: v.label for k, v in FIELDS.items()}}


def plotted_fields(available: set[str]) -> list[str]:
    """The fields of FIELDS that records with these columns are plotted by, in table order."""
    return [f for f in FIELDS if f in available and REPLACED_BY.get(f) not in available]


def field_label(field: str) -> str:
    return TRAJECTORY_LABELS.get(field, field)
