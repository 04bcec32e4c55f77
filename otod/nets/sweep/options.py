"""From user-facing option values (strings as typed, or TOML values) to a ``net`` `SweepConfig`, shared by the
command line and the experiment specs."""

from __future__ import annotations

import dataclasses

import numpy as np

from otod.core.api import (OtodError, SweepConfig, Target, finite_float, parse_lr, parse_methods, parse_range,
                           positive_int, seed_value)
from otod.nets.model import models
from otod.nets.sweep.kind import ARCHITECTURE, BATCH, DEFAULT_LR_GRID, DEPTH, EXAMPLES, INIT, METHODS, WIDTH
from otod.nets.model.problem import NetSpec
from otod.core.api import BETA, NoiseOptions, whole_values
from otod.noise.search import DEFAULT_BETAS

#: What a bare ``otod sweep net`` runs: digits, a one-hidden-layer MLP of width 32, SGD, B = 8…1024 (8 values).
DEFAULTS = {"batch": "8..1024:8:log", "method": "sgd", "target": "0.1", "seeds": 5}  # a model: `default_batches`


def names(text, axis, choices) -> tuple[str, ...]:
    """A comma list of names of a coded axis, each checked."""
    values = tuple(v.strip() for v in str(text).split(",") if v.strip())
    for v in values:
        if v not in choices:
            raise OtodError(f"{axis.option} {v}: unknown; choose from {', '.join(choices)}, e.g. {axis.option} "
                            f"{axis.example}")
    if not values:
        raise OtodError(f"{axis.option}: no values given, e.g. {axis.option} {axis.example}")
    return values


def whole_axis(text, axis) -> tuple[float, ...]:
    return axis.check(whole_values(text, axis.option, axis.what))


