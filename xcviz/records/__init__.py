"""Where a solver's records go: the sinks (null, memory, JSON lines, a tee of several); the SQLite
store of background runs is `xcviz.runs.store`."""
