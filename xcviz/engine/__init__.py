"""Numba kernels: numerics only, no UI, no I/O, no Python objects in hot loops.

Importing it leaves numba as it is; `loading.enable_shortcuts()` (called by the entry points)
installs xcviz's faster kernel loading."""
