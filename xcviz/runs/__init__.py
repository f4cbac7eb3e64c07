"""Record sinks (and, later, run specs, the run store and the background launcher)."""
