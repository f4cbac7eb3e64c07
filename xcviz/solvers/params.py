"""Helpers shared by every solver's parameter class."""
import difflib
import re

import param

_PREFIX = re.compile(r"^\w+ parameter '(?:\w+\.)?(\w+)'")


def param_dict(params: param.Parameterized) -> dict:
    """A parameter object's values as a JSON-ready dict (without param's automatic `name`)."""
    return {k: v for k, v in params.param.values().items() if k != "name"}


def plain_refusal(exc: Exception | str) -> str:
    """param's refusal of a value without its class names: "C must be at least 1e-06, not -5.0" for
    "Number parameter 'DismecParams.C' must be at least 1e-06, not -5.0" (the page and the CLI)."""
    return _PREFIX.sub(r"\1", str(exc))


def refused_value(cls: type[param.Parameterized], values: dict) -> str | None:
    """A value of `values` the parameter class refuses, said in the user's terms ("init must be one
    of zero, bias, ovap, msi, not 'mis' (did you mean msi?)", "max_iter must be a whole number, not
    'abc'"), or None when param's own refusal says it well enough (a bound)."""
    for key, value in values.items():
        p = cls.param[key] if key in cls.param else None
        if p is None or value is None and p.allow_None:
            continue
        if isinstance(p, param.Selector) and getattr(p, "check_on_set", True) and value not in p.objects:
            close = difflib.get_close_matches(str(value), [str(o) for o in p.objects], n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return f"{key} must be one of {', '.join(map(str, p.objects))}, not {value!r}{hint}"
        if isinstance(p, param.Number) and (not isinstance(value, (int, float)) or value != value) or \
                isinstance(p, param.Integer) and not isinstance(value, int):  # text, NaN, 1.5 for a count
            return f"{key} must be {'a whole number' if isinstance(p, param.Integer) else 'a number'}, not {value!r}"
    return None


def label_sample_param() -> param.Number:
    """The one-vs-all families' `label_sample`: train a stratified sample of the labels instead of
    all of them (data.label_sample), for a first look at a data set too large to train whole."""
    # bounded: infinity (or 1e400) passed the bounds and failed the draw's rounding with an OverflowError
    return param.Number(default=0.0, bounds=(0.0, 1e9), doc=(
        "Train a sample of the labels, drawn stratified by positives with a fixed seed: 0 every label, "
        "a value below 1 that share of them, 1 or more that many. The model holds only the sampled "
        "labels and the metrics are computed on them alone (the run says 'a sample of N of K labels')."))
