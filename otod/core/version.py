"""otod's version, in the core so that results can record it without importing the `otod` package (which
imports the core lazily, in `otod.load`)."""

__version__ = "0.1.0"