def net_config(*, batch=None, width="32", depth="2", init="kaiming", architecture="plain", model="mlp",
               activation="relu", data="digits", examples=None, loss=None, method=None, target=None, beta=None,
               schedule="constant", max_iters=None, seeds=None, seed=None, lr="tuned", lr_grid=None, x64=None,
               chunk_seconds=None, stream=False, regime=None, heads=None) -> SweepConfig:
    """The config of ``otod sweep net`` (None: the default of `DEFAULTS`). Several values of ``width``, ``depth``
    or ``examples`` make them axes (every batch must fit in every training set); ``init`` and ``architecture``
    lists are coded traced axes. ``stream``: fresh teacher examples every step (`otod.nets.model.family`); ``target``
    may then list several losses (a ladder: each one's steps are recorded in one run). ``model``: mlp, cnn, a
    reference to a user's model (``FILE.py:NAME``, `otod.nets.model.contract`) or a checked `otod.nets.model.contract.Model`
    (the Python function's), which the net's own options (width, depth, init, …) do not apply to; ``examples``
    then takes the first N of its data. ``regime`` (stream, finite): data as the batch-size papers mean it, each
    cell (D, width) stopped at the held-out loss its reference run reaches after D examples
    (`otod.nets.model.reference`, `with_regime`). ``model`` transformer: the sequence task's transformer
    (`otod.nets.model.transformer_net`: ``width`` its d_model, ``depth`` its blocks, ``heads`` its attention heads,
    default 2), with ``data`` sequence."""
    from otod.nets.model.contract import Model, is_reference

    methods = parse_methods(DEFAULTS["method"] if method is None else method)
    for m in methods:
        if m not in METHODS:
            raise OtodError(f"--method {m}: unknown method for net sweeps; choose from {', '.join(METHODS)}, "
                            "e.g. --method sgd,adam")
    if regime is not None:
        refuse_regime(regime, stream=stream, examples=examples, target=target, model=model, data=data, depth=depth)
        stream = regime == "stream"
    elif stream and examples is not None:
        raise OtodError(f"--examples {examples}: a stream draws fresh examples every step and has no training set; "
                        "drop --examples (the examples seen are steps × B) or drop --stream")
    sizes = (None,) if examples is None else whole_axis(examples, EXAMPLES)
    if isinstance(model, Model) or is_reference(model):
        if stream:
            raise OtodError("--stream: draws fresh examples from otod's teacher; a user's model brings its own data, "
                            "drop --stream")
        spec, batches = user_problem(model, batch, sizes)
        axes = [("batch", batches)] + ([("examples", sizes)] if len(sizes) > 1 else [])
    else:
        batches = whole_axis(DEFAULTS["batch"] if batch is None else batch, BATCH)
        widths, depths = whole_axis(width, WIDTH), whole_axis(depth, DEPTH)
        inits, archs = names(init, INIT, models.INITS), names(architecture, ARCHITECTURE, models.ARCHITECTURES)
        loss = loss or ("cross-entropy" if data in ("digits", "sequence") else "squared")
        if model == "transformer" and (len(inits) > 1 or len(archs) > 1):
            raise OtodError("--init, --architecture: the MLP's axes; the transformer has its own init and residual "
                            "blocks, drop them")
        heads = None if heads is None else positive_int(heads, "--heads", "2")
        if model == "transformer":  # every width against the heads before the first width's data are drawn
            from otod.nets.model.transformer_net import check_heads

            for w in widths:
                check_heads(int(w), heads)
        spec = NetSpec(model=model, width=int(widths[0]), depth=int(depths[0]), activation=activation,
                       architecture=archs[0], init=inits[0], data=data, examples=examples_of(sizes[0]), loss=loss,
                       batch=int(min(batches)), stream=True if stream else None,
                       heads=heads)
        for w in widths[1:]:  # every width is a net of its own (the transformer's: a multiple of its heads)
            dataclasses.replace(spec, width=int(w))
        if not stream:
            check_sizes(spec, sizes, batches)
        if regime is not None:
            spec = dataclasses.replace(spec, examples=examples_of(sizes[0]), reference_batch=int(min(batches)))
        axes = [("batch", batches)] if len(batches) > 1 or (len(widths) == 1 and len(depths) == 1) else []
        axes += [(name, values) for name, values in (("width", widths), ("depth", depths), ("examples", sizes))
                 if len(values) > 1]
        axes += [(name, tuple(float(axis.labels.index(v)) for v in chosen)) for name, axis, chosen in
                 (("init", INIT, inits), ("architecture", ARCHITECTURE, archs)) if len(chosen) > 1]
    uses_beta = "heavy-ball" in methods
    if beta is not None and not uses_beta:
        raise OtodError(f"--beta {beta}: only heavy-ball uses β, and --method {','.join(methods)} does not include "
                        "it; drop --beta or add it, e.g. --method sgd,heavy-ball")
    betas = BETA.check(parse_range(str(beta), "--beta", what="β values")) if beta is not None else (
        DEFAULT_BETAS if uses_beta else (0.0,))
    axes += [("beta", betas)]
    if len(batches) == 1:
        spec = dataclasses.replace(spec, batch=int(batches[0]))
    seeds = DEFAULTS["seeds"] if seeds is None else seeds
    seed = 0 if seed is None else seed_value(seed)
    if spec.kind == "model":
        from otod.nets.model.model_problem import refuse_bad_starts

        refuse_bad_starts(spec, seeds, seed)
    grid = DEFAULT_LR_GRID if lr_grid is None else round_positive(parse_range(str(lr_grid), "--lr-grid"))
    if regime is not None:
        spec = with_regime(spec, sizes, widths, grid, seeds, seed, methods[0], NoiseOptions(schedule=schedule))
        target = "1"  # every cell's metric is its held-out loss over its own target (`NetSpec.metric_scale`)
    ladder = targets(DEFAULTS["target"] if target is None else target, stream and regime is None)
    tol = min(ladder)
    return SweepConfig(sweep="net", axes=tuple(axes), problem=spec, methods=methods,
                       target=Target(tol=tol, kind="absolute", ladder=ladder, check_every=1),
                       max_iters=None if max_iters is None else positive_int(max_iters, "--max-iters", "20000"),
                       seeds=seeds, seed=seed,
                       lr=parse_lr(lr), lr_grid=grid, x64=x64, options=NoiseOptions(schedule=schedule),
                       **({} if chunk_seconds is None else {"chunk_seconds": chunk_seconds}))


