"""``otod.curvature(loss, params, data, …)`` and ``otod.noise_scale(loss, params, data, …)``: the curvature and the
gradient noise of any JAX model (`otod.nets.model.contract`) from a notebook, with the numbers ``otod curvature --model
FILE.py:NAME`` and ``otod noise-scale --model FILE.py:NAME`` print and write (the commands call `measure_curvature`
and `measure_noise` here, with the same arguments).

Both train the model by SGD (``lr``, ``batch``, ``seed``: `otod.nets.measure.trajectory.train_model`) to each of
``steps`` (0 = the given start, measured without training) and measure there, the loss and its derivatives
accumulated over chunks of the data (`otod.nets.model.chunked`). Each returns a frozen result: typed points, one per
checkpoint (and batch pair), the full records the command writes, its settings, and ``.to_pandas()``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from otod.core.api import lazy, OtodError
from otod.nets.measure.settings import CurvatureConfig, NoiseScaleConfig

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: The Python functions' defaults (the commands' are theirs: checkpoints 0,100,1000).
STEPS, LR, BATCH = (0,), 0.1, 32


@dataclass(frozen=True)
class CurvaturePoint:
    """The curvature at one checkpoint (`otod.nets.measure.curvature.curvature_record`: what each number means); with
    ``per_layer``, each layer's name and the top eigenvalue of its diagonal Hessian block
    (`otod.nets.measure.curvature_layers`), else empty."""

    step: int
    train_loss: float
    lambda_max: float
    lambda_min: float
    lambda_q: float
    kappa_q: float | None
    kappa_damped: float
    negative_mass: float
    trace_per_parameter: float
    top_eigenvalues: tuple[float, ...]
    spectrum: str
    chunk: int
    layer_names: tuple[str, ...] = ()
    layer_lambda_max: tuple[float, ...] = ()


@dataclass(frozen=True)
class NoiseScalePoint:
    """The exact noise scales at one checkpoint (`otod.nets.measure.noise_scale.gradient_moments`): |G|², tr Σ, GᵀHG,
    tr(HΣ) (± its standard error where estimated from ``trace_examples`` < n examples), B_simple = tr Σ/|G|²,
    B_noise = tr(HΣ)/GᵀHG."""

    step: int
    loss: float
    g2: float
    trace_sigma: float
    gHg: float
    trace_h_sigma: float
    trace_h_sigma_se: float
    b_simple: float
    b_noise: float


def _point(cls, record: dict):
    values = {f.name: record.get(f.name) for f in fields(cls)}
    for name in ("top_eigenvalues", "layer_names", "layer_lambda_max"):
        if name in values:
            values[name] = tuple(values[name] if values[name] is not None else ())
    return cls(**values)


@dataclass(frozen=True)
class _Result:
    """``records``: the full records the command writes, one per checkpoint (and batch pair); ``config``: the
    settings; ``to_pandas()``: the records as a data frame."""

    records: tuple
    config: dict

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame([dict(r) for r in self.records])

    @property
    def steps(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(int(r["step"]) for r in self.records))


@dataclass(frozen=True)
class CurvatureResult(_Result):
    """`otod.curvature`'s result: ``points`` (a `CurvaturePoint` per checkpoint), ``records``, ``config``,
    ``to_pandas()``."""

    @property
    def points(self) -> tuple[CurvaturePoint, ...]:
        return tuple(_point(CurvaturePoint, r) for r in self.records)

    def layers_to_pandas(self):
        """With ``per_layer``: one row per checkpoint and layer (step, layer, parameters, the top eigenvalue of
        the layer's diagonal Hessian block and its Lanczos residual bound, the whole net's λ_max beside it)."""
        import pandas as pd

        if not self.records or "layer_lambda_max" not in self.records[0]:
            raise OtodError("no per-layer curvature in this result: measure it with per_layer=True")
        rows = [{"step": int(r["step"]), "layer": name, "parameters": int(size), "lambda_max": float(top),
                 "residual": float(res), "net_lambda_max": float(r["lambda_max"])}
                for r in self.records for name, size, top, res in
                zip(r["layer_names"], r["layer_parameters"], r["layer_lambda_max"], r["layer_residuals"])]
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class NoiseScaleResult(_Result):
    """`otod.noise_scale`'s result: ``points`` (a `NoiseScalePoint` per checkpoint), ``records`` (one per
    checkpoint and batch pair, with the pair's two-batch estimates), ``config``, ``to_pandas()``."""

    @property
    def points(self) -> tuple[NoiseScalePoint, ...]:
        first = {}
        for r in self.records:
            first.setdefault(int(r["step"]), r)
        return tuple(_point(NoiseScalePoint, r) for r in first.values())


# -- the settings, checked ------------------------------------------------------------------------------------


