"""otod's version, in a module of its own so the core can record it without importing the `otod` package (which
imports the core lazily, in `otod.load`)."""

__version__ = "0.1.0"