def refuse_regime(regime, *, stream, examples, target, model, data, depth) -> None:
    """Refuse, in one line, a ``--regime`` the options around it contradict: it needs the D values (``--examples``)
    its held-out targets are set at, sets the target itself, is otod's own nets' (a user's model brings its own
    data), and the stream needs a teacher."""
    from otod.nets.model.reference import REGIMES

    if regime not in REGIMES:
        raise OtodError(f"--regime {regime}: unknown; choose from {', '.join(REGIMES)}, e.g. --regime stream")
    if stream:
        raise OtodError("--stream: --regime stream is the stream with a held-out target per D; drop --stream")
    if examples is None:
        raise OtodError(f"--regime {regime}: needs the data sizes D its held-out targets are set at, e.g. "
                        "--examples 256,1024,4096 (with --width 8,32 for a joint grid)")
    if target is not None:
        raise OtodError(f"--target {target}: --regime sets each cell's target (the held-out loss its reference run "
                        "reaches after D examples); drop --target")
    if not isinstance(model, str) or model not in models.MODELS:
        raise OtodError(f"--regime: otod's own nets only ({', '.join(models.MODELS)}); --model {model} brings its own "
                        "data, drop --regime")
    if regime == "stream" and data == "digits":
        raise OtodError("--regime stream: draws fresh examples from a source; use --data teacher, gaussian or "
                        "sequence (with --model transformer)")
    if len(str(depth).split(",")) > 1 or ".." in str(depth):
        raise OtodError(f"--depth {depth}: --regime sets a target per (D, width) cell at one depth; give one --depth")


def with_regime(spec: NetSpec, sizes, widths, lrs, seeds: int, seed: int, method: str, options) -> NetSpec:
    """``spec`` with every cell's held-out target (`otod.nets.model.reference.reference_table`: the reference run at
    batch ``spec.reference_batch``, every lr of ``lrs`` and every seed)."""
    from otod.nets.model.reference import reference_table

    table = reference_table(spec, sizes, widths, spec.reference_batch, lrs, seeds, seed, method, options)
    return dataclasses.replace(spec, held_out_targets=table)


def default_batches(examples: int) -> tuple[float, ...]:
    """A user model's default batches: the command's 8, 16, …, 1024, those that fit its ``examples`` (from 1
    where fewer than 8 fit)."""
    top = min(1024, examples)
    low = 8 if top >= 8 else 1
    return tuple(float(2 ** k) for k in range(int(np.log2(low)), int(np.log2(top)) + 1))


def user_problem(model, batch, sizes) -> tuple:
    """(`otod.nets.model.model_problem.ModelProblem`, batches) of a reference (loaded and checked now) or a checked
    model, at the first of ``sizes`` (its first N examples; None: all); every size checked against the data and
    against the largest batch (default: `default_batches` of the smallest set)."""
    from otod.nets.model.contract import Model, load
    from otod.nets.model.model_problem import problem_of

    reference = f"python:{model.name}" if isinstance(model, Model) else str(model)
    model = model if isinstance(model, Model) else load(str(model), finite=False)
    refuse_embedded_data(model, reference, max(min(model.examples, examples_of(d) or model.examples) for d in sizes))
    spec = problem_of(model, 1, examples_of(sizes[0]), reference=reference)
    smallest = min(dataclasses.replace(spec, examples=examples_of(d)).training_examples for d in sizes)
    batches = default_batches(smallest) if batch is None else whole_axis(batch, BATCH)
    if max(batches) > smallest:
        raise OtodError(f"--batch {max(batches):g}: larger than the data set ({smallest:,} training examples); "
                        f"use --batch ≤ {smallest}")
    from otod.nets.model.model_problem import trace_work

    trace_work(spec, sizes, batches)
    return dataclasses.replace(spec, batch=int(min(batches))), batches


#: The sweep's programs hold a model's training data as compiled constants (the metric's and the gradient's
#: closures). Measured on 2·10⁷ examples of 8 float32 features (0.72 GB): JAX captured 2.16 GB of constants (3
#: copies) and the process reached 6.8 GB of memory, still compiling after 240 s.
CONSTANT_COPIES = 3
MEMORY_COPIES = 10
#: JAX's own threshold (``jax_captured_constants_warn_bytes``) above which captured constants are "expensive".
MAX_CONSTANT_BYTES = 2 * 10 ** 9


