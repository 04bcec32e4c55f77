"""Results files: round trip, plain JSON, versioned format, and clear refusals."""

import json

import pytest

from otod.core import results
from otod.core.errors import OtodError


def test_save_load_roundtrip_and_plain_json(tmp_path):
    path = results.save(tmp_path / "a" / "r.json", {"kind": "sweep", "x": float("nan")}, [{"v": 1, "g": 2.5}])
    loaded = results.load(path)
    assert loaded.records == [{"v": 1, "g": 2.5}] and loaded.meta["x"] is None and loaded.meta["record_count"] == 1
    payload = json.loads(path.read_text())
    assert payload["format"] == "otod-results/2" and payload["records"][0]["g"] == 2.5  # readable without otod
    assert not list(path.parent.glob(".*tmp"))


@pytest.mark.parametrize("content,fragment", [(None, "no such file"), ("{not json", "not readable"),
                                              ('{"format": "other"}', "not an otod results file"),
                                              ('{"format": "otod-results/9", "meta": {}, "records": []}',
                                               "format 'otod-results/9' is not one this otod reads"),
                                              ("\x00\xff", "not readable")])
def test_bad_files_raise_one_clear_error(tmp_path, content, fragment):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_bytes(content.encode("latin-1"))
    with pytest.raises(OtodError, match=fragment):
        results.load(path)


V1_CONFIG = {"values": [2.0, 20.0], "sweep": "condition", "methods": ["gd"],
             "problem": {"kind": "quadratic", "dim": 8, "spectrum": "log-uniform", "basis": "eigen",
                         "start": "random"},
             "tol": 1e-6, "max_iters": None, "seeds": 1, "seed": 0, "lr": "theory", "lr_grid": [1.0], "x64": None,
             "options": {"damping": 1e-4}, "chunk_lanes": 16384,
             "resolved": {"max_iters": 1000, "x64": False, "learning_rates": [1.0]}}


def _v1(complete=True):
    records = [{"sweep": "condition", "sweep_value": k, "method": "gd", "seed": 0, "lr_multiplier": 1.0,
                "learning_rate": 1 / k, "iterations": it, "status": "converged", "final_gap": 9e-7}
               for k, it in ((2.0, 11), (20.0, 120))]
    meta = {"kind": "sweep", "sweep": "condition", "digest": "0123456789", "config": V1_CONFIG,
            "complete": complete, "finished_chunks": [["gd", 0]], "precision": "float32",
            "environment": {"device": "cpu"}, "wall_time_s": 0.5, "run_time_s": 0.1, "compile_count": 1,
            "compile_time_s": 0.3, "flops_per_iteration": {"gd": 60.0}}
    return {"format": "otod-results/1", "meta": meta, "records": records}


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_edited_metadata_is_refused_in_either_format(tmp_path, suffix):
    """The metadata checksum is checked on load; files written before it (no meta_sha256) still load."""
    path = results.save(tmp_path / f"r{suffix}", {"kind": "sweep", "flops_per_iteration": 10.0},
                        [{"v": 1, "g": 2.5}])
    assert results.load(path).meta["flops_per_iteration"] == 10.0
    if suffix == ".json":
        payload = json.loads(path.read_text())
        payload["meta"]["flops_per_iteration"] = 1.0
        path.write_text(json.dumps(payload))
    else:  # an edit that also re-signs the header's own digest, so only meta_sha256 can catch it
        import hashlib

        import numpy as np

        with np.load(path) as npz:
            members = {k: npz[k] for k in npz.files}
        text = str(members["header"][()]).replace('"flops_per_iteration":10.0', '"flops_per_iteration":1.0')
        assert '"flops_per_iteration":1.0' in text
        members["header"] = np.asarray(text)
        members["header.sha256"] = np.asarray(hashlib.sha256(text.encode()).hexdigest())
        with open(path, "wb") as f:
            np.savez(f, **members)
    with pytest.raises(OtodError, match="its metadata does not match its checksum"):
        results.load(path)
    if suffix == ".json":
        del payload["meta"]["meta_sha256"]
        path.write_text(json.dumps(payload))
        assert results.load(path).meta["flops_per_iteration"] == 1.0


