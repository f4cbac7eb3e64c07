"""Data: readers and writers (XC text, LIBSVM, npz cache), bundled sets, synthetic problems and presets shaped
like published sets, their statistics, transforms."""
from .dataset import Dataset
from .presets import PRESETS, like
from .stats import describe
from .errors import DatasetFormatError
from .registry import bundled, load, load_files, resolve
from .synthetic import generate, split
from .textio import load_cached, read_dataset, read_libsvm, read_xc, write_libsvm, write_xc
from .transforms import add_bias, l2_normalize, tfidf

__all__ = ["Dataset", "DatasetFormatError", "PRESETS", "add_bias", "bundled", "describe", "generate", "like", "l2_normalize", "load",
           "load_cached", "load_files", "read_dataset", "read_libsvm", "read_xc", "resolve", "split", "tfidf",
           "write_libsvm", "write_xc"]
