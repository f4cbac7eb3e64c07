"""Downloads of the ticked runs from the page: the standalone HTML report (`xcviz.app.report`) and a zip
of their records as CSV and JSON. Both are built when the button is pressed."""
from __future__ import annotations

import io
from typing import Callable

import panel as pn

from .report import build_report, download_name, records_archive
from ..runs.store import RunStore


class ExportButtons:
    """Two download buttons for the runs `ticked()` returns; disabled while none is ticked, their
    files named after the ticked runs."""

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

    def enable(self, names: list[str]) -> None:
        """Enabled while runs are ticked (`names`: theirs), the files named after them (one run: its
        name; several: how many)."""
        for button in (self.report, self.records):
            if button.disabled == bool(names):
                button.disabled = not names
        if names:
            self.report.filename = download_name("report", names, "html")
            self.records.filename = download_name("records", names, "zip")

    def panel(self) -> pn.Row:
        return pn.Row(self.report, self.records)
