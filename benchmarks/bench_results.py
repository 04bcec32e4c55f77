"""Benchmark: a 10⁶-record results file saved and loaded (and verified) in each format, and `otod fit` on it.

Formats: JSON (``.json``, otod-results/2), otod's npz (``.npz``, members deflated at level 1) and, when pyarrow
is importable, Parquet (the columns of `Results.columns`, zstd-compressed; pyarrow's own page checksums are its
only check). The records are synthetic but realistic (`synthetic_results.py`: every field a condition sweep
writes, from a seed). Every format's save and load alternate over ``--repeats`` runs (the order of formats rotates
each run); a load counts as done when the records (JSON) or the columns (npz, Parquet: `Results.columns()`) are in
memory, verified against their checksums. Each loaded set is
checked equal to the saved one (records for JSON, columns for the others; npz's records are also built from
its columns, timed, and checked equal). Then the metadata gets what a sweep stores after its last chunk (FLOPs
per iteration and the exact theory's medians, `synthetic_results.sweep_theory`: timed, paid once per sweep), and
``otod fit`` runs on the npz file, in a fresh process, ``--fit-repeats`` times. Between the two, the npz member
compressions (stored, deflate level 1 and 6) are compared on one table: write time against size.

    python3 benchmarks/bench_results.py [--records 1000000] [--repeats 5] [--fit-repeats 3]
"""

from __future__ import annotations

import argparse
import datetime
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


def save_parquet(path: Path, meta: dict, records: list) -> None:
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(results_io.Results(meta, records).columns())
    table = table.replace_schema_metadata({"otod": json.dumps(results_io.jsonable(meta))})
    pq.write_table(table, path, compression="zstd")


def load_parquet(path: Path) -> dict:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return {name: table.column(name).to_numpy() for name in table.column_names}


def same_columns(a: dict, b: dict) -> bool:
    def norm(v):
        v = np.asarray(v)
        return v.astype(object) if v.dtype.kind in "OUS" else v.astype(float)

    return a.keys() == b.keys() and all(
        np.array_equal(norm(a[k]), norm(b[k]), equal_nan=np.asarray(a[k]).dtype.kind not in "OUS") for k in a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10 ** 6)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fit-repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{datetime.date.today()}  CPU: {cpu_model()} ({os.cpu_count()} cores)  load before: {os.getloadavg()}")
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    t0 = time.perf_counter()
    meta, records = synthetic(args.records)
    print(f"{len(records)} synthetic records in {time.perf_counter() - t0:.1f} s")
    expected = results_io.Results(meta, records).columns()

    formats = {"json": (".json", lambda p: results_io.save(p, meta, records), lambda p: results_io.load(p).records),
               "npz": (".npz", lambda p: results_io.save(p, meta, records), lambda p: results_io.load(p).columns())}
    try:
        import pyarrow

        formats["parquet"] = (".parquet", lambda p: save_parquet(p, meta, records), load_parquet)
        print(f"pyarrow {pyarrow.__version__}")
    except ImportError:
        print("pyarrow not importable: Parquet left out")
    times = {name: {"save": [], "load": []} for name in formats}
    sizes = {}
    with tempfile.TemporaryDirectory() as tmp:
        names = list(formats)
        for rep in range(args.repeats):
            order = names[rep % len(names):] + names[:rep % len(names)]
            for name in order:
                suffix, save, load = formats[name]
                path = Path(tmp) / f"{name}{suffix}"
                path.unlink(missing_ok=True)
                t = time.perf_counter()
                save(path)
                times[name]["save"].append(time.perf_counter() - t)
                sizes[name] = path.stat().st_size
                t = time.perf_counter()
                loaded = load(path)
                times[name]["load"].append(time.perf_counter() - t)
                ok = loaded == records if name == "json" else same_columns(loaded, expected)
                if name == "npz":
                    t = time.perf_counter()
                    ok = ok and results_io.load(path).records == records
                    times[name].setdefault("records", []).append(time.perf_counter() - t)
                if not ok:
                    sys.exit(f"{name}: what was loaded differs from what was saved")
                del loaded
            print(f"run {rep + 1}: " + ", ".join(f"{n} save {times[n]['save'][-1]:.2f} s load {times[n]['load'][-1]:.2f} s"
                                                for n in names), flush=True)
        print(f"\n{'format':12} {'save median':>12} {'load median':>12} {'size MB':>9}  (load = read + verify; to records for json, to columns() for the others)")
        for name in names:
            print(f"{name:12} {statistics.median(times[name]['save']):11.2f}s {statistics.median(times[name]['load']):11.2f}s"
                  f" {sizes[name] / 1e6:9.1f}")
        print(f"npz load + verify + build the list of record dicts: median {statistics.median(times['npz']['records']):.2f} s")
        for name in names[1:]:
            for what in ("save", "load"):
                ratios = [a / b for a, b in zip(times["json"][what], times[name][what])]
                print(f"json/{name} {what}: per-run ratios {', '.join(f'{r:.1f}' for r in ratios)}; median "
                      f"{statistics.median(ratios):.1f}")
        if "parquet" in times:
            for what in ("save", "load"):
                ratios = [a / b for a, b in zip(times["parquet"][what], times["npz"][what])]
                print(f"parquet/npz {what}: per-run ratios {', '.join(f'{r:.2f}' for r in ratios)}; median "
                      f"{statistics.median(ratios):.2f}")
        compare_compressions(meta, records, Path(tmp), args.repeats)
        from synthetic_results import sweep_theory
        from otod.core.sweep import SweepConfig

        t = time.perf_counter()
        meta.update(sweep_theory(SweepConfig.from_dict(meta["config"])))
        print(f"the theory a sweep stores after its last chunk (FLOPs, exact medians of {len(records)} lanes): "
              f"{time.perf_counter() - t:.1f} s, once", flush=True)
        npz = Path(tmp) / "fit.npz"
        results_io.save(npz, meta, records)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        fits = []
        for _ in range(args.fit_repeats):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "otod", "fit", str(npz)], env=env, check=True, capture_output=True)
            fits.append(time.perf_counter() - t)
        print(f"otod fit on {len(records)} records (npz, fresh process): {', '.join(f'{f:.1f}' for f in fits)} s; "
              f"median {statistics.median(fits):.1f} s")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
