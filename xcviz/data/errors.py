"""The one exception raised for malformed dataset files.

Every reader reports bad input through `DatasetFormatError`, so callers (and the CLI) can show
a single precise line such as ``bibtex_train.txt:17: feature index 1836 out of range (D = 1836)``.
"""
import os


class DatasetFormatError(ValueError):
    """A dataset file is missing, unreadable or malformed.

    `line` is the 1-based physical line of the file (the XC header is line 1), or None when the
    problem is not tied to a line (missing file, empty file, corrupt compressed stream).
    """

    def __init__(self, path: str | os.PathLike, line: int | None, problem: str) -> None:
        super().__init__(os.fspath(path), line, problem)
        self.path = os.fspath(path)
        self.line = line
        self.problem = problem

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.path}: {self.problem}"
        return f"{self.path}:{self.line}: {self.problem}"