def _steps(steps) -> list[int]:
    from otod.nets.measure.noise_scale import parse_checkpoints

    if isinstance(steps, (int, np.integer)):
        steps = [steps]
    return parse_checkpoints(",".join(str(int(s)) for s in steps)) if len(steps) else parse_checkpoints("")


def _check_batch(batch, n: int, option: str = "batch") -> int:
    if not isinstance(batch, (int, np.integer)) or not 1 <= batch <= n:
        raise OtodError(f"{option} {batch}: need a whole number from 1 to the {n:,} training examples")
    return int(batch)


def curvature_plan(model, k: int, probes: int, lanczos_steps: int, x64: bool, option: str = "--k") -> int:
    """Refuse a k above P, or bases and a dense Hessian that do not fit in memory; return the Lanczos steps per
    probe (at most P)."""
    from otod.core.api import refuse_memory
    from otod.nets.measure.dense import dense_bytes, is_dense

    size = model.parameter_count
    if not 1 <= k <= size:
        raise OtodError(f"{option} {k}: need 1 ≤ k ≤ the parameter count {size:,}")
    steps = min(int(lanczos_steps), size)
    need = (probes * (steps + 1) + 3 * k + 41) * size * (8 if x64 else 4)
    need += dense_bytes(size) if is_dense(size) else 0
    need += sum(int(np.asarray(a).nbytes) for a in model.data)
    refuse_memory(need, f"the curvature of {model.name} (P = {size:,})", "use fewer probes or Lanczos steps, or a "
                                                                         "smaller model")
    return steps


def noise_plan(model) -> None:
    """Refuse a noise-scale measurement that does not fit in memory: the data and the parameters in float64 (a
    few copies of P: G, HG, the moments), one chunk of per-example gradients and one of HVP activations
    (`otod.nets.measure.noise_scale.CHUNK_FLOATS` and `otod.nets.model.chunked.CHUNK_FLOATS` floats; a chunk holds one
    example's gradient at least, P floats, and a vmapped HVP one vector's primal and tangent), or, in their place
    (it runs alone, before them), one chunk of the per-example norm pass (`otod.nets.measure.example_norms`:
    `example_norms.CHUNK_FLOATS`, or one example's floats of the pass where more)."""
    from otod.core.api import refuse_memory
    from otod.nets.model import chunked
    from otod.nets.measure import example_norms, noise_scale

    size = model.parameter_count
    data = sum(int(np.size(a)) for a in model.data)
    chunk = max(noise_scale.CHUNK_FLOATS, size)
    try:
        norms = max(example_norms.CHUNK_FLOATS,
                    example_norms.plan(model.loss, model.params, model.data).example_floats)
    except OtodError:  # the loss fails on one example: refused in its own line by the start's check, next
        norms = 0
    need = 8 * (data + 8 * size + 2 * chunk + max(chunked.CHUNK_FLOATS, 4 * size, norms))
    refuse_memory(need, f"the noise scale of {model.name} (P = {size:,}, {model.examples:,} examples)",
                  "use a smaller model or fewer examples")


# -- the measurements -----------------------------------------------------------------------------------------


def measure_curvature(model, steps=STEPS, *, lr: float = LR, batch: int = BATCH, seed: int = 0, k: int = 10,
                      probes: int = 8, lanczos_steps: int = 100, quantile: float = 0.9, damping: float = 1e-3,
                      x64: bool = False, chunk: int | None = None, per_layer: bool = False,
                      progress=None) -> CurvatureResult:
    """The curvature of a checked model (`otod.nets.model.contract.Model`) at each of ``steps`` of its SGD run, in
    float64 with ``x64`` (else float32): one record per checkpoint (`otod.nets.measure.curvature.curvature_at`, with the
    step, lr, seed, precision, parameter and example counts; with ``per_layer``, each layer's diagonal block's top
    eigenvalue, `otod.nets.measure.curvature_layers`)."""
    from otod.core.api import exact_float32
    from otod.nets.model.contract import cast
    from otod.nets.measure.curvature import curvature_at
    from otod.nets.measure.trajectory import train_model

    checkpoints = _steps(steps)
    batch = _check_batch(batch, model.examples)
    m = curvature_plan(model, int(k), int(probes), int(lanczos_steps), x64, "k")
    settings = CurvatureConfig(tuple(checkpoints), float(lr), int(seed), int(k), int(probes), m, float(quantile),
                               float(damping), bool(x64), bool(per_layer))
    # per_layer is stored only where asked: other runs keep their settings, and the command its file name (digest)
    config = settings.stored_for_model(model.name, _digest(model), batch, chunk)
    precision = settings.precision
    records = []
    with jax.enable_x64(x64), exact_float32():
        model = cast(model, jnp.float64 if x64 else jnp.float32)
        _refuse_bad_start(model, chunk, seed, (batch,))
        runs = train_model(model, checkpoints, lr, batch, seed)
        for step, params in runs:
            rec = curvature_at(model, params, settings.k, settings.probes, m, settings.seed, None, settings.quantile,
                               settings.damping, chunk=chunk, per_layer=settings.per_layer)
            records.append({"step": int(step), **rec, "lr": settings.lr, "seed": settings.seed, "batch": batch,
                            "precision": precision, "parameters": model.parameter_count,
                            "examples": model.examples, "model": model.name})
            if progress is not None:
                progress(len(records), len(runs))
    return CurvatureResult(tuple(records), config)


