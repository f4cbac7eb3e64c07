"""Margin oracles: exact and approximate maximum-inner-product search over class vectors
(`registry.ORACLES`, `registry.make_oracle`; the contract is in `base`)."""
