"""``otod.critical_batch(loss, params, data, batches=…, target=…)``: the steps to a training-loss target of any
JAX model (`otod.nets.model.contract`) against batch size, and its critical batch, from a notebook, with the numbers
``otod sweep net --model FILE.py:NAME --batch … --target …`` prints and writes.

It builds the same config the command does (`otod.nets.sweep.options.net_config` with the model in place of a
reference: `otod.nets.model.model_problem.ModelProblem`) and runs it through the same pipeline
(`otod.core.pipeline.sweep`: the core engine, then the one analysis), so a lane's count is the command's. The
critical batch is McCandlish et al.'s S(B) = S_min (1 + B_crit/B) fitted to the medians over seeds at each
batch's chosen (lr, β), with a seed bootstrap that re-chooses (lr, β) in every resample
(`otod.core.critical_batch`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from otod.nets.sweep.reading import CriticalBatchPoint, reading

#: The Python function's defaults (the command's are its own: B = 8..1024, target 0.1).
BATCHES = (8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class SweepResult:
    """What a net sweep called from Python returns beside its reading: ``records`` (every lane: batch, lr, β,
    seed, steps, status), ``config`` (the sweep's config as stored), ``report`` (the command's text), ``path`` (the
    results file: the same call reads it back), ``to_pandas()`` (the records)."""

    records: tuple
    config: dict
    report: str
    path: str | None

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame([dict(r) for r in self.records])


@dataclass(frozen=True)
class CriticalBatchResult(SweepResult):
    """`otod.critical_batch`'s result: ``points`` (a `CriticalBatchPoint` per method) and the `SweepResult`."""

    points: tuple[CriticalBatchPoint, ...] = ()

    def point(self, method: str = "sgd") -> CriticalBatchPoint:
        return next(p for p in self.points if p.method == method)


def critical_batch(loss, params, data, init=None, *, batches=BATCHES, target: float, method="sgd",
                   seeds: int = 5, seed: int = 0, lr="tuned", lr_grid=None, beta=None, max_iters: int | None = None,
                   examples: int | None = None, schedule: str = "constant", x64: bool | None = None,
                   predict: bool = False, out: str | None = "results", name: str = "model",
                   progress=None) -> CriticalBatchResult:
    """Steps to the training loss ``target`` of ``loss`` (the mean loss over a batch, `otod.nets.model.contract`) on
    ``data`` from ``params`` (every seed's start; or ``init(key)`` per seed) against batch size: minibatch SGD
    (``method``: sgd, heavy-ball, adam, or several, comma-separated) with (lr, β) chosen per batch from
    ``lr_grid`` (absolute steps, default 10⁻³..10, 4 per decade) by the median over ``seeds``, the first
    ``examples`` examples (None: all), capped at ``max_iters`` (default 20,000) steps. ``predict`` adds the NQM's
    prediction from the model's spectrum and noise at the start (to the results file and ``report``). ``out``:
    the folder of the results file (the same call reads it back; None: a temporary folder, nothing kept).
    Returns a `CriticalBatchResult`; bad input raises `otod.core.errors.OtodError` (a ValueError) in one line.

    >>> r = otod.critical_batch(loss, params, (x, y), batches=(8, 16, 32, 64), target=0.05)
    >>> r.point("sgd").b_crit, r.point("sgd").b_crit_ci, r.to_pandas()
    """
    import tempfile

    from otod.core.api import read_config, sweep
    from otod.nets.model.contract import check
    from otod.nets.sweep.options import net_config
    from otod.nets.sweep.predict import run_meta

    model = check(loss, params, data, init, where="otod.critical_batch", name=name, finite=False)
    config = net_config(model=model, batch=_batch_text(batches), method=_text(method), target=target,
                        beta=None if beta is None else _text(beta), schedule=schedule, max_iters=max_iters,
                        seeds=seeds, seed=seed, lr=str(lr), examples=examples,
                        lr_grid=None if lr_grid is None else _text(lr_grid), x64=x64)
    extra = run_meta(config, predict)
    with tempfile.TemporaryDirectory() as scratch:
        report = sweep(config, out_dir=scratch if out is None else out, plot=False, progress=progress,
                       extra_meta=extra, lr_extend=0)  # the grid as given (`otod.nets.sweep.kind.BRACKET`)
        points = tuple(reading(s) for s in report.analysis.series)
        results = report.results
        return CriticalBatchResult(records=tuple(results.records), config=read_config(results.meta).to_dict(),
                                   report=report.text, path=None if out is None else str(results.path), points=points)


