"""Writes the record schema page's tables from the field tables in the code, at every build.

Each family's fields come from the tuples its kernels and drivers fill (`ITER_FIELDS`,
`LABEL_FIELDS`, `TASK_FIELDS`); how the dashboard draws a field comes from
`xcviz.app.ui.fields.FIELDS`. The tables go to `_generated/record_fields.md`, which `records.md`
includes, so a field added to the code appears on the page without anyone copying it.
"""
from __future__ import annotations

from pathlib import Path

# (family, record kind, module, attribute): where each family's fields are declared
SOURCES = (
    ("dismec (one-vs-all Newton)", "iteration", "xcviz.engine.newton", "ITER_FIELDS"),
    ("dismec (one-vs-all Newton)", "label", "xcviz.engine.newton", "LABEL_FIELDS"),
    ("ppdsparse", "iteration", "xcviz.engine.ppdsparse", "ITER_FIELDS"),
    ("ppdsparse", "label", "xcviz.engine.ppdsparse", "LABEL_FIELDS"),
    ("memoir", "iteration", "xcviz.solvers.memoir", "ITER_FIELDS"),
    ("dsmlr", "iteration", "xcviz.solvers.dsmlr.solver", "ITER_FIELDS"),
    ("ldgs", "iteration", "xcviz.solvers.ldgs.solver", "ITER_FIELDS"),
    ("dismec, ppdsparse", "task", "xcviz.solvers._onevsall.blocks", "TASK_FIELDS"),
)


def family_fields() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(family, kind, where declared, fields) for every entry of SOURCES."""
    from importlib import import_module
    return [(family, kind, f"{module}.{attr}", tuple(getattr(import_module(module), attr)))
            for family, kind, module, attr in SOURCES]


def _row(*cells: str) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def schema_markdown() -> str:
    """The generated part of the record schema page, as MyST markdown."""
    from xcviz.app.ui.fields import FIELDS
    out = ["## Fields by family", ""]
    for family, kind, where, fields in family_fields():
        out += [f"### {family}: {kind} records", "", f"Declared in `{where}`.", ""]
        if kind == "iteration":  # the live plots draw iteration records only
            out += [_row("field", "plotted by the dashboard as"), _row("---", "---")]
            out += [_row(f"`{f}`", FIELDS[f].label if f in FIELDS else "no plot of its own") for f in fields]
        else:
            out += [", ".join(f"`{f}`" for f in fields)]
        out.append("")
    recorded = {f for *_, fields in family_fields() for f in fields}
    derived = ", ".join(f"`{f}`" for f in FIELDS if f not in recorded)
    out += ["## How the dashboard draws each field", "",
            "Declared in `xcviz.app.ui.fields.FIELDS`, in the order the plots appear. The fields no",
            f"family records are derived from the records by `xcviz.runs.aggregate`: {derived}.", "",
            _row("field", "axis label", "default y-axis", "unit"), _row("---", "---", "---", "---")]
    out += [_row(f"`{name}`", field.label, "log" if field.log else "linear", field.unit or "value")
            for name, field in FIELDS.items()]
    return "\n".join(out) + "\n"


def write_schema(app) -> None:
    target = Path(app.srcdir) / "_generated" / "record_fields.md"
    target.parent.mkdir(exist_ok=True)
    text = schema_markdown()
    if not target.exists() or target.read_text() != text:  # unchanged: Sphinx keeps its cached page
        target.write_text(text)


def setup(app):
    app.connect("builder-inited", write_schema)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
