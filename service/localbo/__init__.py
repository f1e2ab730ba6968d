"""localbo: an ask/tell optimization service built on local Bayesian optimization."""

__version__ = "0.1.0"