def refuse_embedded_data(model, reference: str, examples: int, available: int | None = None) -> None:
    """Refuse, before anything is computed or compiled (the start's loss over the data in float64 took 5 GB
    first), a contract model whose first ``examples`` examples, held as the programs' constants
    (`CONSTANT_COPIES` copies), pass `MAX_CONSTANT_BYTES`, or whose `MEMORY_COPIES` copies do not fit in the
    free memory (`otod.core.preflight.refuse_memory`)."""
    from otod.core.api import refuse_memory

    data = sum(int(np.prod(np.shape(a)[1:])) * np.asarray(a).dtype.itemsize for a in model.data) * examples
    example = max(1, MAX_CONSTANT_BYTES // (CONSTANT_COPIES * max(1, data // max(1, examples))))
    if CONSTANT_COPIES * data > MAX_CONSTANT_BYTES:
        raise OtodError(f"--model {reference}: its {examples:,} training examples ({data / 1e9:.3g} GB) would be "
                        f"compiled into the sweep's programs as {CONSTANT_COPIES * data / 1e9:.3g} GB of constants "
                        f"(above {MAX_CONSTANT_BYTES / 1e9:g} GB compiling takes minutes and many times the data's "
                        f"memory); use its first N examples, e.g. --examples {min(example, examples - 1)}")
    refuse_memory(MEMORY_COPIES * data, f"--model {reference} with {examples:,} training examples "
                  f"({data / 1e9:.3g} GB, compiled into the programs)", "use fewer --examples", available)


def examples_of(value) -> int | None:
    return None if value is None else int(value)


def check_sizes(spec: NetSpec, sizes, batches) -> None:
    """Refuse, in one line, a training-set size the data set cannot give (digits: at most its 1,438 training
    images) or smaller than the largest batch: every (B, D) pair of the grid runs, so max B ≤ min D."""
    for d in sizes[1:]:
        NetSpec(**{**spec.__dict__, "examples": examples_of(d)})  # refuses a size the data cannot give
    smallest = min(NetSpec(**{**spec.__dict__, "examples": examples_of(d)}).dataset().examples for d in sizes)
    if max(batches) > smallest:
        raise OtodError(f"--batch {max(batches):g}: larger than the smallest training set ({smallest} examples); "
                        f"every batch must be ≤ every --examples, e.g. --batch 8..{smallest}:6:log")


def targets(text, stream: bool) -> tuple[float, ...]:
    """The target loss, or in the stream regime a comma list of them (each rung's steps recorded in one run)."""
    parts = [p for p in str(text).split(",") if p.strip()] or [""]
    if len(parts) > 1 and not stream:
        raise OtodError(f"--target {text}: one training-loss target (several only with --stream), e.g. --target 0.1")
    values = tuple(finite_float(p.strip(), "--target", "0.1") for p in parts)
    for tol in values:
        if not tol > 0:
            raise OtodError(f"--target {tol:g}: a target loss must be > 0, e.g. --target 0.1")
    return values


def round_positive(values) -> tuple[float, ...]:
    values = tuple(float(v) for v in values)
    if not values or min(values) <= 0:
        raise OtodError("--lr-grid: step sizes must be positive, e.g. --lr-grid 1e-3..10:17:log")
    return values


#: The net options the Python function takes as numbers or lists and the command as text.
TEXT_OPTIONS = ("batch", "width", "depth", "examples", "method", "beta", "lr_grid", "max_iters", "lr",
                "trace_examples")


def option_text(name: str, value):
    """A net option as the command line types it: numbers and lists of ``TEXT_OPTIONS`` become comma text."""
    if name not in TEXT_OPTIONS or value is None or isinstance(value, str):
        return value
    if np.ndim(value) == 0:
        return str(int(value)) if float(value).is_integer() and name != "lr" else repr(float(value))
    return ",".join(str(int(v)) if float(v).is_integer() else repr(float(v)) for v in value)
