"""Results as Parquet (`otod.core.parquet`, the default format): exactly the records saved, pandas and pyarrow read
the file without otod, damaged or foreign files are refused in one line and never overwritten, resume and lock
work on the default file, `otod convert` between every pair of formats, and ``otod.load(path).to_pandas()`` is
the same frame for every format."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import otod
from otod.cli import main
from otod.condition.options import condition_sweep
from otod.core import journal as journal_io
from otod.core import results as results_io
from otod.core.errors import Interrupted, OtodError
from tests.core.test_sweep import _interrupt_after
from otod.core.config import default_path
from otod.core.sweep import run_sweep

from tests.conftest import SMALL_RANDOM
from tests.core.test_columns import RECORDS, synthetic

FORMATS = (".parquet", ".json", ".npz")


def _sweep_like(n: int = 2000) -> tuple[dict, list[dict]]:
    """A condition sweep's meta and records (synthetic) with what tuned sweeps add: ``lr_selected`` (a bool) on
    every record, ``lr_on_edge`` (True, False or None) on the selected ones only; chunk checksums recomputed."""
    meta, records = synthetic(n, seeds=10, chunk=500)
    for i, r in enumerate(records):
        r["lr_selected"] = i % 3 == 0
        if r["lr_selected"]:
            r["lr_on_edge"] = None if i % 9 == 0 else i % 2 == 0
    start = 0
    for chunk in meta["chunks"]:
        chunk["sha256"] = results_io.records_checksum(records[start:start + chunk["lanes"]])
        start += chunk["lanes"]
    return meta, records


def test_every_field_type_round_trips_and_pandas_reads_the_records_in_one_line(tmp_path):
    path = results_io.save(tmp_path / "r.parquet", {"kind": "test"}, RECORDS)
    loaded = results_io.load(path)
    expected = results_io.jsonable(RECORDS)
    assert loaded.records == expected
    assert [list(r) for r in loaded.records] == [list(r) for r in expected]  # field order kept
    assert [type(v) for r in loaded.records for v in r.values()] == [type(v) for r in expected for v in r.values()]
    frame = pd.read_parquet(path)
    assert len(frame) == 3 and frame["n"].dtype == np.int64 and frame["n"].tolist() == [3, -7, 0]
    assert frame["flag"].dtype == bool and frame["flag"].tolist() == [True, False, True]
    assert frame["big"].tolist() == [2 ** 62, -2 ** 62, 0]
    assert frame["x"].dtype == np.float64 and frame["x"].iloc[0] == 1.5 and np.isnan(frame["x"].iloc[1])
    assert np.signbit(frame["x"].iloc[2])
    assert pd.api.types.is_string_dtype(frame["s"]) and frame["s"].tolist() == ["converged", "", "censored κ"]
    assert frame["hits[0]"].tolist()[0] == 1.0 and frame["hits[1]"].isna().all() and "hits" not in frame
    assert frame["lr_on_edge"].tolist() == [True, None, None] and frame["never"].isna().all()
    assert frame["only_here"].isna().tolist() == [True, True, False]
    assert json.loads(frame["d"].iloc[2]) == {"b": [1, None]}  # a dict: its JSON text


@pytest.mark.parametrize("records", [[], [{}, {}], [{"a": None}, {}], [{"hits": [1, 2]}, {"hits[0]": 5}]])
def test_edge_cases_round_trip(tmp_path, records):
    """No records, records without fields, a field only None or absent, and a list whose split name is taken."""
    path = results_io.save(tmp_path / "r.parquet", {}, records)
    loaded = results_io.load(path)
    assert loaded.records == records and len(loaded) == len(records)
    if any(records):  # Parquet has no rows without columns
        assert len(pd.read_parquet(path)) == len(records)


def test_the_metadata_reads_with_pyarrow_alone(tmp_path):
    meta, records = _sweep_like(1000)
    path = results_io.save(tmp_path / "r.parquet", meta, records)
    probe = ("import json, sys\nimport pyarrow.parquet as pq\n"
             f"header = json.loads(pq.read_schema({str(path)!r}).metadata[b'otod'])\n"
             "print(json.dumps([header['meta'], 'otod' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert out.returncode == 0, out.stderr
    read, imported_otod = json.loads(out.stdout)
    assert read == results_io.load(path).meta and not imported_otod
    assert read["record_count"] == 1000 and read["meta_sha256"] == results_io.meta_checksum(read)
    assert read["config"] == meta["config"] and read["chunks"] == meta["chunks"]


def _convert(source: Path, target: Path):
    result = CliRunner().invoke(main, ["convert", str(source), str(target)])
    assert result.exit_code == 0, result.output
    return result


def test_json_to_parquet_to_json_is_bit_identical(tmp_path):
    """None, a field on some records only (lr_on_edge), bools, ints and floats: the JSON written from the Parquet
    file (and from Parquet through npz) is the original file, byte for byte."""
    meta, records = _sweep_like()
    source = results_io.save(tmp_path / "a.json", meta, records)
    _convert(source, tmp_path / "b.parquet")
    _convert(tmp_path / "b.parquet", tmp_path / "c.json")
    assert (tmp_path / "c.json").read_bytes() == source.read_bytes()
    _convert(tmp_path / "b.parquet", tmp_path / "d.npz")
    _convert(tmp_path / "d.npz", tmp_path / "e.parquet")
    _convert(tmp_path / "e.parquet", tmp_path / "f.json")
    assert (tmp_path / "f.json").read_bytes() == source.read_bytes()
    assert (tmp_path / "e.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


@pytest.mark.parametrize("source,target", list(itertools.permutations(FORMATS, 2)))
def test_convert_between_every_pair_of_formats_and_refuse_an_existing_target(tmp_path, source, target):
    meta, records = _sweep_like(1000)
    src = results_io.save(tmp_path / f"a{source}", meta, records)
    result = _convert(src, tmp_path / f"b{target}")
    assert f"b{target}: 1000 records from" in result.output
    back = results_io.load(tmp_path / f"b{target}")
    assert back.records == records and back.meta == results_io.load(src).meta
    before = (tmp_path / f"b{target}").read_bytes()
    again = CliRunner().invoke(main, ["convert", str(src), str(tmp_path / f"b{target}")])
    assert again.exit_code == 2 and "already exists" in again.output and "Traceback" not in again.output
    assert (tmp_path / f"b{target}").read_bytes() == before


def test_to_pandas_is_the_frame_pandas_reads_for_every_format(tmp_path):
    meta, records = _sweep_like(1000)
    paths = {s: results_io.save(tmp_path / f"r{s}", meta, records) for s in FORMATS}
    frame = pd.read_parquet(paths[".parquet"])
    assert list(frame.columns[:3]) == ["sweep", "kappa", "method"] and "hits[5]" in frame
    assert frame["lr_on_edge"].tolist() == [r.get("lr_on_edge") for r in records]
    assert frame["iterations"].tolist() == [r["iterations"] for r in records]
    for suffix, path in paths.items():
        pd.testing.assert_frame_equal(otod.load(path).to_pandas(), frame)
        pd.testing.assert_frame_equal(otod.load(str(path)).to_pandas(), frame)
    assert otod.load(paths[".json"]).records == records


def test_a_synthetic_sweep_of_10k_records_is_the_same_as_json_and_as_small_as_npz(tmp_path):
    meta, records = synthetic(10_000, seeds=50)
    for suffix in FORMATS:
        results_io.save(tmp_path / f"s{suffix}", meta, records)
    a, b = results_io.load(tmp_path / "s.json"), results_io.load(tmp_path / "s.parquet")
    assert b.records == a.records == records and b.meta == a.meta
    size = (tmp_path / "s.parquet").stat().st_size
    assert size < (tmp_path / "s.json").stat().st_size / 3 and size < 1.5 * (tmp_path / "s.npz").stat().st_size


# -- refusals ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A tiny condition sweep written to a Parquet file: (config, path)."""
    config = condition_sweep((2.0, 20.0), methods=("gd", "newton"), problem=SMALL_RANDOM, seeds=4)
    return config, run_sweep(config, path=tmp_path_factory.mktemp("small") / "small.parquet").path


