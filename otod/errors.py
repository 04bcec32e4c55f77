"""User-facing errors.

`OtodError` is raised for bad input anywhere in the library; the CLI turns it into one line on stderr and exit
code 2. Its message names the problem and the accepted form, e.g. ``--tol 0: tolerance must lie in (0, 1), e.g.
--tol 1e-6``.
"""


class OtodError(ValueError):
    """Bad input or an unreadable file, with a one-line message fit for a user."""
