"""JSON text parsed only when it nests no deeper than the reader expects.

Python's `json` recurses once per level: a text of ten thousand '[' raises RecursionError (a
traceback, not an error naming the file). Every reader of user-given JSON (run specs, `--set`
values, shard manifests, model descriptions) measures the nesting first, not counting brackets
inside strings, so a run named "[[[[[[[[[" is no deeper than any other.
"""
from __future__ import annotations

import json
import re

MAX_DEPTH = 8  # deeper than any spec, parameter, manifest or model description xcviz writes
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class TooDeep(ValueError):
    """A JSON text nested deeper than its reader allows; the message says how deep and the bound."""


def nesting_depth(text: str) -> int:
    """How deeply the arrays and objects of a JSON text nest (brackets inside strings do not count;
    an unclosed string ends the text)."""
    brackets = _BRACKET.findall(_STRING.sub("", text).split('"', 1)[0])
    depth = deepest = 0
    for char in brackets:
        depth += 1 if char in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def loads_bounded(text: str, limit: int = MAX_DEPTH):
    """`json.loads(text)`, refusing a text nested more than `limit` levels (TooDeep) before parsing
    it; json.JSONDecodeError as json raises it."""
    depth = nesting_depth(text)
    if depth > limit:
        raise TooDeep(f"JSON nested {depth} levels deep; at most {limit}")
    return json.loads(text)
