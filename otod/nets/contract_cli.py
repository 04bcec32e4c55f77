"""``otod curvature --model FILE.py:NAME`` and ``otod noise-scale --model FILE.py:NAME``: the commands' path for a
user's model (`otod.nets.model.contract`), measured by the functions the Python API calls (`otod.nets.api`), so the
command and ``otod.curvature``/``otod.noise_scale`` give the same numbers.

Every option is checked and the model loaded and checked (shapes traced abstractly) before anything is
measured; the time is estimated from XLA's flop count of the loss on one example (`flops_per_example`) with the
constants of `otod.nets.measure.noise_scale`, and refused above an hour without ``--yes``; the memory of the Lanczos
bases, the dense Hessian and the data is refused above the free memory (`otod.nets.api.curvature_plan`).
"""

from __future__ import annotations

import time
from pathlib import Path

from otod.core.api import count_progress, lazy, OtodError
from otod.nets.measure.settings import CurvatureConfig, NoiseScaleConfig

jax = lazy("jax")

#: The options of otod's own nets: refused beside a contract model, which defines its own network and data.
NET_OPTIONS = ("width", "depth", "heads", "activation", "architecture", "init", "data", "examples", "loss")


def load_model(reference: str, given: frozenset):
    """Refuse the net-only options given beside ``--model FILE.py:NAME``, then load and check the model (the
    finite-loss check comes with the measurement, in its precision)."""
    from otod.core.api import refuse_ignored
    from otod.nets.model.contract import load

    for name in NET_OPTIONS:
        refuse_ignored(given, name, f"describes otod's own nets; --model {reference} defines its own network and "
                                    "data, drop it")
    return load(reference, finite=False)


def chunk_option(value) -> int | None:
    """``--chunk``: examples per chunk of the data (None: sized from the model's activations)."""
    from otod.core.api import positive_int

    return None if value is None else positive_int(value, "--chunk", "256")


def flops_per_example(model) -> float:
    """`otod.nets.model.contract.flops_per_example` (XLA's flop count of the loss on one example)."""
    from otod.nets.model.contract import flops_per_example as count

    return count(model)


def curvature_seconds(model, checkpoints, k: int, probes: int, m: int, batch: int, per_layer: bool = False) -> float:
    """`otod.nets.curvature_cli.plan_seconds` for a contract model: compile, training, then per checkpoint the
    top-k Lanczos and the dense columns or the SLQ probes (each product 4 × n × flops per example); with
    ``per_layer``, a top-1 Lanczos per layer (`otod.nets.measure.curvature_layers`, each product counted as the whole
    net's)."""
    from otod.nets.measure.curvature import default_top_steps
    from otod.nets.measure.dense import is_dense
    from otod.nets.measure.noise_scale import COMPILE_SECONDS, SECONDS_PER_FLOP, SECONDS_PER_STEP

    size, n, flops = model.parameter_count, model.examples, flops_per_example(model)
    product = 4.0 * n * flops
    top = default_top_steps(k, size)
    per = top * product + 2.0 * size * top ** 2
    per += (size * product + 4.0 * size ** 3 / 3) if is_dense(size) else (probes * m * product
                                                                         + 2.0 * size * probes * m ** 2)
    if per_layer:
        from otod.nets.measure.curvature_layers import layer_count

        per += layer_count(model.params) * default_top_steps(1, size) * product
    train = max(checkpoints) * (SECONDS_PER_STEP + 3 * batch * flops * SECONDS_PER_FLOP)
    return COMPILE_SECONDS + train + len(checkpoints) * per * SECONDS_PER_FLOP


def noise_seconds(model, checkpoints, pairs, draws: int, batch: int, trace_examples: int | None) -> float:
    """`otod.nets.measure.noise_scale.plan_seconds` for a contract model: tr(HΣ)'s m HVPs over n examples each (m = n
    unless estimated) dominate."""
    from otod.nets.measure.noise_scale import (COMPILE_SECONDS, SECONDS_PER_FLOP, SECONDS_PER_STEP,
                                             SECONDS_PER_TRACE_FLOP)

    n, flops = model.examples, flops_per_example(model)
    m = n if trace_examples is None else min(n, trace_examples)
    per = m * n * flops * SECONDS_PER_TRACE_FLOP + sum(3 * draws * big * flops * SECONDS_PER_FLOP for _, big in pairs)
    train = max(checkpoints) * (SECONDS_PER_STEP + 3 * batch * flops * SECONDS_PER_FLOP)
    return COMPILE_SECONDS + train + len(checkpoints) * per


def _save(path: Path, kind: str, config: dict, precision: str, records, wall: float,
          extra: dict | None = None) -> Path:
    from otod.core.api import environment, save_results

    meta = {"kind": kind, "config": config, "environment": environment(), "precision": precision,
            "wall_time_s": wall, "complete": True, **(extra or {})}
    return save_results(path, meta, [dict(r) for r in records])


