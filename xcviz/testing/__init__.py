"""What the tests and benchmarks hold xcviz against: the LIBLINEAR reference."""
