"""Numba kernels: numerics only, no UI, no I/O, no Python objects in hot loops."""
