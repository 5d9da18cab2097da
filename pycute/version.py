"""pycute's version: one source (pyproject.toml reads it here; the package exports it as pycute.__version__)."""

__version__ = "0.2.0"
