"""Benchmark: a 10⁶-record results file written, read and fitted in each format: Parquet (``.parquet``, the
default, `otod.core.parquet`), otod's npz (``.npz``) and JSON (``.json``, otod-results/2).

The records are synthetic but realistic (`synthetic_results.py`: every field a condition sweep writes, from a
seed). Write = `results.save` from the list of dicts (each columnar format turns them into columns first);
read = `results.load` (verified against the file's checksums) + `Results.to_pandas()`, the data frame a user
works on; every frame is checked equal to the one built from the saved records (and, for Parquet, to
``pandas.read_parquet``'s). The formats alternate over ``--repeats`` runs, their order rotating each run. Then
the metadata gets what a sweep stores after its last chunk (FLOPs per iteration and the exact theory's medians,
`synthetic_results.sweep_theory`: timed, paid once per sweep) and ``otod fit`` runs on the file of each of
``--fit-formats`` in a fresh process, alternating, ``--fit-repeats`` times; their reports must be identical.
``--compressions`` adds issue 11's comparison of npz member compressions (write time against size).

    python3 benchmarks/bench_results.py [--records 1000000] [--repeats 5] [--fit-repeats 5]
        [--formats parquet,npz,json] [--fit-formats parquet,npz] [--compressions]
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import numpy as np  # noqa: E402

from otod.core import columns as columns_io  # noqa: E402
from otod.core import results as results_io  # noqa: E402
from otod.core.results import cpu_model  # noqa: E402
from synthetic_results import synthetic  # noqa: E402


#: The npz member compressions compared on one table: write time against size.
COMPRESSIONS = {"stored": (zipfile.ZIP_STORED, None), "deflate-1": (zipfile.ZIP_DEFLATED, 1),
                "deflate-6": (zipfile.ZIP_DEFLATED, 6)}


def compare_compressions(meta: dict, records: list, folder: Path, repeats: int) -> None:
    """Write the same `Table` with each member compression (alternating, ``repeats`` runs) and load it back to
    columns, verified: the cost of compression alone, the dict → column conversion left out (timed once)."""
    t = time.perf_counter()
    table = columns_io.table_of(records)
    print(f"\nbuilding the columns from the {len(records)} dicts (every npz save does this): "
          f"{time.perf_counter() - t:.2f} s")
    meta = results_io.jsonable(dict(meta, record_count=len(records)))
    times = {k: {"write": [], "load": []} for k in COMPRESSIONS}
    sizes = {}
    for rep in range(repeats):
        order = list(COMPRESSIONS)[rep % len(COMPRESSIONS):] + list(COMPRESSIONS)[:rep % len(COMPRESSIONS)]
        for name in order:
            path = folder / f"c-{name}.npz"
            t = time.perf_counter()
            with results_io.atomic_file(path, "wb") as f:
                columns_io.write_table(f, meta, table, *COMPRESSIONS[name])
            times[name]["write"].append(time.perf_counter() - t)
            sizes[name] = path.stat().st_size
            t = time.perf_counter()
            loaded = results_io.load(path).table
            times[name]["load"].append(time.perf_counter() - t)
            assert loaded.length == table.length
    print(f"{'members':10} {'write median':>13} {'load median':>12} {'size MB':>8}   (write: the table only; load: "
          "read + verify)")
    for name in COMPRESSIONS:
        print(f"{name:10} {statistics.median(times[name]['write']):12.2f}s "
              f"{statistics.median(times[name]['load']):11.2f}s {sizes[name] / 1e6:8.1f}")
    for a, b in (("deflate-1", "stored"), ("deflate-6", "deflate-1")):
        ratios = [x / y for x, y in zip(times[a]["write"], times[b]["write"])]
        print(f"write {a}/{b}: per-run ratios {', '.join(f'{r:.2f}' for r in ratios)}; median "
              f"{statistics.median(ratios):.2f}; size {a}/{b} {sizes[a] / sizes[b]:.2f}")


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def ratios(a: list[float], b: list[float]) -> str:
    per_run = [x / y for x, y in zip(a, b)]
    return f"per-run ratios {', '.join(f'{r:.2f}' for r in per_run)}; median {statistics.median(per_run):.2f}"


def write_and_read(meta: dict, records: list, folder: Path, names: list[str], repeats: int) -> dict:
    """Save (`results.save`) and read back (`results.load` + `Results.to_pandas`) each format in rotating order,
    ``repeats`` runs; every frame is checked equal to the one built from the saved records. Returns the times."""
    import pandas as pd

    expected = results_io.Results(meta, records).to_pandas()
    times = {name: {"write": [], "load": [], "to_pandas": [], "read": []} for name in names}
    sizes = {}
    for rep in range(repeats):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            path = folder / f"r.{name}"
            path.unlink(missing_ok=True)
            _, took = timed(lambda: results_io.save(path, meta, records))
            times[name]["write"].append(took)
            sizes[name] = path.stat().st_size
            loaded, load_s = timed(lambda: results_io.load(path))
            frame, frame_s = timed(loaded.to_pandas)
            times[name]["load"].append(load_s)
            times[name]["to_pandas"].append(frame_s)
            times[name]["read"].append(load_s + frame_s)
            pd.testing.assert_frame_equal(frame, expected)
            if name == "parquet":
                pd.testing.assert_frame_equal(pd.read_parquet(path), expected)
            del loaded, frame
        print(f"run {rep + 1} (load {os.getloadavg()[0]:.1f}): " + ", ".join(
            f"{n} write {times[n]['write'][-1]:.2f} s read {times[n]['read'][-1]:.2f} s" for n in names), flush=True)
    print(f"\n{'format':8} {'write median':>13} {'read median':>12} {'(load':>7} {'+ to_pandas)':>13} {'size MB':>8}")
    for name in names:
        t = {k: statistics.median(v) for k, v in times[name].items()}
        print(f"{name:8} {t['write']:12.2f}s {t['read']:11.2f}s {t['load']:6.2f}s {t['to_pandas']:12.2f}s "
              f"{sizes[name] / 1e6:8.1f}")
    for a, b in (("parquet", "npz"), ("json", "parquet")):
        if a in times and b in times:
            for what in ("write", "read"):
                print(f"{a}/{b} {what}: {ratios(times[a][what], times[b][what])}")
    return times


def fit_runs(paths: dict[str, Path], repeats: int) -> None:
    """``otod fit FILE`` in a fresh process per run, the formats alternating (order rotating each run); the
    reports (less the line naming the file) must be identical."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    names = list(paths)
    times = {name: [] for name in names}
    reports = {}
    for rep in range(repeats):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            out, took = timed(lambda: subprocess.run([sys.executable, "-m", "otod", "fit", str(paths[name])], env=env,
                                                     check=True, capture_output=True, text=True))
            times[name].append(took)
            reports[name] = out.stdout.split("\n", 1)[1]
        print(f"fit run {rep + 1} (load {os.getloadavg()[0]:.1f}): "
              + ", ".join(f"{n} {times[n][-1]:.2f} s" for n in names), flush=True)
    if len(set(reports.values())) != 1:
        sys.exit("otod fit reports differ between formats")
    for name in names:
        print(f"otod fit on the {name} file (fresh process): {', '.join(f'{t:.2f}' for t in times[name])} s; "
              f"median {statistics.median(times[name]):.2f} s")
    for a, b in itertools.combinations(names, 2):
        print(f"fit {a}/{b}: {ratios(times[a], times[b])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10 ** 6)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fit-repeats", type=int, default=5)
    parser.add_argument("--formats", default="parquet,npz,json",
                        help="formats written and read, alternating (comma list of parquet, npz, json)")
    parser.add_argument("--fit-formats", default="parquet,npz", help="formats `otod fit` runs on, alternating")
    parser.add_argument("--compressions", action="store_true", help="also compare the npz member compressions")
    args = parser.parse_args()
    import pandas
    import pyarrow

    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  CPU: {cpu_model()} "
          f"({os.cpu_count()} cores)  load before: {os.getloadavg()}")
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, pandas {pandas.__version__}, "
          f"pyarrow {pyarrow.__version__}")
    (meta, records), took = timed(lambda: synthetic(args.records))
    print(f"{len(records)} synthetic records in {took:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        write_and_read(meta, records, Path(tmp), args.formats.split(","), args.repeats)
        if args.compressions:
            compare_compressions(meta, records, Path(tmp), args.repeats)
        if args.fit_repeats:
            from synthetic_results import sweep_theory

            from otod.core.config import SweepConfig

            theory, took = timed(lambda: sweep_theory(SweepConfig.from_dict(meta["config"])))
            meta.update(theory)
            print(f"the theory a sweep stores after its last chunk (FLOPs, exact medians of {len(records)} lanes): "
                  f"{took:.1f} s, once", flush=True)
            paths = {name: results_io.save(Path(tmp) / f"fit.{name}", meta, records)
                     for name in args.fit_formats.split(",")}
            fit_runs(paths, args.fit_repeats)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
