"""Points measured already: a sweep takes the records of every point that a finished results file beside it holds
under the same settings, instead of running them again (benchopt's runner caches each run the same way).

Why this is exact: a point's records depend on the sweep's settings (its config less the axis values: problem,
methods, target, resolved cap and precision, seeds, learning-rate grid, options), on the point, and on the
arithmetic (otod's code, JAX, the device); never on the other points of the sweep. Those decide only which lanes
share a block, a chunk or a device, and the records do not depend on that (tested: the engine's layouts and the
chunking give the same records). So a file whose settings and arithmetic are this sweep's holds this sweep's
records at every point the two have in common. β is the exception: a point chooses among its β as among its
rates, so files share points only where their β values are the same.

Measured on `otod figures`: the plain half of ``depth_residual`` (xavier and small at depths 1–12, 85 s of
compiles and runs) is a part of ``depth_iterations``, the README's first depth example.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from otod.core import results as results_io

#: Environment fields that fix the arithmetic: records are shared only between files equal in all of them. "blas":
#: the OpenBLAS kernel set jaxlib's LAPACK calls run (`otod.core.results.blas_kernels`), which round differently.
SAME_ARITHMETIC = ("otod", "git_commit", "jax", "jaxlib", "backend", "device", "cpu", "blas")
#: Axes whose values a point chooses among (like its rates), rather than points of their own.
SETTING_AXES = ("beta",)


class Pool(NamedTuple):
    """Records of points measured already, by `point_key`, and the file each came from."""

    records: dict[tuple, list[dict[str, Any]]]
    source: dict[tuple, Path]


def settings_of(config: dict, not_in_digest: tuple[str, ...]) -> dict:
    """A stored config (``SweepConfig.to_dict``) less what names its points: the axis values (but the setting
    axes' values), the problem's fields that an axis replaces, and the fields that change no record
    (``not_in_digest``)."""
    kept = {k: v for k, v in config.items() if k != "axes" and k not in not_in_digest}
    # a static axis replaces the problem's field of its name at every point
    kept["problem"] = {k: v for k, v in config["problem"].items() if k not in config["axes"]}
    kept["axis_names"] = sorted(config["axes"])
    kept["setting_axes"] = {n: list(config["axes"][n]) for n in SETTING_AXES if n in config["axes"]}
    return results_io.jsonable(kept)


def _value(v: Any) -> Any:
    return v if isinstance(v, str) else float(v)


def record_key(record: dict, static_axes: tuple[str, ...], traced_axes: tuple[str, ...]) -> tuple:
    """The point (and method) a record belongs to."""
    return (tuple(_value(record[n]) for n in static_axes), tuple(_value(record[n]) for n in traced_axes),
            record["method"])


def point_key(config, static_point: dict, traced_point: dict, method: str) -> tuple:
    """`record_key` of the records a config's point gives (axis values as its records hold them)."""
    record = {**{k: float(v) for k, v in static_point.items()},
              **{k: config.kind.axis(k).record_value(v) for k, v in traced_point.items()}, "method": method}
    return record_key(record, config.static_axes, config.traced_axes)


def matching_files(folder: Path, sweep: str, settings: dict, environment: dict, not_in_digest: tuple[str, ...],
                   exclude: Path) -> list[Path]:
    """The finished Parquet results files in ``folder`` of this sweep kind whose settings (`settings_of`) and
    arithmetic (`SAME_ARITHMETIC`) are ``settings`` and ``environment``'s, by name; each is read by its footer
    alone. A file that cannot be read is passed over (it is not this sweep's to judge)."""
    from otod.core.parquet import read_header

    found = []
    for path in sorted(folder.glob(f"{sweep}-*.parquet")):
        if path == exclude:
            continue
        try:
            meta = (read_header(path) or {}).get("meta") or {}
        except Exception:  # a damaged or foreign file: not a source of records
            continue
        env = meta.get("environment") or {}
        if (meta.get("kind") == "sweep" and meta.get("complete") and meta.get("sweep") == sweep
                and isinstance(meta.get("config"), dict) and "axes" in meta["config"]
                and settings_of(meta["config"], not_in_digest) == settings
                and all(env.get(k) == environment.get(k) for k in SAME_ARITHMETIC)):
            found.append(path)
    return found


def gather(config, files: list[Path]) -> Pool:
    """The records of ``files`` (each verified as it loads), by point; the first file holding a point gives it.
    Only the records a file's own plan made: those a bracket added after them (``meta["bracket"]``,
    `otod.core.bracket`) are at other rates than the file's grid."""
    records: dict[tuple, list[dict]] = {}
    source: dict[tuple, Path] = {}
    for path in files:
        mine: dict[tuple, list[dict]] = {}
        loaded = results_io.load(path)
        planned = (loaded.meta.get("bracket") or {}).get("planned_records", len(loaded))
        for r in loaded.records[:planned]:
            mine.setdefault(record_key(r, config.static_axes, config.traced_axes), []).append(r)
        for key, rows in mine.items():
            if key not in records:
                records[key], source[key] = rows, path
    return Pool(records, source)


def held_points(config, points: list[dict], static_point: dict, chunk, pool: Pool,
                multipliers) -> dict[int, tuple[list[dict[str, Any]], Path]]:
    """The records the pool holds of each real point of a chunk (by point index, with the file they came from),
    for the points it holds with this sweep's seeds and rates (``multipliers(point_index, rate_indices)``: the
    lanes' lr multipliers, checked against the records' where the lr is relative). A point's records come in the
    engine's order: rate-major, then seed."""
    name = chunk.program[chunk.method_index]
    rates = len(config.rates_for(name))
    order = list(range(config.seeds)) * rates
    held = {}
    for p in sorted(set(chunk.point_indices[:chunk.n_points])):
        key = point_key(config, static_point, points[p], name)
        got = pool.records.get(key)
        if got is None or [r["seed"] for r in got] != order:
            continue
        if config.relative_lr:
            expected = multipliers(p, [r for r in range(rates) for _ in range(config.seeds)])
            if any(r["lr_multiplier"] != float(m) for r, m in zip(got, expected)):
                continue
        held[p] = (got, pool.source[key])
    return held


def in_point_order(chunk, run: list[dict[str, Any]], held: dict[int, list[dict[str, Any]]],
                   lanes_per_point: int) -> list[dict[str, Any]]:
    """A chunk's records, its points by index as the engine orders them: ``run`` (the records of the chunk's
    points not in ``held``, in that order, ``lanes_per_point`` each) merged with ``held`` (point index: records)."""
    ran = [p for p in sorted(set(chunk.point_indices[:chunk.n_points])) if p not in held]
    assert len(run) == lanes_per_point * len(ran), (len(run), lanes_per_point, ran)
    by_point = {**held, **{p: run[i * lanes_per_point:(i + 1) * lanes_per_point] for i, p in enumerate(ran)}}
    return [r for p in sorted(by_point) for r in by_point[p]]
