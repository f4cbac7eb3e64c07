"""A Panel Tabulator whose data updates never undo a tick the browser has sent.

Panel (1.9) holds a change the browser sends (a tick: the table's selected row numbers) for 50 ms
(`_debounce`) before it sets `selection`. A new `value` sent meanwhile (`_update_cds`) also sends the
selection the server has, which has not got the tick yet: Panel lets that stale selection win over
the held change and drops it, so the box flips back in the page and the server never has the tick
(1 change in 20 lost while a run refreshed the runs table each second). Here the held changes are
applied first, as they would be had they come 50 ms sooner: the selection sent with the data then
is the browser's own. A tick still on its way to the server is safe already: the server's selection
has not changed, so nothing is sent over the page's.
"""
from __future__ import annotations

import panel as pn


class TickTable(pn.widgets.Tabulator):
    """`pn.widgets.Tabulator` applying the browser's held changes before it sends new data."""

    def _update_cds(self, *events) -> None:
        doc = pn.state.curdoc
        if self._events and not self._updating and doc is not None:  # the browser's, held back
            self._change_event(doc)  # Panel's own handler of them; its timer later finds none left
        super()._update_cds(*events)