def _text(values) -> str:
    """A list option as the command line's comma text (a string passes as it is)."""
    if isinstance(values, str):
        return values
    if np.ndim(values) == 0:
        return repr(float(values)) if not isinstance(values, (int, np.integer)) else str(int(values))
    return ",".join(repr(float(v)) for v in values)


def _batch_text(batches) -> str:
    """Batch sizes as the command's list: whole numbers stay whole (``8,16,32``)."""
    if isinstance(batches, str):
        return batches
    values = np.atleast_1d(batches)
    return ",".join(str(int(v)) if float(v).is_integer() else repr(float(v)) for v in values)


@dataclass(frozen=True)
class GridResult(SweepResult):
    """`otod.critical_batch_grid`'s result: ``grids`` ({method: `otod.core.joint_law.GridAnalysis`}: each cell's
    McCandlish and Zhang critical batches with CIs, the joint law of each with its verdict) and the `SweepResult`."""

    grids: dict | None = None

    def grid(self, method: str = "sgd"):
        return self.grids[method]


def critical_batch_grid(examples, widths, *, regime: str | None = "stream", data: str = "teacher",
                        model: str = "mlp", heads: int | None = None,
                        batches=BATCHES, target: float | None = None, method="sgd", seeds: int = 5, seed: int = 0,
                        depth: int = 2, lr="tuned", lr_grid=None, beta=None, max_iters: int | None = None,
                        schedule: str = "constant", x64: bool | None = None, out: str | None = "results",
                        progress=None) -> GridResult:
    """The joint grid of ``otod sweep net --examples D1,… --width W1,… [--regime …]``: every cell (D in
    ``examples``, width in ``widths``) an S(B) sweep over ``batches`` with (lr, β) chosen per batch from
    ``lr_grid`` by the median over ``seeds``, then the joint law log B_crit = c + a·log D + b·log P over the cells
    (`otod.nets.sweep.grid`). ``regime``: "stream" (fresh examples every step) or "finite" (D examples repeated),
    each cell stopped at the held-out loss its reference run reaches after D examples (`otod.nets.model.reference`);
    None: the old finite sweep to the training loss ``target``. ``model``: otod's net, "mlp" (on ``data`` teacher,
    gaussian or digits) or "transformer" (on ``data`` "sequence", `otod.nets.model.sequence`; ``widths`` its d_model,
    ``depth`` its blocks, ``heads`` its attention heads, default 2: `otod.nets.model.transformer_net`). Bad input
    raises `otod.core.errors.OtodError`.

    >>> g = otod.critical_batch_grid((256, 1024, 4096), (8, 32), batches=(8, 16, 32, 64, 128))
    >>> law = g.grid("sgd").mccandlish; law.a, law.a_ci, law.b, law.b_ci, law.verdict()
    >>> otod.critical_batch_grid((256, 1024), (8, 32), model="transformer", data="sequence", depth=1)
    """
    import tempfile

    from otod.core.api import read_config, sweep
    from otod.nets.sweep.grid import grid_analyses
    from otod.nets.sweep.options import net_config, option_text
    from otod.nets.sweep.predict import run_meta

    config = net_config(batch=_batch_text(batches), width=option_text("width", widths), depth=str(int(depth)),
                        data=data, model=model, heads=heads, examples=option_text("examples", examples), method=_text(method),
                        target=None if target is None else repr(float(target)),
                        beta=None if beta is None else _text(beta), schedule=schedule, max_iters=max_iters,
                        seeds=seeds, seed=seed, lr=str(lr), lr_grid=None if lr_grid is None else _text(lr_grid),
                        x64=x64, regime=regime)
    with tempfile.TemporaryDirectory() as scratch:
        report = sweep(config, out_dir=scratch if out is None else out, plot=False, progress=progress,
                       extra_meta=run_meta(config, False), lr_extend=0)  # the grid as given
        results = report.results
        return GridResult(records=tuple(results.records), config=read_config(results.meta).to_dict(),
                          report=report.text, path=None if out is None else str(results.path),
                          grids=grid_analyses(results))
