"""Run colours: one per run wherever it is drawn (page, notebook, report), never shared by two runs
drawn together.

A run prefers the colour of its number in the store (runs made one after the other differ), but a
preference alone repeats every ten runs: runs 1 and 11 were both red side by side. `RunColors` is
given the runs shown together and hands each a colour no other of them has; a run keeps the colour
it was given for as long as the object lives (a page, a notebook view), unless a run shown with it
already holds that colour. More runs than the palette holds get further colours spread around the
hue circle, so any number of runs stays distinct.
"""
from __future__ import annotations

import colorsys
import zlib

# Tableau 10, then its lighter companions (Tableau 20's second shades)
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f", "#aec7e8", "#ff9896", "#98df8a", "#ffbb78", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5",
           "#dbdb8d", "#c7c7c7")
_BASE = 10  # a run's preferred colour is among the first ten, the stronger shades


def preferred_color(run: dict | int | str) -> str:
    """The colour a run asks for: from its number in the store (a store row, or that number); a
    name without a store, from its hash."""
    if isinstance(run, dict):
        run = run.get("number", run.get("id", ""))
    index = run if isinstance(run, int) else zlib.crc32(str(run).encode())
    return PALETTE[index % _BASE]


def extra_color(k: int) -> str:
    """The k-th colour beyond the palette: hues a golden angle apart, mid lightness."""
    r, g, b = colorsys.hls_to_rgb((k * 0.618033988749895) % 1.0, 0.45, 0.65)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


class RunColors:
    """`assign(preferences)` gives each of the runs shown together a colour of its own."""

    def __init__(self) -> None:
        self._given: dict[str, str] = {}  # run key -> the colour it was last drawn in

    def assign(self, preferences: dict[str, str]) -> dict[str, str]:
        """Colours for these runs (key -> preferred colour, in the order they are listed): first each
        keeps the colour it had, then each new one takes its preference if free, else the next free
        palette colour after it, else a further one."""
        colors: dict[str, str] = {}
        for key in preferences:
            had = self._given.get(key)
            if had is not None and had not in colors.values():
                colors[key] = had
        for key, wanted in preferences.items():
            if key in colors:
                continue
            taken = set(colors.values())
            start = PALETTE.index(wanted) if wanted in PALETTE else 0
            free = [PALETTE[(start + i) % len(PALETTE)] for i in range(len(PALETTE))]
            color = next((c for c in free if c not in taken), None)
            k = 0
            while color is None or color in taken:
                color, k = extra_color(k), k + 1
            colors[key] = color
        self._given.update(colors)
        return colors


def distinct_colors(names) -> dict[str, str]:
    """A colour per name (runs known only by name, as in the notebooks' static figures), from the
    name's hash, distinct among the names."""
    names = [str(n) for n in names]
    return RunColors().assign({n: preferred_color(n) for n in names})
