"""``otod curvature``: the Hessian spectrum of a net's full training loss at checkpoints of one SGD run, printed
and recorded.

The options name the net as `otod.nets.model.problem.NetSpec` does (model, width, depth, activation, architecture,
init, data, examples, loss, batch); ``--k`` top eigenvalues by Lanczos; ``--probes`` × ``--lanczos-steps`` for
stochastic Lanczos quadrature; ``--steps`` the checkpoints of the run (0 = init) at ``--lr``. κ is stated by the
definitions of `otod.nets.measure.curvature` (λ_max over the eigenvalue at ``--quantile`` of the SLQ spectrum, and the
damped κ_δ with ``--damping``), and the results file records them with the config, versions, device, precision,
time and command line (`otod.core.results.environment`). Every option is checked before JAX is imported, so bad
input is one line and exit code 2 at once.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import click

from otod.core.api import (finite_float, OtodError, positive_float, positive_int, representable_lr, seed_value,
                           user_errors)
from otod.nets.measure.settings import CurvatureConfig
from otod.nets.curvature_text import results_file, spectrum_line, table

#: Above this, the Lanczos bases of all probes (probes × (m + 1) × P floats) are refused: use fewer probes or steps.
MAX_BASIS_BYTES = 8 * 2 ** 30


def unit_interval(value, option: str, example: str) -> float:
    """A number strictly between 0 and 1."""
    number = finite_float(value, option, example)
    if not 0 < number < 1:
        raise OtodError(f"{option} {value}: need a number strictly between 0 and 1, e.g. {option} {example}")
    return number


def build_spec(model, width, depth, activation, architecture, init, data, examples, loss, batch):
    """The NetSpec of the options (its own checks raise `OtodError`); --loss defaults to cross-entropy on the
    digits and squared on the regressions."""
    from otod.nets.model.problem import NetSpec

    width = positive_int(width, "--width", "32")
    depth = positive_int(depth, "--depth", "2")
    batch = positive_int(batch, "--batch", "32")
    examples = None if examples is None else positive_int(examples, "--examples", "512")
    loss = loss or ("cross-entropy" if data == "digits" else "squared")
    return NetSpec(model=model, width=width, depth=depth, activation=activation, architecture=architecture,
                   init=init, data=data, examples=examples, loss=loss, batch=batch)


def check_plan(spec, k: int, probes: int, lanczos_steps: int, x64: bool, given: frozenset = frozenset()) -> int:
    """Refuse a k above the parameter count, a ``--lanczos-steps`` the user gave above it (Lanczos on a P × P
    matrix stops at P steps; the default is capped there and the header says so) or bases that do not fit in
    memory; return the Lanczos steps per probe, at most P."""
    size = spec.parameter_count
    if k > size:
        raise OtodError(f"--k {k}: larger than the parameter count {size} of this net; use --k ≤ {size}")
    if "lanczos_steps" in given and lanczos_steps > size:
        raise OtodError(f"--lanczos-steps {lanczos_steps}: more than the {size:,} parameters of this net (Lanczos "
                        f"on its P × P Hessian ends after P steps); use --lanczos-steps ≤ {size}")
    from otod.nets.measure.dense import dense_bytes, is_dense

    steps = min(lanczos_steps, size)
    need = (probes * (steps + 1) + (k * 3 + 41)) * size * (8 if x64 else 4)
    need += dense_bytes(size) if is_dense(size) else 0
    if need > MAX_BASIS_BYTES:
        raise OtodError(f"--probes {probes} --lanczos-steps {lanczos_steps}: the Lanczos bases need {need / 2**30:.1f}"
                        f" GiB for {size:,} parameters (limit {MAX_BASIS_BYTES / 2**30:.0f} GiB); use fewer "
                        "--probes or --lanczos-steps")
    return steps


def plan_seconds(spec, checkpoints, k: int, probes: int, lanczos_steps: int, per_layer: bool = False) -> float:
    """The command's estimated seconds: compile, the SGD run to the last checkpoint
    (`otod.nets.measure.noise_scale.train_seconds`), then per checkpoint the top-k Lanczos and the SLQ probes: each
    Lanczos step one Hessian-vector product over the n training examples (about 4 × the forward flops each) and a
    re-orthogonalization against the basis so far (4·j·P at step j). The constants are the noise scale's, measured
    on the 2-core development machine (`otod.nets.measure.noise_scale`): the default command with SLQ (3 checkpoints,
    2,610 products) was estimated at 18 s and ran 10.7 s; ``--lanczos-steps 2410`` estimated at 290 s, ran 228 s.
    Where the spectrum is dense (`otod.nets.measure.dense`) the SLQ probes give way to P products and the
    eigensolver's 4P³/3 flops (Golub & Van Loan §8.3: the tridiagonal reduction). ``per_layer`` adds, per
    weight layer, the top-1 Lanczos on its block (each product counted as the whole net's: an upper estimate)."""
    from otod.nets.measure.curvature import default_top_steps
    from otod.nets.measure.dense import is_dense
    from otod.nets.measure.noise_scale import COMPILE_SECONDS, SECONDS_PER_FLOP, train_seconds

    size, n = spec.parameter_count, spec.dataset().examples
    product = 4.0 * n * spec.flops_per_example()
    top = default_top_steps(k, size)
    flops = top * product + 2.0 * size * top ** 2
    if is_dense(size):
        flops += size * product + 4.0 * size ** 3 / 3
    else:
        flops += probes * lanczos_steps * product + 2.0 * size * probes * lanczos_steps ** 2
    if per_layer:
        flops += spec.depth * default_top_steps(1, size) * product
    return COMPILE_SECONDS + train_seconds(spec, max(checkpoints)) + len(checkpoints) * flops * SECONDS_PER_FLOP


@click.command("curvature")
@click.option("--model", default="mlp", show_default=True,
              help="mlp or cnn, or your own JAX model: FILE.py:NAME or package.module:NAME, a function of no "
                   "arguments returning (loss, params, data[, init]) (docs/models.md). E.g. --model cnn, "
                   "--model my_model.py:problem")
@click.option("--width", default="32", show_default=True, help="Hidden units (MLP) or channels (CNN). E.g. --width 64")
@click.option("--depth", default="2", show_default=True, help="Weight layers (1: a linear model). E.g. --depth 3")
@click.option("--activation", default="relu", show_default=True, help="relu, tanh or linear. E.g. --activation tanh")
@click.option("--architecture", default="plain", show_default=True, help="plain or residual.")
@click.option("--init", default="kaiming", show_default=True, help="kaiming, xavier, orthogonal or small.")
@click.option("--data", default="digits", show_default=True, help="digits, teacher or gaussian. E.g. --data teacher")
@click.option("--examples", default=None, help="Training examples (digits: all 1,438 kept for training; synthetic: "
                                               "1,024). E.g. --examples 512")
@click.option("--loss", default=None, help="cross-entropy or squared [default: cross-entropy on digits, squared "
                                           "on the regressions].")
@click.option("--batch", default="32", show_default=True, help="SGD minibatch of the training run. E.g. --batch 64")
@click.option("--k", "k", default="10", show_default=True, help="Top eigenvalues by Lanczos. E.g. --k 20")
@click.option("--probes", default="8", show_default=True, help="SLQ random starts (Rademacher). E.g. --probes 16")
@click.option("--lanczos-steps", default="100", show_default=True,
              help="Lanczos steps per SLQ probe (at most the parameter count). E.g. --lanczos-steps 150")
@click.option("--steps", default="0,100,1000", show_default=True,
              help="Checkpoints of the SGD run where the curvature is measured (0 = init). E.g. --steps 0,500")
@click.option("--lr", default="0.1", show_default=True, help="SGD learning rate of the run. E.g. --lr 0.05")
@click.option("--seed", default="0", show_default=True, help="Root seed of the start, minibatches and probes.")
@click.option("--quantile", default="0.9", show_default=True,
              help="q of κ_q = λ_max / λ_q, λ_q the eigenvalue below which a fraction q of the spectrum lies.")
@click.option("--damping", default="1e-3", show_default=True,
              help="δ of κ_δ = (λ_max + δ)/(max(λ_min, 0) + δ). E.g. --damping 1e-4")
@click.option("--x64", is_flag=True, help="Float64 training and curvature (default float32).")
@click.option("--out", default="results", show_default=True,
              help="Folder (writes curvature-<digest>.parquet) or a results file (.parquet, .json, .npz).")
@click.option("--chunk", default=None,
              help="--model FILE.py:NAME only: examples per chunk of the data over which the loss and its Hessian-"
                   "vector products accumulate (default: as many as fit 128 MiB of activations). E.g. --chunk 256")
@click.option("--per-layer", is_flag=True,
              help="Also the top eigenvalue of each layer's diagonal Hessian block (that layer's parameters, the "
                   "others held fixed) beside the whole net's. A layer: the parameter leaves that share a parent in "
                   "the params pytree (otod's nets: each weight layer's w and b). E.g. --per-layer")
@click.option("--yes", is_flag=True, help="Run even when the estimate says it takes more than an hour. E.g. --yes")
@user_errors
def curvature_command(model, width, depth, activation, architecture, init, data, examples, loss, batch, k, probes,
                      lanczos_steps, steps, lr, seed, quantile, damping, x64, out, chunk, per_layer, yes):
    """The Hessian spectrum of a net's training loss along one SGD run: the top-k eigenvalues (Lanczos with full
    re-orthogonalization), the spectral density (stochastic Lanczos quadrature, Ghorbani et al. 2019) and κ.

    \b
    κ_q = λ_max / λ_q: λ_q the eigenvalue below which a fraction q (--quantile) of the
          SLQ spectral mass lies (none where λ_q ≤ 0: a net's spectrum has a bulk at 0 and
          negative eigenvalues, so λ_max/λ_min means nothing);
    κ_δ = (λ_max + δ)/(max(λ_min, 0) + δ), δ = --damping.
    neg. mass: the fraction of eigenvalues below −10⁻³·λ_max.
    \b
    Examples:
      otod curvature
      otod curvature --width 64 --steps 0,200,2000 --k 20 --x64
      otod curvature --data teacher --depth 3 --activation tanh --lr 0.05
      otod curvature --model tests/fixtures/models/plain_jax.py:mlp --steps 0,100 --x64
      otod curvature --per-layer --steps 0,1000
    """
    from otod.core.api import given_options, refuse_ignored, refuse_time
    from otod.nets.model.contract import is_reference
    from otod.nets.measure.noise_scale import describe

    if is_reference(model):
        click.echo(_contract(model, batch=batch, k=k, probes=probes, lanczos_steps=lanczos_steps, steps=steps, lr=lr,
                             seed=seed, quantile=quantile, damping=damping, x64=x64, out=out, chunk=chunk, yes=yes,
                             per_layer=per_layer))
        return
    refuse_ignored(given_options(), "chunk", "only with --model FILE.py:NAME (otod's own nets are measured in one "
                                             "call), e.g. --model my_model.py:problem")
    spec = build_spec(model, width, depth, activation, architecture, init, data, examples, loss, batch)
    asked = curvature_options(k=k, probes=probes, lanczos_steps=lanczos_steps, steps=steps, lr=lr, seed=seed,
                              quantile=quantile, damping=damping, x64=x64, per_layer=per_layer)
    m = check_plan(spec, asked.k, asked.probes, asked.lanczos_steps, asked.x64, given_options())
    config = dataclasses.replace(asked, lanczos_steps=m)
    refuse_time(plan_seconds(spec, config.checkpoints, config.k, config.probes, m, per_layer), yes,
                f"curvature of {describe(spec)}",
                "use fewer or earlier --steps checkpoints, fewer --probes or --lanczos-steps, or a smaller net")
    path = results_file(out, config.stored_for_net(spec))
    from otod.core.api import refuse_unwritable

    refuse_unwritable(out)  # before the measurement, which takes minutes
    from otod.core.api import count_progress

    records, saved, wall = measure(spec, config, path, count_progress("curvature checkpoints"))
    from otod.nets.measure.curvature import definitions

    capped = f" (capped at P from {asked.lanczos_steps})" if m < asked.lanczos_steps else ""
    click.echo(f"{spec.model} width {spec.width} depth {spec.depth} {spec.activation} {spec.architecture} "
               f"{spec.init}, {spec.data} ({spec.dataset().examples} examples), {spec.loss}; "
               f"P = {spec.parameter_count:,} parameters, data in chunks of {records[0]['chunk']:,}; SGD lr "
               f"{config.lr:g} batch {spec.batch}; {config.precision}")
    click.echo(spectrum_line(records).replace("Lanczos steps", "Lanczos steps" + capped, 1))
    for name, text in definitions(config.quantile, config.damping).items():
        if name != "spectrum":  # the line above says it for this net
            click.echo(f"  {name}: {text}")
    click.echo(table(records))
    click.echo(f"{len(records)} checkpoints in {wall:.1f} s; wrote {saved}")


def curvature_options(*, k, probes, lanczos_steps, steps, lr, seed, quantile, damping, x64,
                      per_layer) -> CurvatureConfig:
    """The command's measurement options, each checked (one line, exit code 2, before JAX is imported), as the
    `CurvatureConfig` the rest of the command reads; ``lanczos_steps`` as asked (capped at P by `check_plan`)."""
    from otod.nets.measure.noise_scale import parse_checkpoints

    return CurvatureConfig(k=positive_int(k, "--k", "10"), probes=positive_int(probes, "--probes", "8"),
                           lanczos_steps=positive_int(lanczos_steps, "--lanczos-steps", "100", minimum=2),
                           checkpoints=tuple(parse_checkpoints(steps)),
                           lr=representable_lr(positive_float(lr, "--lr", "0.1"), lr, "0.1"), seed=seed_value(seed),
                           quantile=unit_interval(quantile, "--quantile", "0.9"),
                           damping=positive_float(damping, "--damping", "1e-3"), x64=bool(x64),
                           per_layer=bool(per_layer))


def _contract(reference, *, batch, k, probes, lanczos_steps, steps, lr, seed, quantile, damping, x64, out, chunk,
              yes, per_layer=False) -> str:
    """``curvature --model FILE.py:NAME``: every option checked, then the model loaded and checked, then measured
    (`otod.nets.contract_cli.run_curvature`)."""
    from otod.core.api import given_options, make_folder, results_out
    from otod.nets import contract_cli

    config = curvature_options(k=k, probes=probes, lanczos_steps=lanczos_steps, steps=steps, lr=lr, seed=seed,
                               quantile=quantile, damping=damping, x64=x64, per_layer=per_layer)
    batch = positive_int(batch, "--batch", "32")
    chunk = contract_cli.chunk_option(chunk)
    out = results_out(out)
    make_folder(Path(out).parent if Path(out).suffix else out)
    model = contract_cli.load_model(reference, given_options())
    if "lanczos_steps" in given_options() and config.lanczos_steps > model.parameter_count:
        raise OtodError(f"--lanczos-steps {lanczos_steps}: more than the {model.parameter_count:,} parameters of "
                        f"{reference}; use --lanczos-steps ≤ {model.parameter_count}")
    if config.k > model.parameter_count:
        raise OtodError(f"--k {k}: larger than the parameter count {model.parameter_count:,} of {reference}; use "
                        f"--k ≤ {model.parameter_count}")
    return contract_cli.run_curvature(model, config, batch=batch, chunk=chunk, out=out, yes=yes)


def measure(spec, config: CurvatureConfig, path: Path, progress=None) -> tuple[list[dict], Path, float]:
    """Measure the curvature of ``spec`` along the run ``config`` describes and write it to ``path`` with the
    metadata every results file carries (config, environment: versions, device, time, command line; precision,
    wall time and the κ definitions): (records, path, wall seconds)."""
    from otod.core.api import environment, save_results
    from otod.nets.measure.curvature import curvature_along_training, definitions
    from otod.nets.measure.slq_error import LEVEL

    c = config
    start = time.perf_counter()
    records = curvature_along_training(spec, list(c.checkpoints), c.lr, c.seed, c.k, c.probes, c.lanczos_steps,
                                       c.x64, c.quantile, c.damping, per_layer=c.per_layer, progress=progress)
    wall = time.perf_counter() - start
    meta = {"kind": "curvature", "config": c.stored_for_net(spec), "environment": environment(),
            "precision": c.precision, "wall_time_s": wall, "definitions": definitions(c.quantile, c.damping),
            "exact": records[0]["exact"] if records else [], "interval_level": LEVEL}
    return records, save_results(path, meta, records), wall


def measured(spec, config: CurvatureConfig, folder: str = "results") -> list[dict]:
    """The records of ``config`` on ``spec``: read back from ``<folder>/curvature-<digest>.parquet`` where an
    earlier run (a figure, or `otod curvature --out <folder>`) wrote them, else measured and written there."""
    from otod.core.api import load_results

    from otod.core.api import refuse_to_measure

    path = results_file(folder, config.stored_for_net(spec))
    if path.exists():
        return load_results(path).records
    refuse_to_measure(path)  # a figure that reads committed results never measures (`otod.core.figure_sources`)
    return measure(spec, config, path)[0]


def commands() -> dict:
    """The obstacle's top-level commands (the registry's ``{group: [commands]}``; "" is the top level)."""
    return {"": [curvature_command]}