def measure_noise(model, steps=STEPS, *, lr: float = LR, batch: int = BATCH, seed: int = 0, pairs=None,
                  draws: int = 64, trace_examples: int | None = None, x64: bool = False,
                  chunk: int | None = None, progress=None) -> NoiseScaleResult:
    """The exact noise scales of a checked model at each of ``steps`` of its SGD run (trained in float64 with
    ``x64``, else float32; measured in float64, step 0 at the model's own start, unrounded), with the two-batch estimates of each pair (B_small, B_big)
    whose B_big fits the data (default 8:64 and 32:256): `otod.nets.measure.noise_scale.measure_at`."""
    from otod.nets.model.contract import cast
    from otod.nets.measure.noise_scale import PAIRS, Problem, measure_at
    from otod.nets.measure.trajectory import model_start, train_model

    checkpoints = _steps(steps)
    n = model.examples
    batch = _check_batch(batch, n)
    if n < 2:
        raise OtodError("data: the noise scale needs at least 2 training examples")
    pairs = [tuple(int(b) for b in p) for p in (PAIRS if pairs is None else pairs)]
    for small, big in pairs:
        if not 1 <= small < big <= n:
            raise OtodError(f"pairs {small}:{big}: need 1 ≤ B_small < B_big ≤ the {n:,} training examples")
    noise_plan(model)
    settings = NoiseScaleConfig(tuple(checkpoints), float(lr), int(seed), tuple(pairs), int(draws), trace_examples,
                                bool(x64))
    config = settings.stored_for_model(model.name, _digest(model), batch, chunk)
    records = []
    with jax.enable_x64(True):
        measured = cast(model, jnp.float64)
        _refuse_bad_start(measured, chunk, seed, (batch,), one=True)
        trained = measured if x64 else cast(model, jnp.float32)
        problem = Problem.of_model(measured, chunk)
        if 0 in checkpoints:  # a zero gradient at the start: refused before the training
            _refuse_zero_gradient_at_start(problem, measured, seed)
        runs = train_model(trained, checkpoints, lr, batch, seed)
        if runs[0][0] == 0:  # the start itself, not its float32 rounding: no training has touched it
            runs[0] = (0, model_start(measured, seed))
        for i, (step, params) in enumerate(runs):
            problem.at(params)
            for r in measure_at(problem, pairs, settings.draws, settings.trace_examples, settings.seed, step):
                records.append({**r, "lr": settings.lr, "seed": settings.seed, "batch": batch, "chunk": problem.chunk,
                                "model": model.name})
            if progress is not None:
                progress(i + 1, len(runs))
    return NoiseScaleResult(tuple(records), config)


def _digest(model) -> str:
    """The model's digest (`otod.nets.model.model_problem.model_digest`: its file, start and data), in the config, so
    that two models of one name (two sizes from one file) never share a results file."""
    from otod.nets.model.model_problem import model_digest

    return model_digest(model, model.name)


def _refuse_bad_start(model, chunk, seed: int, batches, one: bool = False) -> None:
    """Before any work: the loss, its gradient and its HVP traced at every batch size the measurement gives it
    (`otod.nets.model.contract.trace_loss`), then the start seed ``seed`` trains from (`model_start`: ``init(key)`` at
    seeds other than 0) refused where a parameter or the loss over the data is not finite."""
    import math

    from otod.nets.model.contract import chunk_of, start_loss, trace_loss, trace_sizes
    from otod.nets.measure.trajectory import model_start

    trace_loss(model, trace_sizes(model.examples, batches, chunk or chunk_of(model), one), hvp=True)
    start = model_start(model, seed)
    where = model.extra.get("where", model.name)
    drawn = "" if start is model.params else f" (init(key) at seed {seed})"
    bad = [jax.tree_util.keystr(path) for path, leaf in jax.tree_util.tree_leaves_with_path(start)
           if not np.all(np.isfinite(np.asarray(leaf)))] if drawn else []
    if bad:  # a drawn start named by its leaves; the given params by their loss below
        raise OtodError(f"{where}: the start{drawn} has non-finite parameters in {', '.join(bad[:3])}; a measurement "
                        "needs a finite start")
    value = start_loss(_at(model, start), chunk)
    if not math.isfinite(value):
        raise OtodError(f"{where}: the loss at the start{drawn} is {value} over the {model.examples:,} examples; a "
                        "measurement needs a finite loss (check the data and the start)")


