"""Where training runs: Dask clusters (local or reached at an address) and what each Dask worker
sets up as it joins. Numba's thread count is set by `xcviz.engine.threads`, below the solvers."""
