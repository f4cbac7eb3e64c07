"""One-vs-all machinery shared by DiSMEC and PPDSparse: the problem, blocks of labels and what a
block returns (`blocks`), and the two backends that train blocks: numba threads in this process
(`threads_backend`) and Dask tasks (`dask_backend`); `run_blocks` picks one."""
