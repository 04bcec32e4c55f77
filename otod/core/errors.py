"""User-facing errors.

`OtodError` is raised for bad input anywhere in the library; the CLI turns it into one line on stderr and exit
code 2. Its message names the problem and the accepted form, e.g. ``--tol 0: tolerance must lie in (0, 1), e.g.
--tol 1e-6``.
"""


class OtodError(ValueError):
    """Bad input or an unreadable file, with a one-line message fit for a user."""


class Interrupted(Exception):
    """A sweep stopped by Ctrl-C after saving its finished chunks; the same command resumes it."""

    def __init__(self, path, lanes_saved: int, lanes_total: int):
        self.path, self.lanes_saved, self.lanes_total = path, lanes_saved, lanes_total
        super().__init__(f"interrupted: {lanes_saved} of {lanes_total} lanes are saved in the journal of {path}; "
                         "the same command resumes the sweep")


class ShareDone(Exception):
    """A process other than 0 of a distributed sweep has run its share, and process 0 has merged every part into
    the results file: nothing is wrong, and this process has no results of its own to report."""

    def __init__(self, path, index: int, count: int, chunks: int, lanes: int):
        self.path, self.index, self.count = path, index, count
        super().__init__(f"process {index} of {count}: ran {chunks} chunks ({lanes} lanes) of its share; process 0 "
                         f"wrote {path}")


class ShareWritten(ShareDone):
    """A ``--share I/N`` has run its share of a sweep into its part file, with no other process involved: nothing
    is wrong and nothing is merged; ``otod merge`` joins the parts once every share has run."""

    def __init__(self, path, part, index: int, count: int, chunks: int, lanes: int):
        self.path, self.part, self.index, self.count = path, part, index, count
        ran = f"{chunks} chunk{'s' * (chunks != 1)} ({lanes} lanes)"
        Exception.__init__(self, f"share {index} of {count}: ran {ran} into {part}; when all {count} shares have "
                                 f"run, otod merge {path}.part-*-of-{count} writes {path}")


class Abandoned(Exception):
    """The engine stopped waiting on a device program that is still running: its devices made no progress for
    the watchdog's time, or a second Ctrl-C asked to stop at once. XLA cannot cancel a running program, so the
    process must end without waiting for it (`otod.core.cli.user_errors` ends it with ``os._exit``); the chunks
    finished before it are in the sweep's journal, and the same command resumes from them.

    ``interrupted`` tells a Ctrl-C (exit code 130) from the watchdog (exit code 1)."""

    def __init__(self, message: str, interrupted: bool = False):
        self.interrupted = interrupted
        super().__init__(message)
