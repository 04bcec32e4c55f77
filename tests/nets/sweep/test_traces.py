"""Any target after the run (issue 36 item 5): a net sweep's records keep each lane's training loss at its
checkpoints, and a run at target 0.1 read at 0.2 gives the records, the (lr, β) chosen per B and B_crit of a run
at 0.2, count for count; a file without traces reads back as before, its own target only."""

from __future__ import annotations

import numpy as np
import pytest

import otod.nets  # noqa: F401 (registers the net sweep)
from otod.core import results as results_io
from otod.core.errors import OtodError
from otod.core.report import frame_at
from otod.core.traces import TRACE_ITERATIONS, steps_to

#: A small net sweep that still prunes rates: digits, width 32, B = 16 and 64, three steps, 2 seeds, cap 400.
SWEEP = dict(batch="16,64", seeds=2, max_iters="400", lr_grid="0.1..1:3:log")
KEY = ["batch", "learning_rate", "seed"]
FIELDS = ["iterations", "status", "final_loss", "hits[0]"]


def run(tmp_path, target: str):
    from otod.core.sweep import run_sweep
    from otod.nets.sweep.options import net_config

    return run_sweep(net_config(target=target, **SWEEP), out_dir=tmp_path / target)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("traces")
    return run(folder, "0.1"), run(folder, "0.2")


def by_lane(frame):
    return frame.sort_values(KEY).reset_index(drop=True)


@pytest.mark.slow
def test_a_run_read_at_a_higher_target_is_a_run_there(runs):
    """Every record's steps, status, final loss and first hit, re-derived from the 0.1 run's traces at 0.2, equal
    the 0.2 run's exactly; so do the per-B choice of the lr and B_crit, made again by the same analysis."""
    from otod.nets.sweep.report import net_analysis

    low, high = runs
    again, there, own = by_lane(frame_at(low, 0.2)[2]), by_lane(high.to_pandas()), by_lane(low.to_pandas())
    assert again.attrs["retarget"] == {"target": 0.2, "run_target": 0.1, "undetermined": 0}
    assert (own["status"] == "pruned").any()  # the run's own pruning is replayed at 0.2, not copied
    assert (again["iterations"] < own["iterations"]).sum() >= 4  # the read moves counts: not a copy
    for name in FIELDS:
        assert again[name].equals(there[name]), name
    a, b = net_analysis(low, 0.2), net_analysis(high)
    for sa, sb in zip(a.series, b.series, strict=True):
        assert np.array_equal(sa.median, sb.median)
        assert np.array_equal(sa.summary["learning_rate"], sb.summary["learning_rate"])
        assert sa.critical.b_crit == sb.critical.b_crit
    assert a.tol == 0.2


@pytest.mark.slow
def test_steps_to_a_target_are_the_first_checkpoint_at_or_below_it(runs):
    """A converged lane of the 0.1 run: its trace's first value ≤ 0.1 is at its recorded count, and its last value
    (the trace's shortest float32 decimal) is its final loss."""
    low, _ = runs
    iterations = low.meta[TRACE_ITERATIONS]
    done = [r for r in low.records if r["status"] == "converged"]
    assert done
    for r in done:
        assert steps_to(r["loss_trace"], iterations, 0.1) == r["iterations"]
        assert np.float32(r["loss_trace"][-1]) == np.float32(r["final_loss"])  # the same float32, written shorter
        assert iterations[len(r["loss_trace"]) - 1] == r["iterations"]


@pytest.mark.slow
def test_a_file_without_traces_reads_back_at_its_own_target_only(runs, tmp_path):
    """An older file (no ``loss_trace``, no ``trace_iterations``) reads back, and --target 0.2 on it is refused as
    today: not recorded."""
    low, _ = runs
    meta = {k: v for k, v in low.meta.items() if k not in (TRACE_ITERATIONS, "read_back")}
    records = [{k: v for k, v in r.items() if k != "loss_trace"} for r in low.records]
    old = results_io.load(results_io.save(tmp_path / "old.parquet", meta, records))
    assert by_lane(frame_at(old)[2])[FIELDS].equals(by_lane(low.to_pandas())[FIELDS])
    with pytest.raises(OtodError, match="0.2: not recorded in this run"):
        frame_at(old, 0.2)
    with pytest.raises(OtodError, match="below this run's target 0.1"):
        frame_at(low, 0.05)
