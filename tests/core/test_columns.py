"""Results as NumPy columns (`otod.core.columns`, ``.npz``): the same records as JSON, the same fits, refusals of
damaged files, `convert`, `merge` of npz parts, the default format (Parquet) at any lane count, and pandas in one
line."""

from __future__ import annotations

import math
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from otod.condition.options import condition_sweep
from otod.core import journal as journal_io
from otod.core import results as results_io
from otod.core.errors import OtodError
from otod.core.config import default_path, lane_count, read_config
from otod.core.finish import merge
from otod.core.sweep import run_sweep

from tests.conftest import SMALL_RANDOM, run_shares_in_turn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from synthetic_results import synthetic  # noqa: E402

#: Every kind of field a record may hold: bool, small and huge ints, floats (NaN and ∞ become None, as JSON has
#: no NaN), strings, None, a field only some records have, lists of ints with None, lists of floats, lists of
#: different lengths, dicts, and a field that is None everywhere.
RECORDS = [
    {"flag": True, "n": 3, "big": 2 ** 62, "huge": 10 ** 30, "x": 1.5, "s": "converged", "maybe": None,
     "hits": [1, None, 3], "gaps": [0.5, 1e-300], "ragged": [1], "d": {"a": 1}, "never": None, "lr_on_edge": True},
    {"flag": False, "n": -7, "big": -2 ** 62, "huge": 1, "x": float("nan"), "s": "", "maybe": 2.5,
     "hits": [None, None, None], "gaps": [float("inf"), -0.0], "ragged": [1, 2.5, "a"], "d": None, "never": None},
    {"flag": True, "n": 0, "big": 0, "huge": -1, "x": -0.0, "s": "censored κ", "maybe": None, "hits": None,
     "gaps": [2.0, 3.0], "ragged": [], "d": {"b": [1, None]}, "never": None, "only_here": "z"},
]


def _expected(records):
    return results_io.jsonable(records)


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_every_field_type_round_trips_to_the_same_records(tmp_path, suffix):
    path = results_io.save(tmp_path / f"r{suffix}", {"kind": "test"}, RECORDS)
    loaded = results_io.load(path)
    assert loaded.records == _expected(RECORDS)
    assert [list(r) for r in loaded.records] == [list(r) for r in _expected(RECORDS)]  # field order kept
    assert loaded.meta["record_count"] == 3
    if suffix == ".npz":  # readable without otod, no pickle
        with np.load(path, allow_pickle=False) as npz:
            assert "header" in npz.files


def test_columns_are_typed_arrays_with_nan_or_none_where_missing(tmp_path):
    results_io.save(tmp_path / "r.npz", {}, RECORDS)
    cols = results_io.load(tmp_path / "r.npz").columns()
    assert cols["n"].dtype == np.int64 and cols["n"].tolist() == [3, -7, 0]
    assert cols["flag"].dtype == bool
    assert np.isnan(cols["x"][1]) and cols["x"][0] == 1.5
    assert cols["hits[0]"].tolist()[0] == 1.0 and np.isnan(cols["hits[1]"]).tolist() == [True, True, True]
    assert cols["s"].tolist() == ["converged", "", "censored κ"]
    assert cols["lr_on_edge"].tolist() == [True, None, None]
    assert set(cols) == set(results_io.Results({}, _expected(RECORDS)).columns())  # the same from dicts


def test_a_synthetic_sweep_of_10k_records_is_identical_in_both_formats(tmp_path):
    meta, records = synthetic(10_000, seeds=50)
    for suffix in (".json", ".npz"):
        results_io.save(tmp_path / f"s{suffix}", meta, records)
    a, b = results_io.load(tmp_path / "s.json"), results_io.load(tmp_path / "s.npz")
    assert a.records == b.records == records
    assert a.meta == b.meta
    assert (tmp_path / "s.npz").stat().st_size < (tmp_path / "s.json").stat().st_size / 3


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """One tiny condition sweep run twice, into a .json and an .npz file."""
    folder = tmp_path_factory.mktemp("sweeps")
    config = condition_sweep((1.0, 4.0, 16.0, 64.0, 256.0), methods=("gd", "heavy-ball"), problem=SMALL_RANDOM,
                             seeds=3)
    return run_sweep(config, out_dir=folder / "a.json"), run_sweep(config, out_dir=folder / "a.npz")


def test_a_sweep_saved_as_npz_and_json_gives_identical_records_and_fits(sweeps):
    from otod.condition.records import condition_analysis

    ran_json, ran_npz = sweeps
    a, b = results_io.load(ran_json.path), results_io.load(ran_npz.path)
    assert ran_npz.path.suffix == ".npz" and a.records == b.records == ran_json.records
    fits_a, fits_b = (condition_analysis(r).groups[0].fits for r in (a, b))
    assert len(fits_a) == 2 and all(math.isfinite(f.exponent) for f in fits_a)
    assert fits_a == fits_b


def _rewrite(path: Path, target: Path, change) -> None:
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(target, "w") as out:
        for info in src.infolist():
            out.writestr(info.filename, change(info.filename, src.read(info.filename)))


