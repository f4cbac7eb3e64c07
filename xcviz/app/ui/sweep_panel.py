"""The page's sweep figures: when the ticked runs are one spec at several values of one numeric
parameter (`runs.sweep.swept_parameter`), their final P@1/3/5, training seconds and model
non-zeros against it (`sweep_view.sweep_figures`, the report's figures), log-scaled where the
values span a decade. Runs that differ only in their variant (a Compare) or their seed are not a
sweep here: a figure of P@k against an initializer's name, or a seed, says nothing the runs
table does not. The figures are made again only when a finished run's numbers change."""
from __future__ import annotations

import html

import pandas as pd
import panel as pn

from ...runs.sweep import log_scaled, sweep_table, swept_parameter
from .sweep_view import sweep_figures

NOT_SWEPT = ("seed",)
FIGURE_SIZE = (360, 250)


def page_sweep(rows: list[dict]) -> str | None:
    """The parameter the page draws these runs against: the one that differs among them, if it
    is numeric and not a seed; None otherwise."""
    key = swept_parameter(rows) if len(rows) > 1 else None
    if key is None or key in NOT_SWEPT:
        return None
    values = sweep_table(rows, key)[key]
    return key if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values) else None


class SweepPanel:
    """A card above the plots, shown while the ticked runs form a sweep."""

    def __init__(self) -> None:
        self.text = pn.pane.HTML("", sizing_mode="stretch_width")
        self.grid = pn.FlexBox(sizing_mode="stretch_width")
        self.card = pn.Card(self.text, self.grid, title="Sweep", collapsed=False, visible=False,
                            sizing_mode="stretch_width", margin=(0, 5), header_background="#f4f4f4")
        self._drawn: tuple | None = None

    def update(self, rows: list[dict]) -> None:
        """Show the sweep the runs of these store rows form, or hide the card if they form none."""
        key = page_sweep(rows)
        if key is None:
            if self.card.visible:
                self.card.visible = False
            return
        table = sweep_table(rows, key)
        done = table[table["status"] == "done"]
        state = (key, done.to_json(), len(table))
        if state != self._drawn:
            self._drawn = state
            figures = sweep_figures(table, key)
            for fig in figures:  # three in a row beside the launch panel, as the live plots
                fig.width, fig.height = FIGURE_SIZE
            log = " (log x-axis)" if len(done) and log_scaled(done[key]) else ""
            with pn.io.hold():
                self.card.title = f"Sweep over {key}"
                self.text.object = (f"<p>The ticked runs differ only in <b>{html.escape(key)}</b>: the final metrics "
                                    f"of the {len(done)} finished of {len(table)} against it{log}. Hover a point for "
                                    "its run.</p>")
                self.grid.objects = [pn.pane.Bokeh(f) for f in figures]
        if not self.card.visible:
            self.card.visible = True

    def panel(self) -> pn.Card:
        return self.card
