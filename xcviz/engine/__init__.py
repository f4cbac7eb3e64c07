"""Numba kernels: numerics only, no UI, no I/O, no Python objects in hot loops."""
from .loading import install as _install_light_loading

_install_light_loading()
