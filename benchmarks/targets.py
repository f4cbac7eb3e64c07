"""A targets table of BENCHMARKS.md: each target's value from the run that wrote the section, the bound,
met or not.

One row per check (what, value, bound, kind, note): kind "x" is a ratio that must reach the bound,
" min" a plain value that must reach it, " max" a value that must stay at or below it. A value of None is a target this run
could not measure (its data absent, say); the row says so, with the note giving the reason, and is
neither met nor missed.
"""
from __future__ import annotations

Check = tuple[str, "float | None", float, str, str]


def target_rows(checks: list[Check], heading: str = "## Targets") -> list[str]:
    """The table's lines under `heading`, a blank line after it."""
    out = [heading, "", "| target | this run | required | met | note |", "|---|---|---|---|---|"]
    for what, value, bound, kind, note in checks:
        at_least = kind in ("x", " min")
        req = (">= " if at_least else "<= ") + f"{bound}" + ("x" if kind == "x" else "")
        if value is None:
            out.append(f"| {what} | not measured | {req} | - | {note} |")
            continue
        met = value >= bound if at_least else value <= bound
        shown = f"{round(value, 2) + 0.0:.2f}" + ("x" if kind == "x" else "")  # + 0.0: never "-0.00"
        out.append(f"| {what} | {shown} | {req} | {'yes' if met else '**no**'} | {note} |")
    return out + [""]
