"""Helpers shared by every solver's parameter class."""
import param


def param_dict(params: param.Parameterized) -> dict:
    """A parameter object's values as a JSON-ready dict (without param's automatic `name`)."""
    return {k: v for k, v in params.param.values().items() if k != "name"}
