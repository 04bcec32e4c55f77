"""Compare the records of two results files of the same sweep, column by column (issue 20, item 7: a GPU's
records against a CPU's).

The same command writes its records in the same order on any device, so row i of one file is row i of the
other: the point's columns (κ, method, seed, lr …) are checked equal first, and then, per measured column, how
many records are equal bit for bit and, for numbers (the learning rate among them: it comes from the problem's
spectrum as the device computes it), the largest difference relative to the CPU's value.

    python3 benchmarks/compare_records.py CPU.parquet GPU.parquet
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

MEASURED_PREFIXES = ("learning_rate", "iterations", "status", "final_", "hits[", "selected", "lr_on_edge", "beta_on_edge",
                     "lr_place", "beta_place")


def compare(a: pd.DataFrame, b: pd.DataFrame) -> list[dict]:
    """One row per column: records equal, and for numbers the largest |b − a| / max(|a|, tiny)."""
    if a.shape != b.shape or list(a.columns) != list(b.columns):
        raise SystemExit(f"not the same sweep: {a.shape} {list(a.columns)} against {b.shape} {list(b.columns)}")
    points = [c for c in a.columns if not c.startswith(MEASURED_PREFIXES)]
    for c in points:
        if not a[c].equals(b[c]):
            raise SystemExit(f"not the same points: column {c} differs")
    out = []
    for c in a.columns:
        if c in points:
            continue
        x, y = a[c].to_numpy(), b[c].to_numpy()
        both_nan = pd.isna(a[c]).to_numpy() & pd.isna(b[c]).to_numpy()
        equal = int(((x == y) | both_nan).sum())
        row = {"column": c, "records": len(x), "equal": equal}
        if np.issubdtype(x.dtype, np.number):
            xf, yf = x.astype(float), y.astype(float)
            ok = ~both_nan & np.isfinite(xf) & np.isfinite(yf)
            rel = np.abs(yf[ok] - xf[ok]) / np.maximum(np.abs(xf[ok]), np.finfo(float).tiny)
            row["max_relative"] = float(rel.max()) if rel.size else 0.0
            row["nan_mismatch"] = int((pd.isna(a[c]).to_numpy() != pd.isna(b[c]).to_numpy()).sum())
        out.append(row)
    return out


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    a, b = (pd.read_parquet(p) for p in sys.argv[1:])
    print(f"{sys.argv[1]} against {sys.argv[2]}: {len(a)} records")
    for row in compare(a, b):
        extra = (f", largest relative difference {row['max_relative']:.3g}, NaN in one only {row['nan_mismatch']}"
                 if "max_relative" in row else "")
        print(f"  {row['column']}: {row['equal']}/{row['records']} equal{extra}")
    if "iterations" in a and "status" in a:
        moved = a["status"] != b["status"]
        print(f"  status changed in {int(moved.sum())} records: "
              + ", ".join(f"{s} -> {t}: {n}" for (s, t), n in
                          pd.crosstab(a["status"][moved], b["status"][moved]).stack().items() if n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