def _at(model, params):
    """``model`` with its start replaced by ``params`` (in the model's dtype)."""
    from otod.nets.model.contract import Model

    dtype = jax.tree.leaves(model.params)[0].dtype
    return Model(model.loss, jax.tree.map(lambda a: jnp.asarray(a, dtype), params), model.data, model.init,
                 model.name, model.extra)


def _refuse_zero_gradient_at_start(problem, model, seed: int) -> None:
    """`otod.nets.measure.noise_scale.refuse_zero_gradient` at the start seed ``seed`` trains from, before the training."""
    from otod.nets.measure.noise_scale import refuse_zero_gradient
    from otod.nets.measure.trajectory import model_start

    problem.at(model_start(model, seed))
    G = problem.mean_grad(problem.flat)
    refuse_zero_gradient(float(G @ G), float(G @ problem.hvp(G)), "at the start (step 0)")


# -- the public functions -------------------------------------------------------------------------------------


def curvature(loss, params, data, init=None, *, steps=STEPS, lr: float = LR, batch: int = BATCH, seed: int = 0,
              k: int = 10, probes: int = 8, lanczos_steps: int = 100, quantile: float = 0.9, damping: float = 1e-3,
              x64: bool = False, chunk: int | None = None, name: str = "model",
              per_layer: bool = False) -> CurvatureResult:
    """The Hessian spectrum of ``loss`` (the mean loss over a batch, `otod.nets.model.contract`) over all of ``data``
    at ``params`` (``steps`` = (0,)) or at checkpoints of an SGD run from it: the top-k eigenvalues (Lanczos),
    λ_min, λ_q, κ_q = λ_max/λ_q, κ_δ, the negative mass and tr H/P, exact from the dense Hessian where P ≤ 5,000,
    else SLQ estimates with 95% intervals. ``chunk``: examples per chunk of the data (default: as many as fit
    128 MiB of activations). ``per_layer``: also the top eigenvalue of each layer's diagonal Hessian block (a layer:
    the leaves of ``params`` that share a parent node, `otod.nets.measure.curvature_layers`), in the records, the points
    and ``result.layers_to_pandas()``. Returns a `CurvatureResult`; bad input raises `otod.core.errors.OtodError`
    (a ValueError) in one line.

    >>> result = otod.curvature(loss, params, (x, y), k=5, x64=True)
    >>> result.points[0].lambda_max, result.to_pandas()
    """
    from otod.nets.model.contract import check

    model = check(loss, params, data, init, where="otod.curvature", name=name, finite=False)
    return measure_curvature(model, steps, lr=lr, batch=min(batch, model.examples), seed=seed, k=k, probes=probes,
                             lanczos_steps=lanczos_steps, quantile=quantile, damping=damping, x64=x64, chunk=chunk,
                             per_layer=per_layer)


def noise_scale(loss, params, data, init=None, *, steps=STEPS, lr: float = LR, batch: int = BATCH, seed: int = 0,
                pairs=None, draws: int = 64, trace_examples: int | None = None, x64: bool = False,
                chunk: int | None = None, name: str = "model") -> NoiseScaleResult:
    """The gradient noise scales of ``loss`` over all of ``data`` (McCandlish et al. 2018) at ``params`` or at
    checkpoints of an SGD run from it, in float64: |G|², tr Σ (Σ the per-example gradient covariance, 1/n),
    GᵀHG, tr(HΣ) (exact; or the mean over ``trace_examples`` drawn examples, with its standard error),
    B_simple = tr Σ/|G|², B_noise = tr(HΣ)/GᵀHG, and the two-batch estimates of ``pairs`` (default 8:64, 32:256,
    those whose B_big is less than the data). Returns a `NoiseScaleResult`.

    >>> otod.noise_scale(loss, params, (x, y)).points[0].b_simple
    """
    from otod.nets.model.contract import check

    model = check(loss, params, data, init, where="otod.noise_scale", name=name, finite=False)
    if pairs is None:
        from otod.nets.measure.noise_scale import PAIRS

        pairs = [p for p in PAIRS if p[1] < model.examples]  # B_big = n has no two-batch estimate of |G|²
    return measure_noise(model, steps, lr=lr, batch=min(batch, model.examples), seed=seed, pairs=pairs, draws=draws,
                         trace_examples=trace_examples, x64=x64, chunk=chunk)
