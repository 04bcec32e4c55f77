"""The prediction a net sweep records beside its measurement: the NQM built from the net's own Hessian spectrum
and gradient noise (`otod.nets.measure.bridge`), its S(B), S_min, B_crit and B_noise at the target.

For each net of the sweep (each width and depth), at the start the sweep's seed 0 trains from (float64):

* the spectrum: stochastic Lanczos quadrature (`otod.nets.measure.curvature.slq`, `PROBES` Rademacher probes ×
  `LANCZOS_STEPS` steps), binned on a log scale into NQM directions (`otod.nets.measure.bridge.bin_spectrum`);
* the noise: C ∝ H with tr(HC) matched to the measured tr(HΣ) over all n examples, or over a subsample where
  that would cost more than `TRACE_FLOPS` (a CNN: its standard error is recorded)
  (`otod.nets.measure.noise_scale.gradient_moments`), so the NQM's noise costs the loss what the net's does (the
  ``proportional`` mode of `otod.nets.measure.bridge`); the start is isotropic in the eigenbasis with the net's start gap;
* the target: the loss gap target − L_ref, with L_ref = 0 for cross-entropy (the infimum a net that fits its
  labels approaches; the digits MLPs do) and ½·label_noise²·outputs for the squared loss on the synthetic sets
  (the noise floor of a teacher the student can represent);
* S(B) by the noise obstacle's exact path with SGD's lr (heavy-ball's lr and β) tuned per B, and its fit.

The measurement is at the start of training: the NQM has one fixed H, and a net's H moves while it trains (the
curvature figures show λ_max and the bulk changing along one run). Adam has no NQM recursion: no prediction.
"""

from __future__ import annotations

import numpy as np

from otod.core.api import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: SLQ's probes and Lanczos steps for the prediction's spectrum.
PROBES, LANCZOS_STEPS = 8, 80
#: The most forward FLOPs the exact tr(HΣ) may cost (one full-data HVP, about 4 forward passes, per example):
#: beyond it tr(HΣ) is the mean over a subsample of examples drawn without replacement, with its standard error
#: recorded (`otod.nets.measure.noise_scale.gradient_moments`). The default MLP's exact tr(HΣ) costs 4·10¹⁰, width 128's 1.6·10¹¹.
TRACE_FLOPS = 2e11