def _rewrite(path: Path, change_table=None, change_header=None) -> None:
    """Rewrite a Parquet results file through pyarrow with its table and/or otod header changed (as an edit in
    pandas or pyarrow would)."""
    table = pq.read_table(path)
    header = json.loads(table.schema.metadata[b"otod"])
    table = change_table(table) if change_table else table
    header = change_header(header) if change_header else header
    pq.write_table(table.replace_schema_metadata({b"otod": json.dumps(header).encode()}), path)


def _set(table, name: str, row: int, value):
    values = table.column(name).to_pylist()
    values[row] = value
    return table.set_column(table.column_names.index(name), name, pa.array(values, table.column(name).type))


def _edit_meta(header):
    header["meta"]["config"]["seeds"] = 3
    return header


def _edit_mask(header):
    spec = next(c for c in header["columns"] if c["name"] == "hits")
    spec["null"] = spec.get("null", "eJwDAAAAAAE=")
    return header


DAMAGES = {
    "edit a count": (lambda p: _rewrite(p, lambda t: _set(t, "iterations", 3, 999)), "do not match their checksum"),
    "edit a status": (lambda p: _rewrite(p, lambda t: _set(t, "status", 0, "censored")),
                      "do not match their checksum"),
    "edit a method": (lambda p: _rewrite(p, lambda t: _set(t, "method", 15, "gd")),  # the same labels, in order
                      "do not match their checksum"),
    "drop a record": (lambda p: _rewrite(p, lambda t: t.slice(0, t.num_rows - 1)), "hold 15 values for 16 records"),
    "edit the metadata": (lambda p: _rewrite(p, change_header=_edit_meta), "its metadata does not match its checksum"),
    "edit a column spec": (lambda p: _rewrite(p, change_header=_edit_mask), "do not match their checksum"),
    "retype a column": (lambda p: _rewrite(p, lambda t: t.set_column(t.column_names.index("seed"), "seed",
                                                                       t.column("seed").cast(pa.int32()))),
                        "column 'seed' is int32"),
    "truncate": (lambda p: p.write_bytes(p.read_bytes()[:-300]), "not readable as an otod Parquet file"),
    "cut in half": (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "truncated or damaged"),
    "foreign": (lambda p: pd.DataFrame({"iterations": [1, 2]}).to_parquet(p), "not an otod results file"),
    "not parquet": (lambda p: p.write_text("{}"), "truncated or damaged"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_or_foreign_parquet_is_refused_in_one_line_and_never_overwritten(tmp_path, small, damage):
    config, original = small
    path = tmp_path / original.name
    shutil.copyfile(original, path)
    change, fragment = DAMAGES[damage]
    change(path)
    before = path.read_bytes()
    with pytest.raises(OtodError, match=f"results file {path}: .*{fragment}"):
        results_io.load(path)
    with pytest.raises(OtodError, match=f"results file {path}: .*{fragment}"):
        run_sweep(config, path=path)
    assert path.read_bytes() == before and not journal_io.journals(path)
    result = CliRunner().invoke(main, ["fit", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.startswith(f"otod: error: results file {path}: ") and result.output.count("\n") == 1


def test_a_flipped_byte_anywhere_is_refused_or_changes_nothing(tmp_path, small):
    """Every 5th byte of the file flipped in turn: the load is refused naming the file, or (a byte of Parquet's
    statistics or padding) gives back exactly the original records and metadata; most flips are refused."""
    original = results_io.load(small[1])
    data = small[1].read_bytes()
    path = tmp_path / "flipped.parquet"
    refused = 0
    for position in range(0, len(data), 5):
        path.write_bytes(data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1:])
        try:
            loaded = results_io.load(path)
        except OtodError as e:
            assert str(e).startswith(f"results file {path}: "), str(e)
            refused += 1
            continue
        assert loaded.records == original.records and loaded.meta == original.meta, position
    assert refused > 0.6 * len(range(0, len(data), 5))


def test_an_unknown_suffix_names_every_format(tmp_path):
    with pytest.raises(OtodError, match=r"name it \.parquet .*\.json .*\.npz"):
        results_io.save(tmp_path / "r.csv", {}, [])


# -- the default file: resume, lock, earlier defaults ------------------------------------------------------------




#: Two methods of one program and newton, two seeds, every κ its own chunk.
MANY_CHUNKS = dict(methods=("gd", "heavy-ball", "newton"), problem=SMALL_RANDOM, seeds=2, chunk_seconds=1e-9)


def test_an_interrupted_default_sweep_resumes_into_parquet_with_the_uninterrupted_records(tmp_path):
    config = condition_sweep((1.0, 5.0, 25.0, 125.0), **MANY_CHUNKS)
    full = run_sweep(config, path=tmp_path / "full.json")
    folder = tmp_path / "runs"
    with pytest.raises(Interrupted):
        run_sweep(config, out_dir=folder, progress=_interrupt_after(4))
    path = folder / f"condition-{config.digest()}.parquet"
    assert not path.exists() and journal_io.journal_path(path).exists()
    assert default_path(config, folder) == path
    resumed = run_sweep(config, out_dir=folder)
    assert resumed.path == path and resumed.meta["resumed_chunks"] == 4
    assert results_io.load(path).records == full.records and resumed.meta["chunks"] == full.meta["chunks"]
    assert not journal_io.journal_path(path).exists() and not path.with_name(path.name + ".lock").exists()
    with journal_io.lock(path), pytest.raises(OtodError, match="another otod run is writing it"):
        run_sweep(config, out_dir=folder)


@pytest.mark.parametrize("suffix,journal", [(".json", False), (".npz", False), (".json", True)])
def test_a_file_or_journal_of_an_earlier_default_format_is_read_back_or_resumed(tmp_path, suffix, journal):
    """Before Parquet, sweeps wrote ``<sweep>-<digest>.json`` (or ``.npz``) by default: the same command finds
    that file or its journal, so it neither recomputes a finished sweep nor orphans an interrupted one."""
    config = condition_sweep((2.0, 20.0), **MANY_CHUNKS)  # the programs of the test above: compiled already
    old = tmp_path / f"condition-{config.digest()}{suffix}"
    if journal:
        with pytest.raises(Interrupted):
            run_sweep(config, path=old, progress=_interrupt_after(1))
    else:
        run_sweep(config, path=old)
    assert default_path(config, tmp_path) == old
    again = run_sweep(config, out_dir=tmp_path)
    assert again.path == old and again.meta.get("read_back", False) is not journal
    assert not list(tmp_path.glob("*.parquet"))


def test_the_noise_exact_path_defaults_to_parquet(tmp_path):
    from otod.noise.exact import exact_path
    from otod.noise.options import noise_config

    config, _ = noise_config(batch="1,4", method="sgd", mode="exact", dim=20, target="0.5", lr="1")
    assert exact_path(config, tmp_path) == tmp_path / f"noise-exact-{config.digest()}.parquet"
    assert exact_path(config, tmp_path / "x.json") == tmp_path / "x.json"
    (tmp_path / f"noise-exact-{config.digest()}.json").write_text("{}")
    assert exact_path(config, tmp_path).suffix == ".json"
