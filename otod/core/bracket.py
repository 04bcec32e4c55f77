"""The learning rate, and β, bracketed: where a point's best rate sits on the edge of the grid tried, the sweep
tries the next rate beyond it, at the same log spacing, until the choice is inside the rates tried or at a true
limit; where its best β (heavy-ball's momentum, an EMA's decay) is the largest of the list tried, it tries the
next β towards 1, at the list's spacing in log(1 − β), down to the float precision's limit.

**Why.** A tuned count is a minimum over the rates tried; a minimum on the grid's edge is only an upper bound on
the optimum's count, and a law fitted through such points measures the grid, not the obstacle. The noise sweeps'
exact path searches its rates to their limit (`otod.noise.search`); a sweep run by the core (condition, depth)
runs a fixed grid, so it brackets instead.

**The rule.** After the sweep, every (method, point) is chosen by the rule of its one analysis
(`otod.core.analysis.chosen`: the lowest median count over seeds, censored and diverged lanes as +∞, ties to the
smaller rate and β), whose choices the search reads (`requests`): it makes none of its own. A round reads them on
the point estimates alone (the kind's `otod.core.registry.Place`, `otod.core.analysis.placements`: the analysis's
records, fields and rule, without its bootstrap and fits), since where a choice lies needs no interval; the full
analysis is made once, after the last round (`otod.core.pipeline.made`). Where the
choice's rate is the largest (smallest) tried at its β with a finite median (``lr_on_edge``), the next rate up
(down) is run: the grid's end times its end ratio to the power k (the ratio of the grid's last two values, or
its first two: for the default grid 0.1–3, (3/0.1)^(1/11) ≈ 1.36), k = 1, 2, … up to ``steps`` (`DEFAULT_STEPS`;
``--lr-extend``), one step per point per round, every seed. A round's lanes run as small sweeps of their own
(one per method, rate, β and the values of the other axes; their cap, precision and seeds are the sweep's) and
the loop ends when no choice is on an edge it may extend. Where the rate beyond diverges on most seeds, the
choice is at the method's stability limit (`otod.core.analysis.lr_places`): no larger step is stable.

**Runs made once.** A lane's record depends only on the sweep's settings and its point (`otod.core.reuse`), so
the extension's lanes are exactly the lanes a grid holding those rates would have run there. They join the same
results file, after the sweep's own records (which stay byte for byte as they were, each chunk under its own
checksum), with ``meta["bracket"]``: the records the plan made (``planned_records``, all that
`otod.core.reuse` shares with another sweep), the steps allowed, the lanes added and the runs. The rounds'
small sweeps are written beside it (``<file>.bracket/``), so an interrupted round resumes from them, and are
merged into the file at each round's end (then removed), whose records, changed, the next round places anew;
after the last, the pipeline analyses the merged file once, the analysis the command presents. The same
command reads the merged file back: its choices are off their edges, or at the steps' end, so nothing runs
again.

**β towards 1** (`beta_ladder`, the simulated noise sweeps: `otod.noise.kind.BRACKET`): β's stable range is [0, 1)
(Polyak 1964), and at small batch the best memory 1/(1 − β) is a few percent of the run, far past a list's 0.999
(the exact NQM's search finds the EMA's best at 1 − β ≈ 5.6·10⁻⁶ at B = 1, `otod.noise.search`). Where a point's
chosen β is the largest tried (with a finite median), the next β of the ladder runs at every rate of the grid,
as the sweep would have run it had its list held it; the ladder continues the list's last ratio of 1 − β (half a
decade for the default list) while 1 − β ≥ `beta_floor`, where the run's floats still hold 1 − β to 1.2%
(10⁻¹⁴ in float64, as the exact search's floor; 10⁻⁵ in float32, the simulator's default precision). A choice on
the floor is at β's true limit.

**Who brackets.** A kind that declares the stage (`otod.core.registry.Bracketing`; its presentation's ``place``
reads the choices; the pipeline runs it after the core's run and before the sweep's one analysis:
`otod.core.pipeline.made`). The rate: condition, depth and toy sweeps (`otod.condition.kind`,
`otod.depth.kind`). Their default grid is bracketed (`DEFAULT_STEPS` steps each way: 0.1/1.36¹² ≈ 0.0025 to
3·1.36¹² ≈ 122 times the reference step); a grid the user gives is tried as given (0 steps: a choice on its end
is at the end of the user's list), unless ``--lr-extend N`` asks for steps beyond it too; net sweeps
(`otod.nets.sweep.kind`) only when ``--lr-extend N`` asks, so that a net sweep's records stay as its grid gives. β: the simulated noise
and params sweeps whose --beta list is the default (their lr grid already spans 8·10⁻⁷ of the stability limit up
to 1.1·10⁻³ below it, `otod.noise.search`), and the depth and toy sweeps' heavy-ball and Adam (β₁) on their
default list 0, 0.9 … 0.999 (`default_beta_ladder`); a --beta list is tried as given.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from otod.core import results as results_io
from otod.core.config import DEFAULT_LR_GRID, SweepConfig, default_path, read_config
from otod.core.errors import OtodError
from otod.core.registry import Place

#: Steps beyond each end of the default grid: 0.1/1.362¹² ≈ 2.5·10⁻³ up to 3·1.362¹² ≈ 122 times the reference
#: step. Measured on `otod sweep depth` and `otod sweep condition --k 1..100 --lr tuned` (defaults): no choice sits
#: on the grid's edge, so none runs; a choice that needs more than 12 steps is reported on the edge (`GRID_END`).
DEFAULT_STEPS = 12
#: The most steps ``--lr-extend`` allows each way (the multiplier's range grows by the end ratio per step).
MAX_STEPS = 64


def check_steps(text: Any, option: str = "--lr-extend") -> int:
    """``--lr-extend``: a whole number of steps from 0 to `MAX_STEPS`."""
    try:
        value = float(str(text))
    except ValueError:
        value = float("nan")
    if not (0 <= value <= MAX_STEPS and value == int(value)):  # NaN and ±inf fail the range first
        raise OtodError(f"{option} {text}: need a whole number of steps from 0 to {MAX_STEPS} beyond each end of "
                        f"--lr-grid, e.g. {option} 4")
    return int(value)


def lr_extend_option(given, text: Any, config: SweepConfig) -> int | None:
    """``--lr-extend`` as the command line gave it (``given``: the option names typed): None where not given
    (`default_steps`), else `check_steps`; refused where no rate is tuned over a grid (`applies`)."""
    if "lr_extend" not in given:
        return None
    steps = check_steps(text)
    if not applies(config):
        raise OtodError(f"--lr-extend {text}: only a rate tuned over a grid is bracketed, and --lr {config.lr} "
                        f"tunes none of {','.join(config.methods)}; drop --lr-extend or use --lr tuned, e.g. "
                        "--lr tuned --lr-extend 4")
    return steps


def default_steps(config: SweepConfig) -> int:
    """Steps allowed beyond the grid when ``--lr-extend`` is not given: `DEFAULT_STEPS` for the default grid, 0
    for a grid the user gave (tried as given)."""
    return DEFAULT_STEPS if tuple(config.lr_grid) == DEFAULT_LR_GRID else 0


def applies(config: SweepConfig) -> bool:
    """Whether a sweep has a learning rate to bracket: a method tuned over a relative grid of several rates."""
    return config.relative_lr and len(config.lr_grid) > 1 and any(config.tuned(m) for m in config.methods)


def lr_given(meta: dict) -> bool:
    """Whether a results file's rates end where the user's list does (`otod.core.analysis.LIST_END`): a grid
    other than the default, not extended (no ``bracket`` lr steps). Otherwise an edge is a default grid's end,
    or where the extension stopped (`otod.core.analysis.GRID_END`)."""
    grid = read_config(meta).lr_grid
    return grid != DEFAULT_LR_GRID and not (meta.get("bracket") or {}).get("lr_steps", 0)


def ladder(grid: tuple[float, ...], side: int, steps: int) -> list[float]:
    """The rates beyond one end of a grid (``side`` +1: above its largest, −1: below its smallest), k = 1 …
    ``steps`` steps of the end's own ratio: end·(end/neighbour)^k, each computed from the end (not by repeated
    multiplication), so the same rate is the same float in every round."""
    values = sorted(set(grid))
    if len(values) < 2:
        return []
    end, ratio = (values[-1], values[-1] / values[-2]) if side > 0 else (values[0], values[0] / values[1])
    return [float(end * ratio ** k) for k in range(1, steps + 1)]


#: The relative error a float's resolution near 1 may leave in 1 − β: float64's at 1 − β = 10⁻¹⁴ (2⁻⁵³/10⁻¹⁴ =
#: 1.1%), where the noise search's β lattice ends (`otod.noise.search.BETA_FLOOR`).
BETA_RESOLUTION = 0.012


def beta_floor(x64: bool) -> float:
    """The smallest 1 − β a run resolves to `BETA_RESOLUTION`: the floats just below 1 lie ε/2 apart (2⁻⁵³ in
    float64, 2⁻²⁴ in float32), so 1 − β ≥ (ε/2)/1.2%: 9.3·10⁻¹⁵ in float64, 5.0·10⁻⁶ in float32 (a float32 lane's β
    is a float32: beyond it neighbouring β round onto the same few floats)."""
    return float(np.finfo(np.float64 if x64 else np.float32).eps) / 2 / BETA_RESOLUTION


def beta_ladder(betas: tuple[float, ...], floor: float) -> list[float]:
    """The β beyond a list's largest towards 1, at the list's own spacing in log(1 − β) (the ratio of its last two
    1 − β), each computed from the end: 1 − (1 − β_end)·r^(−k), while 1 − β ≥ ``floor`` (`beta_floor`). For the
    noise sweeps' default list (… 0.997, 0.999: half a decade) 1 − β = 10^(−3.5), 10⁻⁴, … down to 10⁻¹⁴ in float64,
    10⁻⁵ in float32."""
    values = sorted(set(betas))
    if len(values) < 2 or values[-1] >= 1.0:
        return []
    gap, ratio = 1.0 - values[-1], (1.0 - values[-2]) / (1.0 - values[-1])
    out, k = [], 1
    while gap / ratio ** k >= floor and k <= 1000:
        out.append(float(1.0 - gap / ratio ** k))
        k += 1
    return out


class Request(NamedTuple):
    """One lane group to run: a method at a point (axis name → the value its records hold; β the one to run), at
    one rate (None: every rate of the sweep's grid, for a new β)."""

    method: str
    point: tuple[tuple[str, Any], ...]
    rate: float | None


def requests(config: SweepConfig, placed, steps: int,
             betas: tuple[float, ...] = ()) -> tuple[list[Request], int]:
    """The next round's lanes (`Request`s) and how many choices sit on an edge they may not leave (the steps are
    used up), read off the choices of the sweep's analysis on the point estimates (``placed``: what the kind's
    `otod.core.registry.Place` gives, an `otod.core.analysis.Placed` per group: each series' choice per point, and the
    group's records, whose fields name the point in full, the method and the fields its groups split off):
    every (method, point) whose chosen rate is on the edge of the rates tried at its β, with the next rate beyond
    that edge not yet tried; and, with ``betas`` (`beta_ladder`), every (method that reads β, point) whose chosen
    β is the largest tried, with the next of ``betas`` not yet tried, at every rate of the grid. A choice per
    point rests on that point's records alone, so it is the choice a search of its own would make; the requests
    come in the order of a search over the records (methods as they first appear, β before rates, points
    sorted), so the rounds run, and append their lanes, in one order."""
    axes = tuple(n for n, _ in config.axes)
    point = [n for n in axes if n != "beta"]
    found, stuck, first = [], 0, {}
    for group in placed:
        for choice in group.choices:
            cube = choice.cube
            lanes = choice.at_choice(cube.row).max(-1)  # a lane run at each point's chosen setting
            records = group.rows.iloc[lanes]
            method = str(records["method"].iloc[0]) if len(records) else cube.series
            ran = group.rows.index[cube.row[cube.row >= 0]]  # labels: the records' places in the results
            first[method] = min(first.get(method, np.inf), ran.min() if len(ran) else np.inf)
            values = [{n: records[n].iloc[i] for n in point} for i in range(len(records))]
            order = lambda kind, i: (method, kind, tuple(values[i][n] for n in point))  # noqa: E731
            if betas and "beta" in axes and "beta" not in config.kind.ignores(method):
                found += [(order(0, i), r) for i, r in beta_requests(method, cube, choice, values, axes, betas)]
            if steps <= 0 or not config.tuned(method):
                continue
            for i in np.flatnonzero(choice.lr_on_edge):
                j = choice.index[i]
                rate, beta = float(cube.rates[j]), float(cube.betas[j])
                tried = set(cube.rates[cube.tried[i] & (cube.betas == beta)].tolist())
                side = 1 if rate >= max(tried) else -1
                beyond = [r for r in ladder(config.lr_grid, side, steps) if r not in tried]
                if not beyond or (side > 0 and beyond[0] < rate) or (side < 0 and beyond[0] > rate):
                    stuck += 1
                    continue
                at = {**values[i], **({"beta": beta} if "beta" in axes else {})}
                found.append((order(1, i), Request(method, tuple((n, at[n]) for n in axes), beyond[0])))
    found.sort(key=lambda item: (first[item[0][0]],) + item[0][1:])
    return [r for _, r in found], stuck


def beta_requests(method: str, cube, choice, values: list[dict], axes: tuple[str, ...],
                  betas: tuple[float, ...]) -> list[tuple[int, Request]]:
    """`requests` of β, with each request's point: where the chosen β is the largest tried at its point (with a
    finite median), the next of ``betas`` above it not yet tried there."""
    out = []
    for i in np.flatnonzero(choice.beta_on_edge):
        beta = float(cube.betas[choice.index[i]])
        tried = cube.betas[cube.tried[i]]
        beyond = [b for b in betas if b > beta and b not in set(tried.tolist())]
        if beta < tried.max() or not beyond:
            continue
        out.append((i, Request(method, tuple((n, beyond[0] if n == "beta" else values[i][n]) for n in axes), None)))
    return out


def sub_configs(config: SweepConfig, wanted: list[Request]) -> list[SweepConfig]:
    """The small sweeps that run ``wanted``: one per method, rate and value of every axis but the first traced
    one (not β), which lists its points; each with the sweep's cap, precision, target, seeds and options, so its
    lanes are the lanes the sweep would have run at those rates."""
    kind = config.kind
    axes = tuple(n for n, _ in config.axes)
    listed = next((n for n in config.traced_axes if n != "beta"), axes[0])
    groups: dict[tuple, list] = {}
    for r in wanted:
        values = dict(r.point)
        key = (r.method, r.rate, tuple((n, values[n]) for n in axes if n != listed))
        groups.setdefault(key, []).append(values[listed])
    out = []
    for (method, rate, others), listed_values in groups.items():
        code = lambda n, v: float(kind.axis(n).code(v))  # noqa: E731  records hold a coded axis's names
        sub_axes = tuple((n, tuple(sorted(code(n, v) for v in listed_values)) if n == listed
                          else (code(n, dict(others)[n]),)) for n in axes)
        out.append(dataclasses.replace(config, axes=sub_axes, methods=(method,),
                                       lr_grid=config.lr_grid if rate is None else (rate,),
                                       max_iters=config.resolved_max_iters, x64=config.resolved_x64))
    return out


def side_folder(path: Path) -> Path:
    """Where a results file's bracket rounds are written until they are merged into it."""
    return path.with_name(path.name + ".bracket")


def merged(results: results_io.Results, runs: list[results_io.Results], said: dict, rounds: int,
           lanes: int) -> results_io.Results:
    """The results file with the rounds' records after its own (its chunks, and their checksums, as they were;
    each run's chunks after them under ``bracket/<n>/``), ``meta["bracket"]`` saying what was added (``said``:
    the bracket's settings, ``lr_steps`` and ``beta_floor``)."""
    from otod.core.columns import table_of

    meta = {k: v for k, v in results.meta.items() if k not in ("meta_sha256", "record_count", "read_back")}
    before = dict(meta.get("bracket") or {})
    planned = before.get("planned_records", len(results))
    offset = len(before.get("runs", []))
    records = list(results.records)
    chunks = list(meta.get("chunks", []))
    described = list(before.get("runs", []))
    for n, run in enumerate(runs, offset):
        records += run.records
        chunks += [{**c, "key": f"bracket/{n}/{c['key']}"} for c in run.meta.get("chunks", [])]
        config = read_config(run.meta)
        described.append({"method": config.methods[0], "lr_grid": list(config.lr_grid),
                          "axes": {n: list(v) for n, v in config.axes}, "lanes": len(run)})
    meta["chunks"] = chunks
    seconds = before.get("wall_time_s", 0.0) + sum(float(run.meta.get("wall_time_s") or 0.0) for run in runs)
    meta["bracket"] = {**said, "planned_records": planned, "rounds": before.get("rounds", 0) + rounds,
                       "lanes": before.get("lanes", 0) + lanes, "wall_time_s": seconds, "runs": described}
    table = table_of(records)
    results_io.save(results.path, meta, records, table=table)
    return results_io.load(results.path)


def bracketed(config: SweepConfig, results: results_io.Results, place: Place, steps: int, *,
              betas: tuple[float, ...] = (), progress: Callable[[dict], None] | None = None,
              yes: bool = False) -> results_io.Results:
    """The pipeline's bracket stage (`otod.core.registry.Bracketing`): extend the sweep's rates (``steps`` beyond
    each end) and β (through ``betas``, `beta_ladder`) round by round until no choice sits on an edge it may
    leave (module docstring); the results, with each round's lanes merged into the file. Each round reads where
    the choices lie from ``place`` (the kind's `otod.core.registry.Place`: its analysis's choices on the point
    estimates, no bootstrap or fit), so the sweep's full analysis is made once, by the pipeline, on the results
    this returns. Nothing to extend (``steps`` 0 or no tuned rate, and no ``betas``): the results as they are,
    nothing placed."""
    from otod.core.sweep import run_sweep

    steps = steps if applies(config) else 0
    if (steps <= 0 and not betas) or results.path is None:
        return results
    folder = side_folder(results.path)
    said = {"lr_steps": steps, **({"beta_floor": 1.0 - max(betas)} if betas else {})}
    while True:
        wanted, _ = requests(config, place(results), steps, tuple(betas))
        if not wanted:
            return results
        runs = [run_sweep(sub, path=default_path(sub, folder), progress=progress, yes=yes, reuse=False)
                for sub in sub_configs(config, wanted)]
        results = merged(results, runs, said, 1, sum(len(r) for r in runs))
        shutil.rmtree(folder, ignore_errors=True)


def default_beta_ladder(config: SweepConfig, default: tuple[float, ...]) -> tuple[float, ...]:
    """The β beyond ``default`` (a sweep's default --beta list) towards 1 down to the run's float limit
    (`beta_ladder`, `beta_floor`) where the sweep's β axis is that default list; none for a list the user gave
    (tried as given) or a sweep without a β axis."""
    values = dict(config.axes).get("beta")
    if values is None or len(values) != len(default) or not np.allclose(values, default, rtol=1e-12):
        return ()
    return tuple(beta_ladder(tuple(default), beta_floor(config.resolved_x64)))


def _values(values) -> str:
    """Axis values as a report lists them: all of up to 8, else the first and last and how many."""
    values = sorted(values)
    if len(values) <= 8:
        return ", ".join(f"{x:g}" for x in values)
    return f"{values[0]:g} … {values[-1]:g} ({len(values)} values)"


def _where(rows, symbol: str) -> str:
    return "; ".join(f"{name} at {symbol} = {_values(part['value'])}" for name, part in rows.groupby("method", sort=False))


def place_lines(summary, symbol: str, meta: dict, reads_beta=None, lr: bool = True) -> list[str]:
    """What a report says of where the choices lie (``summary``: `otod.core.analysis.summary` rows, with
    ``lr_place`` and ``beta_place``; ``reads_beta``: the rows whose method reads β, default none): how many
    chosen rates are interior, which sit at a true limit (the next rate diverged) or on an end, and what the
    bracket ran (``meta["bracket"]``); ``lr`` False: of β alone (no rate was tuned)."""
    from otod.core.analysis import GRID_END, LIST_END

    if not len(summary) or "lr_place" not in summary:
        return []
    lines = _lr_lines(summary, symbol, meta) if lr else []
    if reads_beta is not None and "beta_place" in summary:
        beta = summary["beta_place"].to_numpy(object)
        for where, text in ((LIST_END, "on the end of the --beta list given"),
                            (GRID_END, "on the end of the default β list, 0.999")):
            rows = summary[(beta == where) & np.asarray(reads_beta, bool)]
            if len(rows):
                lines.append(f"warning: β* lies {text} ({_where(rows, symbol)}): the best β may lie beyond it; "
                             "widen --beta")
    return lines


def _lr_lines(summary, symbol: str, meta: dict) -> list[str]:
    """`place_lines` of the rate."""
    from otod.core.analysis import GRID_END, INTERIOR, LIMIT, LIST_END

    bracket_meta = meta.get("bracket") or {}
    steps = bracket_meta.get("lr_steps", 0)
    place = summary["lr_place"].to_numpy(object)
    lines = [f"lr* (the chosen rate) lies inside the rates tried at {int((place == INTERIOR).sum())} of "
             f"{len(place)} points" + (f"; {bracket_meta['lanes']} lanes ran at rates beyond --lr-grid "
                                       f"(--lr-extend {steps}: up to {steps} steps of its end ratio) in "
                                       f"{bracket_meta['rounds']} rounds, "
                                       f"{bracket_meta.get('wall_time_s', 0.0):.3g} s" if bracket_meta.get("lanes")
                                       else "")]
    said = {LIMIT: "at its stability limit (the next larger rate tried diverged on most seeds)",
            LIST_END: "on the end of the --lr-grid given: the best rate may lie beyond it; widen --lr-grid or "
                      "add --lr-extend N",
            GRID_END: (f"on the edge of the rates tried after {steps} steps beyond the grid: the best rate may lie "
                       "beyond; raise --lr-extend" if steps else "on the end of the default grid, tried as given: the "
                       "best rate may lie beyond it; widen --lr-grid")}
    for where, text in said.items():
        rows = summary[place == where]
        if len(rows):
            lines.append(f"{'note' if where == LIMIT else 'warning'}: lr* lies {text} ({_where(rows, symbol)})")
    return lines