def trace_examples(spec) -> int | None:
    """How many examples tr(HΣ) averages over: all n (None) where that costs at most `TRACE_FLOPS`, else the
    number that does (at least 64). A user's model counts its forward FLOPs by XLA's cost model."""
    if spec.kind == "model":
        from otod.nets.model.contract import flops_per_example

        n, flops = spec.training_examples, flops_per_example(spec.loaded())
    else:
        n, flops = spec.dataset().examples, spec.flops_per_example()
    per_example = 4.0 * n * flops
    return None if n * per_example <= TRACE_FLOPS else int(max(64, min(n, TRACE_FLOPS // per_example)))


def batches(examples: int) -> tuple[float, ...]:
    """The predicted S(B)'s batches: powers of 2 from 1 up to the training set's size (the NQM has no n, the net
    cannot draw a larger minibatch)."""
    return tuple(float(2 ** k) for k in range(int(np.log2(examples)) + 1))


def reference_loss(spec) -> float:
    """L_ref of the module docstring (a user's model: 0, since otod knows no floor of its loss)."""
    if spec.kind == "model" or spec.loss == "cross-entropy":
        return 0.0
    return 0.5 * float(spec.label_noise) ** 2 * spec.dataset().outputs


def net_prediction(spec, params, target: float, method: str = "sgd", seed: int = 0) -> dict:
    """The NQM's prediction for the net ``spec`` measured at ``params`` (see the module docstring): a plain dict
    with the measured noise scales, the spectrum's summary and the prediction (``b_crit``, ``s_min``,
    ``b_noise_target``, ``curve`` [[B, S], …])."""
    from otod.nets.measure import bridge

    moments, spectrum = measured(spec, params, seed)
    nodes, weights = np.ravel(spectrum.nodes), np.ravel(spectrum.weights)
    ref = reference_loss(spec)
    out = bridge.from_density(nodes, weights, spec.parameter_count, moments["trace_h_sigma"],
                              moments["loss"] - ref, float(target) - ref,
                              batches(examples_of(spec)), method)
    steps = np.asarray(out["steps"], float)
    return {"parameters": float(spec.parameter_count), "width": float(getattr(spec, "width", np.nan)),
            "depth": float(getattr(spec, "depth", np.nan)),
            "method": method, "noise_model": "C ∝ H matched to the measured tr(HΣ), SLQ spectrum, at init",
            "reference_loss": ref, "b_crit": float(out["b_crit"]), "s_min": float(out["s_min"]),
            "b_noise_target": float(out["b_noise_at_target"]), "b_simple_target": float(out["b_simple_at_target"]),
            "curve": [[float(b), float(s) if s > 0 else float("nan")] for b, s in zip(out["batches"], steps)],
            "trace_examples": float(moments["trace_examples"]),
            "trace_h_sigma_se": float(moments["trace_h_sigma_se"]), "measured_b_noise": float(moments["b_noise"]), "measured_b_simple": float(moments["b_simple"]),
            "lambda_max": float(nodes.max()), "negative_weight": float(weights[nodes < 0].sum()),
            "dropped_directions": float(out["dropped_directions"])}


def seed_start(spec, rng):
    """A seed's start as the sweep draws it (`otod.nets.model.family.seed_starts`, `otod.nets.model.model_problem.seed_starts`)."""
    if spec.kind == "model":
        from otod.nets.model.model_problem import seed_starts

        return seed_starts(spec, rng)["params"]
    from otod.nets.model.family import seed_starts, start_of

    return start_of(spec, seed_starts(spec, rng))


def examples_of(spec) -> int:
    """The training examples of otod's net or a user's model."""
    return spec.training_examples if spec.kind == "model" else spec.dataset().examples


def measured(spec, params, seed: int):
    """The exact gradient moments (`otod.nets.measure.noise_scale.gradient_moments`) and the SLQ spectrum at ``params``,
    in float64: of otod's net ``spec``, or of a user's model over its data chunk by chunk."""
    from otod.nets.measure.curvature import slq
    from otod.nets.measure.noise_scale import Problem, gradient_moments

    with jax.enable_x64(True):
        p64 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
        if spec.kind == "model":
            from otod.nets.model.chunked import chunked_mean
            from otod.nets.model.contract import cast

            problem = Problem.of_model(spec.loaded()).at(p64)
            model = cast(spec.loaded(), jnp.float64)
            loss, data = chunked_mean(model.loss, problem.chunk), model.data
        else:
            problem = Problem(spec, params)
            loss, data = spec.mean_loss, tuple(jnp.asarray(a) for a in spec.training_arrays(np.float64))
        moments = gradient_moments(problem, trace_examples=trace_examples(spec), seed=seed)
        spectrum = slq(loss, p64, PROBES, LANCZOS_STEPS, data, seed)
    return moments, spectrum


def sweep_predictions(config) -> list[dict]:
    """`net_prediction` for every net and training set of a sweep (each static width, depth and size D, which each
    prediction names as ``examples``; at the spec's init and
    architecture) and every method the NQM has (sgd, heavy-ball), from seed 0's start."""
    nets = {}
    for point in config.static_points():
        shape = {k: v for k, v in point.items() if k != "batch"}
        nets.setdefault(tuple(sorted(shape.items())), shape)
    out = []
    for shape in nets.values():
        spec = config.spec_at(shape)
        params = seed_start(spec, np.random.default_rng([config.seed, 0]))
        for method in config.methods:
            if method in ("sgd", "heavy-ball"):
                out.append({**net_prediction(spec, params, config.target.tol, method, seed=config.seed),
                            "examples": examples_of(spec)})
    return out


def refuse_stationary_start(config) -> None:
    """Before the lanes run: one line where the prediction's noise scales would divide by zero at seed 0's start
    (`otod.nets.measure.noise_scale.refuse_zero_gradient`: |G|² = 0 or GᵀHG = 0 of the full training loss, float64), rather
    than after every lane has run."""
    from otod.nets.model.chunked import chunked_mean
    from otod.nets.model.contract import cast, chunk_of
    from otod.nets.measure.noise_scale import refuse_zero_gradient

    if config.problem.branched:
        return
    params = seed_start(config.problem, np.random.default_rng([config.seed, 0]))
    with jax.enable_x64(True):
        model = cast(config.problem.loaded(), jnp.float64)
        mean = chunked_mean(model.loss, chunk_of(model))

        def moments(p, *data):
            def grad(q):
                return jax.grad(mean)(q, *data)

            G, HG = jax.jvp(grad, (p,), (grad(p),))
            dot = sum(jnp.vdot(a, b) for a, b in zip(jax.tree.leaves(G), jax.tree.leaves(HG)))
            return sum(jnp.vdot(a, a) for a in jax.tree.leaves(G)), dot

        g2, gHg = jax.jit(moments)(jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params), *model.data)
    refuse_zero_gradient(float(g2), float(gHg), "at seed 0's start, where the NQM's prediction is measured",
                         "check that the loss uses params, or run without the prediction (--no-predict)")


def run_meta(config, predict: bool):
    """What a net sweep adds to its results file once its lanes are in (``extra_meta`` of
    `otod.core.pipeline.sweep`), or None: the NQM's predictions (``predict``, over a batch axis) and, for a user's
    model, XLA's FLOPs per step (`otod.nets.sweep.bill.recorded_flops`: its report reads back without the model)."""
    batch_axis = "batch" in dict(config.axes)
    model = config.problem.kind == "model"
    if not ((predict and batch_axis) or (model and batch_axis)):
        return None
    if predict and model:  # the prediction's per-example gradients and HVPs, traced before the lanes run
        from otod.nets.model.model_problem import trace_work

        sizes = dict(config.axes).get("examples", (config.problem.examples,))
        trace_work(config.problem, sizes, (), one=True, hvp=True)
        refuse_stationary_start(config)

    def meta() -> dict:
        from otod.nets.sweep.bill import recorded_flops

        out = {"nqm_prediction": sweep_predictions(config)} if predict and batch_axis else {}
        return {**out, **({"iteration_flops": recorded_flops(config)} if model and batch_axis else {})}

    return meta