def test_an_edited_or_truncated_npz_is_refused_in_one_line(sweeps, tmp_path):
    path = sweeps[1].path
    header = results_io.load(path).table.columns
    iterations = next(i for i, c in enumerate(header) if c.name == "iterations")

    def bump(name, data):  # the last byte of the iterations column: one record's count, changed
        return data[:-1] + bytes([data[-1] ^ 1]) if name == f"c{iterations}.values.npy" else data

    _rewrite(path, tmp_path / "edited.npz", bump)
    with pytest.raises(OtodError, match="column 'iterations' does not match its checksum"):
        results_io.load(tmp_path / "edited.npz")
    (tmp_path / "cut.npz").write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(OtodError, match="truncated or damaged"):
        results_io.load(tmp_path / "cut.npz")
    utf32 = lambda text: text.encode("utf-32-le")  # noqa: E731 (NumPy stores str arrays as UTF-32)
    assert utf32('"seeds":3') in zipfile.ZipFile(path).read("header.npy")
    _rewrite(path, tmp_path / "meta.npz", lambda name, data: data.replace(utf32('"seeds":3'), utf32('"seeds":4')))
    with pytest.raises(OtodError, match="header does not match its checksum"):
        results_io.load(tmp_path / "meta.npz")


def test_convert_round_trips_and_refuses_bad_input_with_exit_code_2(sweeps, tmp_path):
    from otod.cli import main

    source = sweeps[0].path
    runner = CliRunner()
    for a, b in ((source, tmp_path / "c.npz"), (tmp_path / "c.npz", tmp_path / "c.json")):
        result = runner.invoke(main, ["convert", str(a), str(b)])
        assert result.exit_code == 0, result.output
    back = results_io.load(tmp_path / "c.json")
    assert back.records == sweeps[0].records and back.meta == results_io.load(source).meta
    for args, fragment in (([str(source), str(tmp_path / "c.json")], "already exists"),
                           ([str(source), str(tmp_path / "c.csv")], "unknown format '.csv'"),
                           ([str(tmp_path / "none.npz"), str(tmp_path / "d.json")], "no such file")):
        result = runner.invoke(main, ["convert", *args])
        assert result.exit_code == 2 and fragment in result.output and "Traceback" not in result.output


def test_merge_of_npz_parts_equals_the_one_process_result(tmp_path):
    config = condition_sweep((1.0, 5.0, 25.0, 125.0), methods=("gd", "heavy-ball"), problem=SMALL_RANDOM,
                             seeds=2, chunk_seconds=1e-9)
    one = run_sweep(config, path=tmp_path / "one.json")
    path = tmp_path / "x.npz"
    run_shares_in_turn(config, path)
    if path.exists():
        path.unlink()
    merged = merge([journal_io.part_path(path, i, 2) for i in (0, 1)])
    assert merged.path == path and results_io.load(path).records == one.records
    assert results_io.load(path).meta["chunks"] == one.meta["chunks"]


def test_default_format_is_parquet_at_every_lane_count(tmp_path):
    """Sweeps of 10⁵ lanes and more wrote .npz by default, smaller ones .json: now every one writes .parquet."""
    lanes = 100_000
    small = condition_sweep(tuple(float(k) for k in range(1, 1 + lanes // 16)), methods=("gd",),
                            problem=SMALL_RANDOM, seeds=16)
    big = condition_sweep(tuple(float(k) for k in range(1, 2 + lanes // 16)), methods=("gd",),
                          problem=SMALL_RANDOM, seeds=16)
    assert lane_count(small) == lanes and lane_count(big) == lanes + 16
    two = condition_sweep((1.0, 2.0), methods=("gd", "adam"), problem=SMALL_RANDOM, seeds=3)
    assert lane_count(two) == 2 * 3 * (1 + len(two.lr_grid))  # adam is tuned: one lane per multiplier
    for config in (two, small, big):
        assert default_path(config, tmp_path) == tmp_path / f"condition-{config.digest()}.parquet"


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_pandas_reads_any_format_in_one_line(sweeps, suffix):
    pd = pytest.importorskip("pandas")
    import otod.results

    path = sweeps[0].path if suffix == ".json" else sweeps[1].path
    frame = pd.DataFrame(otod.results.load(path).columns())
    assert len(frame) == len(sweeps[0].records)
    assert frame["iterations"].tolist() == [r["iterations"] for r in sweeps[0].records]
    assert frame["method"].tolist() == [r["method"] for r in sweeps[0].records]


def test_stored_exact_medians_give_the_recomputed_predictions(sweeps):
    from otod.condition.predictions import exact_medians, predictions

    meta = results_io.load(sweeps[0].path).meta
    assert "exact_medians" not in meta  # run_sweep alone stores none: predictions compute them
    config = read_config(meta)
    stored = {**meta, "exact_medians": exact_medians(config, meta["precision"], [])}
    kappas = config.values("kappa")
    for tol in (1e-6, 1e-3, 1e-1):
        fresh, kept = predictions(meta, tol), predictions(stored, tol)
        for method in ("gd", "heavy-ball"):
            values = [fresh.exact(method, k) for k in kappas]
            assert all(v is not None and v >= 1 for v in values)
            assert [kept.exact(method, k) for k in kappas] == values
            assert kept.slope(method, kappas[1:]) == fresh.slope(method, kappas[1:])
