"""Your own data from the page (issue 40): a file dropped or chosen in the launch panel becomes a
training file of the first data folder (`data.uploads.save_upload`: a safe name, written whole,
read as `xcviz train` reads it), is added to the data-set select and selected. A second file whose
name is the training file's stem (`mine_test.txt` after `mine_train.txt`) becomes its test split.

The dropper (Panel's FileDropper: chunked, its JavaScript served by the server itself, so offline
too) refuses a file over the size limit in the browser; the server refuses one whose chunks add up
to more, whatever a page sends. Without a data folder (`xcviz serve --data-dir`) there is nowhere
to keep a file, and the panel says so instead."""
from __future__ import annotations

import html
from pathlib import Path
from typing import Callable

import panel as pn
import param

from ...data.errors import DatasetFormatError
from ...data.uploads import MAX_UPLOAD_MB, UploadRefused, save_upload

MAX_CHUNKS_BYTES = MAX_UPLOAD_MB * 2**20


class BoundedDropper(pn.widgets.FileDropper):
    """A FileDropper that drops, server-side, a file whose chunks exceed MAX_CHUNKS_BYTES: the
    browser's size check is the page's, and a page may skip it (each chunk is bounded by the
    websocket's message size, their number is not)."""

    oversized = param.String(default=None, allow_None=True, doc="The name of the last file dropped as too large.")

    _rename = {**pn.widgets.FileDropper._rename, "oversized": None}  # the server's alone, not the page's

    def _process_event(self, event) -> None:
        name = event.data.get("name")
        if event.event_name == "upload_event" and event.data.get("chunk", 1) > 1:
            if name not in self._file_buffer:  # the rest of a file dropped already (or never begun)
                return
            held = sum(len(c) for c in self._file_buffer[name])
            if held + len(event.data.get("data") or b"") > MAX_CHUNKS_BYTES:
                del self._file_buffer[name]
                self.param.update(oversized=None)
                self.oversized = str(name)
                return
        super()._process_event(event)


class UploadPanel:
    """A file dropper and what became of the last file, for the launch panel."""

    def __init__(self, data_dirs: list[str | Path], width: int, on_added: Callable[[Path], None]) -> None:
        self.folder = Path(data_dirs[0]) if data_dirs else None
        self.on_added = on_added
        self.dropper = BoundedDropper(max_file_size=f"{MAX_UPLOAD_MB}MB", multiple=False, width=width,
                                      layout="compact", disabled=self.folder is None)
        self.message = pn.pane.HTML("", width=width, styles={"font-size": "12px"})
        self.dropper.param.watch(lambda _e: self.take(), "value")
        self.dropper.param.watch(self._too_large, "oversized")
        where = ("the first data folder" if self.folder is not None else
                 "a data folder: start the server with <code>--data-dir FOLDER</code> to upload")
        self.help = pn.pane.HTML(
            f"<strong>Your own data</strong>: a LIBSVM or XC file (plain, .gz or .xz, up to {MAX_UPLOAD_MB} MB), kept in "
            f"{where}. Name a test file after its training file (<code>mine_test.txt</code> after "
            "<code>mine_train.txt</code>).", width=width, styles={"font-size": "12px"})

    def take(self) -> None:
        """Keep the file the dropper holds (if any) and say what became of it."""
        if not self.dropper.value:
            return
        name, content = next(iter(self.dropper.value.items()))
        self.dropper.value = {}
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        split = "test" if "_test." in name or name.endswith("_test") else "train"
        try:
            if self.folder is None:
                raise UploadRefused("no data folder to keep it in: start the server with --data-dir FOLDER")
            path = save_upload(data, name, self.folder, split)
        except (UploadRefused, DatasetFormatError) as exc:
            self.say(f"Not added: {exc}", error=True)
            return
        self.say(f"Added {path.name} to {self.folder.name}/.")
        self.on_added(path)

    def _too_large(self, event) -> None:
        if event.new:
            self.say(f"Not added: {event.new} is larger than {MAX_UPLOAD_MB} MB.", error=True)

    def say(self, text: str, error: bool = False) -> None:
        color = "#b00020" if error else "#1b5e20"
        self.message.object = f'<div style="color:{color}">{html.escape(text)}</div>'

    def panel(self) -> pn.Column:
        return pn.Column(self.help, self.dropper, self.message, margin=0)