def test_format_1_files_still_load_with_their_axis_by_name(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_v1()))
    loaded = results.load(path)
    assert [r["kappa"] for r in loaded.records] == [2.0, 20.0]
    assert all("sweep_value" not in r for r in loaded.records)
    assert loaded.meta["migrated_from"] == "otod-results/1" and loaded.meta["config"]["axes"] == {"kappa": [2.0, 20.0]}
    from otod.condition.report import text_report

    assert "fitted scaling laws" in text_report(loaded)


def test_an_incomplete_format_1_file_is_refused(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_v1(complete=False)))
    with pytest.raises(OtodError, match="incomplete sweep written by otod 0.1"):
        results.load(path)


def test_environment_records_versions_device_and_provenance():
    env = results.environment()
    assert {"otod", "jax", "numpy", "optax", "backend", "device", "cpu", "blas", "utc_time", "command_line"} <= set(env)
    assert env["utc_time"].endswith("+00:00")


@pytest.mark.slow  # a second process: 3 s
@pytest.mark.skipif(results.blas_kernels() is None, reason="no SciPy wheel's OpenBLAS here")
def test_blas_kernels_name_the_kernel_set_openblas_chose():
    """`blas_kernels` reads the kernel set in the running library: ``OPENBLAS_CORETYPE`` (read when OpenBLAS loads,
    so in a second process) changes it, and each kernel set rounds LAPACK's solves differently
    (tests/depth/test_methods.py)."""
    import os
    import subprocess
    import sys

    here = results.blas_kernels()
    code = "from otod.core.results import blas_kernels; print(blas_kernels())"
    other = "Haswell" if "Katmai" in here or "Prescott" in here else "Prescott"
    there = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OPENBLAS_CORETYPE": other},
                           capture_output=True, text=True, timeout=120)
    assert here.startswith("OpenBLAS ") and there.stdout.strip().startswith("OpenBLAS ")
    assert there.stdout.strip() != here


def test_digest_is_stable_and_order_independent():
    assert results.digest({"a": 1, "b": [1, 2]}) == results.digest({"b": [1, 2], "a": 1})
    assert results.digest({"a": 1}) != results.digest({"a": 2})


def test_kept_measures_once_then_reads_back_and_a_committed_figure_never_measures(tmp_path):
    """`results.kept`: the first call measures and writes ``<folder>/<kind>-<digest>.json`` (kind, config and
    environment in its metadata); a second call with the same config reads it back without measuring, and gives the
    same records; another config is another file; under a figure that reads committed results a missing file is
    refused in one line naming it, and nothing is measured."""
    from otod.core.figure_guard import drawing

    calls = []
    measured = [{"size": 1, "rms": 0.1 + 0.2}, {"size": 2, "rms": 1 / 3}]  # floats that print long

    def measure():
        calls.append(1)
        return [dict(r) for r in measured]

    first = results.kept("toy-draws", {"draws": 5}, measure, tmp_path)
    again = results.kept("toy-draws", {"draws": 5}, measure, tmp_path)
    assert len(calls) == 1 and again.records == first.records == measured
    assert first.path == tmp_path / f"toy-draws-{results.digest({'draws': 5})}.json"
    assert (first.meta["kind"], first.meta["config"], first.meta["complete"]) == ("toy-draws", {"draws": 5}, True)
    assert "utc_time" in first.meta["environment"]
    results.kept("toy-draws", {"draws": 6}, measure, tmp_path)
    assert len(calls) == 2 and len(list(tmp_path.glob("toy-draws-*.json"))) == 2
    with drawing("g/light", committed=True), pytest.raises(OtodError, match="g/light reads its committed results"):
        results.kept("toy-draws", {"draws": 7}, measure, tmp_path)
    assert len(calls) == 2
