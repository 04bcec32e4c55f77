"""The shared command helpers: the progress line shows on a terminal only."""

import io

from otod.core.cli import terminal_progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


EVENT = {"lanes_done": 400, "lanes_total": 1600, "elapsed": 3.0, "lanes_per_second": 133.3, "eta": 9.0,
         "chunk": "0/gd/0"}


def test_progress_shows_lanes_rate_and_eta_on_a_terminal_after_a_few_seconds():
    tty = Terminal()
    report = terminal_progress(tty)
    report({**EVENT, "elapsed": 0.5})
    assert tty.getvalue() == ""  # short sweeps stay quiet
    report(EVENT)
    assert "400/1600 lanes, 133 lanes/s, ETA 9 s" in tty.getvalue()


def test_progress_is_silent_when_not_a_terminal():
    pipe = io.StringIO()
    terminal_progress(pipe)(EVENT)
    assert pipe.getvalue() == ""
