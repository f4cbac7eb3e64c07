"""Downloads of the ticked runs from the page: the standalone HTML report (`xcviz.report`) and a zip
of their records as CSV and JSON. Both are built when the button is pressed."""
from __future__ import annotations

import io
from typing import Callable

import panel as pn

from ..report import build_report, records_archive
from ..runs.store import RunStore


class ExportButtons:
    """Two download buttons for the runs `ticked()` returns; disabled while none is ticked."""

    def __init__(self, store: RunStore, ticked: Callable[[], list[str]]) -> None:
        self.store, self.ticked = store, ticked
        self.report = pn.widgets.FileDownload(callback=self._report, filename="xcviz-report.html",
                                              label="Report (HTML)", color="primary", disabled=True,
                                              width=130, description="A standalone HTML report of the ticked runs")
        self.records = pn.widgets.FileDownload(callback=self._records, filename="xcviz-records.zip",
                                               label="Records (CSV, JSON)", disabled=True, width=160,
                                               description="A zip of the ticked runs' records")

    def _report(self) -> io.BytesIO:
        return io.BytesIO(build_report(self.store, self.ticked()).encode("utf-8"))

    def _records(self) -> io.BytesIO:
        return io.BytesIO(records_archive(self.store, self.ticked()))

    def enable(self, any_ticked: bool) -> None:
        for button in (self.report, self.records):
            if button.disabled == any_ticked:
                button.disabled = not any_ticked

    def panel(self) -> pn.Row:
        return pn.Row(self.report, self.records)