def run_curvature(model, config: CurvatureConfig, *, batch: int, chunk: int | None, out: str, yes: bool) -> str:
    """Measure ``config`` (`otod.nets.api.measure_curvature`; its ``lanczos_steps`` as asked, capped at the
    parameter count), write the results file and return the printed text."""
    from otod.core.api import refuse_time
    from otod.nets import curvature_text as cli
    from otod.nets.api import curvature_plan, measure_curvature
    from otod.nets.measure.curvature import definitions
    from otod.nets.measure.slq_error import LEVEL

    if batch > model.examples:
        raise OtodError(f"--batch {batch}: larger than the data set ({model.examples:,} examples); use --batch ≤ "
                        f"{model.examples}")
    c = config
    m = curvature_plan(model, c.k, c.probes, c.lanczos_steps, c.x64)
    refuse_time(curvature_seconds(model, c.checkpoints, c.k, c.probes, m, batch, c.per_layer), yes,
                f"curvature of {model.name}", "use fewer or earlier --steps checkpoints, fewer --probes or --lanczos-steps")
    start = time.perf_counter()
    result = measure_curvature(model, list(c.checkpoints), lr=c.lr, batch=batch, seed=c.seed, k=c.k, probes=c.probes,
                               lanczos_steps=m, quantile=c.quantile, damping=c.damping, x64=c.x64, chunk=chunk,
                               per_layer=c.per_layer, progress=count_progress("curvature checkpoints"))
    wall = time.perf_counter() - start
    records = [dict(r) for r in result.records]
    path = cli.results_file(out, {"kind": "curvature-model", **result.config})
    saved = _save(path, "curvature", result.config, c.precision, records, wall,
                  {"definitions": definitions(c.quantile, c.damping), "exact": records[0]["exact"],
                   "interval_level": LEVEL})
    r = records[0]
    capped = f" (capped at P from {c.lanczos_steps})" if m < c.lanczos_steps else ""
    lines = [f"{model.name}: {model.examples:,} examples, P = {model.parameter_count:,} parameters, data in chunks "
             f"of {r['chunk']:,}; SGD lr {c.lr:g} batch {batch}; {c.precision}",
             cli.spectrum_line(records).replace("Lanczos steps", "Lanczos steps" + capped, 1)]
    lines += [f"  {name}: {text}" for name, text in definitions(c.quantile, c.damping).items()
              if name not in ("spectrum", "test_accuracy")]
    lines += [cli.table(records), f"{len(records)} checkpoints in {wall:.1f} s; wrote {saved}"]
    return "\n".join(lines)


def run_noise(model, config: NoiseScaleConfig, *, batch: int, chunk: int | None, out: str, yes: bool,
              pairs_given: bool) -> str:
    """Measure ``config`` (`otod.nets.api.measure_noise`; without ``pairs_given``, its default pairs that fit the
    data), write the results file and return the printed text."""
    import dataclasses

    from otod.core.api import make_folder, refuse_time, results_out
    from otod.nets.api import measure_noise
    from otod.nets.measure.noise_scale import net_report, results_path

    n = model.examples
    if n < 2:
        raise OtodError(f"--model {model.name}: the noise scale needs at least 2 training examples")
    if batch > n:
        raise OtodError(f"--batch {batch}: larger than the data set ({n:,} examples); use --batch ≤ {n}")
    if not pairs_given:  # the default pairs whose big batch is a strict part of the data, else one of B_big = n/2
        fit = tuple(p for p in config.pairs if p[1] < n) or ((max(1, n // 16), max(2, n // 2)),)
        config = dataclasses.replace(config, pairs=fit)
    c = config
    for small, big in c.pairs:
        if big > n:
            raise OtodError(f"--pairs {small}:{big}: B_big larger than the data set ({n:,} examples); use "
                            f"B_big ≤ {n}")
    out = results_out(out)
    make_folder(Path(out).parent if Path(out).suffix else out)
    refuse_time(noise_seconds(model, c.checkpoints, c.pairs, c.draws, batch, c.trace_examples), yes,
                f"noise-scale of {model.name}", "use fewer --steps checkpoints or fewer examples")
    start = time.perf_counter()
    result = measure_noise(model, list(c.checkpoints), lr=c.lr, batch=batch, seed=c.seed, pairs=list(c.pairs),
                           draws=c.draws, x64=c.x64, chunk=chunk, trace_examples=c.trace_examples,
                           progress=count_progress("noise-scale checkpoints"))
    wall = time.perf_counter() - start
    path = results_path(out, {"kind": "noise-scale-model", **result.config})
    saved = _save(path, "noise-scale-model", result.config, "float64", result.records, wall)
    what = (f"{model.name} ({n:,} examples in chunks of {result.records[0]['chunk']:,}, P = "
            f"{model.parameter_count:,})")
    return f"{net_report(None, list(result.records), c.lr, c.seed, what, batch)}\nresults: {saved}"
