"""The records the noise analysis reads (`otod.noise.records`): every named field from the run on, old files filled
in once where the frame is built, and methods without β kept at one β."""

from pathlib import Path

import numpy as np
import pandas as pd

from otod.core import results as results_io
from otod.noise import records as noise_records
from tests.noise import synthetic

DATA = Path(__file__).parent / "data"
NAMED = {"dim", "batch", "beta", "schedule", "mode", "learning_rate", "lr_multiplier"}


def test_an_old_params_file_gets_its_batch_schedule_and_path_filled_in():
    """Written by a5ad0d8 under B = 1·d: its records have no batch, schedule or mode; the frame has them."""
    results = results_io.load(DATA / "params-ratio-a5ad0d8.json")
    assert not {"batch", "schedule", "mode"} & set(results.records[0])
    frame = noise_records.frame(results)
    assert NAMED <= set(frame.columns)
    assert (frame["batch"] == frame["dim"] * frame["batch_ratio"]).all()
    assert set(frame["schedule"]) == {"constant"} and set(frame["mode"]) == {"simulate"}
    assert len(frame) == len(results.records)


def test_old_noise_files_keep_their_fields_and_a_complete_frame_is_left_as_it_is():
    for name, mode in (("noise-simulate-945cbd5.npz", "simulate"), ("noise-exact-945cbd5.json", "exact")):
        results = results_io.load(DATA / name)
        frame = noise_records.frame(results)
        assert NAMED <= set(frame.columns) and set(frame["mode"]) == {mode}
    complete = pd.DataFrame.from_records([synthetic.record(4, 1.0, 0, 10)])
    assert noise_records.filled(complete, synthetic.meta()) is complete


def test_a_proportional_batch_rounds_as_the_simulator_does():
    records = [{**synthetic.record(0, 1.0, 0, 10, dim=d), "batch_ratio": 0.25} for d in (2.0, 6.0, 10.0, 20.0)]
    for r in records:
        del r["batch"]
    frame = noise_records.filled(pd.DataFrame.from_records(records), synthetic.meta(sweep="params"))
    assert list(frame["batch"]) == [1.0, 2.0, 2.0, 5.0]  # at least 1; 1.5 and 2.5 round half to even


def test_methods_without_beta_keep_one_beta_and_heavy_ball_keeps_every_beta():
    records = [synthetic.record(4, 1.0, 0, 10, method=m, beta=b) for m in ("sgd", "heavy-ball") for b in (0.9, 0.5)]
    frame = noise_records.own_settings(pd.DataFrame.from_records(records))
    assert list(zip(frame["method"], frame["beta"])) == [("sgd", 0.5), ("heavy-ball", 0.9), ("heavy-ball", 0.5)]


def test_records_carry_every_named_field_at_run_time(tmp_path):
    """Both paths, and a params sweep under a proportional rule (B = ratio·d, which the simulator computes)."""
    from otod.core import results as results_io
    from otod.noise.options import noise_config, params_configs
    from otod.noise.runner import run

    config, mode = noise_config(batch="1,4", method="sgd", mode="exact", dim=20, target="0.5", lr="1")
    exact = results_io.load(run(config, mode, out=str(tmp_path / "exact")).path).records
    ((_, config),), mode = params_configs(dim="8,20", batch_rule="proportional:0.25", method="sgd", mode="simulate",
                                          seeds=2, target="0.3", lr="1")
    params = results_io.load(run(config, mode, out=str(tmp_path / "params")).path).records
    for r in exact + params:
        assert NAMED <= set(r), set(r)
    assert {(r["dim"], r["batch"]) for r in params} == {(8.0, 2.0), (20.0, 5.0)}
    assert {r["mode"] for r in params} == {"simulate"} and {r["mode"] for r in exact} == {"exact"}
    assert np.isfinite([r["beta"] for r in params]).all()
