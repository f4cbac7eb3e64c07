"""Which rows are positive for each label: the one-vs-all kernels' view of the label matrix."""
from typing import NamedTuple

import numpy as np


class Positives(NamedTuple):
    """The rows where each label is positive (Y in CSC): label l's are rows[ptr[l]:ptr[l + 1]]."""

    ptr: np.ndarray
    rows: np.ndarray
