"""A net as the core's problem family (`otod.core.family`): minibatch SGD-style steps on a net, stopped on the full
training loss.

* draws(rng): one seed's starts, the weights of every init (kaiming, xavier, orthogonal, small) for the plain and
  the residual net (residual branches scaled, `otod.nets.model.models.init_params`), drawn in NumPy, and the seed's
  shuffle key. ``init`` and ``architecture`` are coded traced axes, so every start a sweep may read is drawn and
  ``make`` picks one by its code;
* gradient(problem, params, step): the mean gradient over step t's minibatch of ``batch`` examples, drawn without
  replacement within each epoch of ⌊n/B⌋ steps (`minibatch`); the batch is the spec's, a static shape: a traced B
  would make every step cost a gradient over the whole data set. The sweep's dynamics (`net_dynamics`) take the
  same minibatches but draw each epoch's order once, at its first step, and keep it in the lane's carry: the
  permutation of all n examples is a sort, 94% of a B = 8 step when drawn at every step;
* metric: the mean training loss over all n examples, read (``checks``) at every iteration up to 32 and then at a
  spacing of 2^(⌊log₂ t⌋ − 5), so that a count is known to within 1/32 of itself (3%) while the loss, which costs
  n/B minibatch steps, is computed about 32 times per doubling of t instead of every step;
* info: what the noise obstacle's methods read: ``lipschitz`` = 1, so their reference step 1/L is 1 and the lr
  grid holds absolute step sizes (a net has no fixed L: its sharpness moves during training), and ``beta``, the
  traced momentum β.

The stream regime (``spec.stream``, teacher and gaussian data): step t's minibatch is B fresh examples drawn inside
the step from the seed's key folded with t (`otod.nets.model.data.stream_batch`), so no example is seen twice and the
examples seen by step t are D = t·B; the metric is the loss on a fixed held-out set of the same teacher
(`otod.nets.model.problem.NetSpec.metric_arrays`, 4,096 examples).

The data live in the compiled program as constants (shared by every lane), never copied per lane.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from otod.core.api import Family, lazy
from otod.nets.model import models

jax = lazy("jax")
jnp = lazy("jax.numpy")
optax = lazy("optax")

#: Below this iteration the loss is read every step; above it, 2^(⌊log₂ t⌋ − CHECK_BITS) apart.
CHECK_BITS = 5


def checks(t):
    """Whether iteration t reads the metric: every t ≤ 2^CHECK_BITS, then every 2^(⌊log₂ t⌋ − CHECK_BITS)."""
    t = jnp.asarray(t, jnp.int32)
    spacing = jnp.left_shift(1, jnp.maximum(0, 31 - jax.lax.clz(t) - CHECK_BITS))
    return (t % spacing) == 0


def minibatch(key, t, batch: int, n: int):
    """The indices of step t's minibatch: epoch e = ⌊t/⌊n/B⌋⌋ ranks the n examples by a permutation drawn from
    fold_in(key, e), and step t takes ranks [pB, (p + 1)B) of its position p in the epoch (the last n mod B
    examples sit the epoch out)."""
    per_epoch = max(1, n // batch)
    t = jnp.asarray(t).astype(jnp.int32)
    epoch = t // per_epoch
    position = t - epoch * per_epoch
    return jax.lax.dynamic_slice(epoch_order(key, epoch, n), (position * batch,), (batch,))


def seed_starts(spec, rng: np.random.Generator) -> dict:
    """One seed's draws: ``params`` [init][architecture] → weights (every init and architecture, float64) and
    ``shuffle``, the seed of its minibatch order. Each init draws from its own child generator, so a start does
    not depend on which other inits exist. The transformer has one start of its own (no init or architecture
    axis): ``params`` holds it at the spec's init and architecture only."""
    children = rng.spawn(len(models.INITS) + 1)
    if spec.model == "transformer":
        return {"params": {spec.init: {spec.architecture: spec.initial_params(children[0])}},
                "shuffle": np.array(float(children[-1].integers(0, 2 ** 24)))}
    params = {}
    for init, child in zip(models.INITS, children):
        state = child.bit_generator.state
        params[init] = {}
        for arch in models.ARCHITECTURES:
            child.bit_generator.state = state  # the same draws, scaled as the architecture scales its branches
            params[init][arch] = spec.initial_params(child, init, arch)
    return {"params": params, "shuffle": np.array(float(children[-1].integers(0, 2 ** 24)))}


def start_of(spec, drawn: dict, init: str | None = None, architecture: str | None = None):
    """The start a lane at this init and architecture reads from a seed's draws."""
    return drawn["params"][init or spec.init][architecture or spec.architecture]


def stream_minibatch(spec):
    """``(key, t, dtype) → (x, y)``: step t's fresh minibatch in the stream regime (`otod.nets.model.data.stream_batch`;
    the sequence task's B fresh sequences, `otod.nets.model.sequence.stream_batch`)."""
    from otod.nets.model import data as data_sets

    if spec.data == "sequence":
        from otod.nets.model import sequence

        source = sequence.source(data_seed=int(spec.data_seed))
        return lambda key, t, dtype: sequence.stream_batch(source, key, t, int(spec.batch), sequence.LENGTH, dtype)

    weights = data_sets.teacher_weights(spec.data, spec.inputs, spec.outputs, spec.teacher_width, int(spec.data_seed))

    def draw(key, t, dtype):
        return data_sets.stream_batch(spec.data, weights, key, t, int(spec.batch), spec.inputs, spec.outputs,
                                      float(spec.label_noise), dtype)

    return draw


def net_family(spec) -> Family:
    x_np, y_np = spec.training_arrays(np.float64)
    n, batch = x_np.shape[0], int(spec.batch)
    labels = spec.dataset().classes > 0
    inits = {name: i for i, name in enumerate(models.INITS)}
    metric_x, metric_y = spec.metric_arrays(np.float64)
    draw = stream_minibatch(spec) if spec.stream else None

    def data(dtype):
        return jnp.asarray(x_np, dtype), (jnp.asarray(y_np, jnp.int32) if labels else jnp.asarray(y_np, dtype))

    def metric_data(dtype):
        return jnp.asarray(metric_x, dtype), (jnp.asarray(metric_y, jnp.int32) if labels else
                                              jnp.asarray(metric_y, dtype))

    def make(point, drawn):
        dtype = drawn["shuffle"].dtype
        init = point.get("init", jnp.asarray(inits[spec.init], dtype))
        arch = point.get("architecture", jnp.asarray(spec.residual(), dtype))
        if spec.model == "transformer":  # one start (`seed_starts`)
            params0 = start_of(spec, drawn)
        else:
            starts = [drawn["params"][i][a] for i in models.INITS for a in models.ARCHITECTURES]
            code = (jnp.round(init) * len(models.ARCHITECTURES) + jnp.round(arch)).astype(jnp.int32)
            params0 = jax.tree.map(lambda *xs: jnp.stack(xs)[code], *starts)
        return {"params0": params0, "residual": arch.astype(dtype),
                "key": jax.random.PRNGKey(drawn["shuffle"].astype(jnp.int32)),
                "beta": point.get("beta", jnp.zeros((), dtype))}

    scale = spec.metric_scale  # 1/the cell's held-out target (`otod.nets.model.reference`), else 1

    def metric(p, params):
        x, y = metric_data(jax.tree.leaves(params)[0].dtype)
        loss = spec.mean_loss(params, x, y, p["residual"])
        return loss if scale == 1.0 else loss * jnp.asarray(scale, loss.dtype)

    def gradient(p, params, step):
        dtype = jax.tree.leaves(params)[0].dtype
        if draw is not None:
            xb, yb = draw(p["key"], step.t, dtype)
            return jax.grad(spec.mean_loss)(params, xb, yb, p["residual"])
        x, y = data(dtype)
        idx = minibatch(p["key"], step.t, batch, n)
        return jax.grad(spec.mean_loss)(params, x[idx], y[idx], p["residual"])

    def info(p, params):
        one = jnp.ones((), jax.tree.leaves(params)[0].dtype)
        return {"lipschitz": one, "beta": p["beta"]}

    size = spec.parameter_count
    starts = 1 if spec.model == "transformer" else len(models.INITS) * len(models.ARCHITECTURES)
    return Family(seconds_per_seed=draw_seconds(spec), draws=lambda rng: seed_starts(spec, rng), make=make,
                  init=lambda p: p["params0"], metric=metric, gradient=gradient, info=info,
                  provides=frozenset({"lipschitz", "beta"}), dynamics=_dynamics(spec),
                  floats_per_seed=starts * size + 1, floats_per_lane=lane_floats(spec, batch), checks=checks,
                  compactable=False, variants=_variants(spec), variant_fields=variant_fields(spec),
                  **arithmetic(spec, batch))


def arithmetic(spec, batch: int) -> dict:
    """The transformer's declared costs (`otod.core.family.Family`): its step's and held-out check's FLOPs
    (`otod.nets.model.transformer_net.step_flops`, ``check_flops``) and its program's compile seconds, which
    the float count and the planner's 1 s compile put ~100× low (4 ms a lane-iteration against 35 µs, 32 s a
    compile against 1 s); nothing for the other nets, costed by their floats."""
    if spec.model != "transformer":
        return {}
    from otod.nets.model import transformer_net

    return {"flops_per_lane": transformer_net.step_flops(spec, batch),
            "flops_per_check": transformer_net.check_flops(spec), "compile_seconds": transformer_net.COMPILE_SECONDS}


def lane_floats(spec, batch: int) -> int:
    """The floats of a lane's step, the planner's cost of a lane-iteration (`otod.core.plan.lane_seconds`): 8·P
    (the parameters, their gradient and the optimizer's copies) plus B × one example's: an MLP's or CNN's input
    features; the transformer's forward activations (`otod.nets.model.transformer_net.activation_floats`: T·d per
    block and layer output, heads·T² for the attention), which dwarf its inputs (at d = 32, one block, 2 heads:
    10,500 floats a sequence against its 15 tokens)."""
    if spec.model == "transformer":
        from otod.nets.model.transformer_net import activation_floats

        return 8 * spec.parameter_count + int(batch) * activation_floats(spec)
    return 8 * spec.parameter_count + int(batch) * spec.dataset().features


#: Seconds per Gaussian number NumPy draws (about 10 ns on the development machine; counted with room).
SECONDS_PER_NORMAL = 2e-8


def draw_seconds(spec) -> float:
    """Host seconds to draw one seed's starts (`seed_starts`: every init, each for both architectures): the
    Gaussian weights, and the orthogonal init's QR per layer (`otod.nets.model.size.footprint`), from closed forms."""
    from otod.nets.model.size import SECONDS_PER_DRAW_FLOP

    size = spec.check_buildable(orthogonal=True)
    arches = len(models.ARCHITECTURES)
    return arches * (size.qr_flops * SECONDS_PER_DRAW_FLOP + len(models.INITS) * size.parameters * SECONDS_PER_NORMAL)


def epoch_order(key, epoch, n: int):
    """The order in which epoch ``epoch`` visits the n examples (`minibatch` takes its ranks [pB, (p + 1)B))."""
    return jax.random.permutation(jax.random.fold_in(key, epoch), n)


def variant_fields(spec) -> tuple[str, ...]:
    """The fields a program switches between (`otod.core.variants`): the batch B, and in a finite regime's grid
    (held-out targets, a training set read) the training-set size D too, so a grid's cells at one width share
    one program: the 2 × 2 grid of tests/nets/conftest.py compiled 4 cell programs, now 2 (`net_dynamics`)."""
    if spec.held_out_targets is not None and not spec.stream and not spec.branched and spec.schedule_start is None:
        return ("batch", "examples")
    return ("batch",)


def net_dynamics(spec, family, members, options, relative_lr: bool, batches=None, which=0, specs=None):
    """A lane of the net sweep on otod's own net ``spec``: `minibatch_dynamics` with the spec's data (x, y) and
    its loss at the lane's architecture; with ``batches``, one lane for all of them, stepping at ``batches[which]``
    (``which`` traced: `otod.core.variants`). With ``specs`` (a `otod.core.variants.Variants` program's: they
    differ in B and, in a finite grid, D, `variant_fields`), one lane for all of them, stepping as
    ``specs[which]``: its batch, its training set (each D's its own constant, its epochs' order drawn over its
    own n) and its metric (the held-out loss over its own cell's target), each under ``lax.switch``."""
    specs = list(specs) if specs is not None else [spec]
    sizes = list(dict.fromkeys(s.examples for s in specs))  # the training sets, in first-seen order
    leader = {d: next(s for s in specs if s.examples == d) for d in sizes}
    labels = spec.dataset().classes > 0
    grad = jax.grad(spec.mean_loss)

    def set_arrays(x_np, y_np):
        def arrays(dtype):
            return jnp.asarray(x_np, dtype), (jnp.asarray(y_np, jnp.int32) if labels else jnp.asarray(y_np, dtype))
        return arrays

    sets = [leader[d].training_arrays(np.float64) for d in sizes]

    def batch_gradient(problem, params, data):
        return grad(params, *data, problem["residual"])

    if batches is None:
        batches = tuple(int(s.batch) for s in specs)
    batches = tuple(int(b) for b in batches)

    def drawing(b):  # step t's fresh examples at batch b (the stream)
        stream = stream_minibatch(dataclasses.replace(spec, batch=b))
        return lambda problem, t, dtype: stream(problem["key"], t, dtype)

    draws = [drawing(b) for b in batches] if spec.stream else None
    if len(sizes) == 1:
        return minibatch_dynamics(batch_gradient, set_arrays(*sets[0]), sets[0][0].shape[0], batches, family,
                                  members, options, relative_lr, draws, which)
    metrics = [leader[d].family().metric for d in sizes]
    set_of = [sizes.index(s.examples) for s in specs]

    def metric(p, params):  # the metric of the cell of D = specs[which].examples
        return jax.lax.switch(jnp.asarray(set_of, jnp.int32)[which], [lambda m=m: m(p, params) for m in metrics])

    return minibatch_dynamics(batch_gradient, [set_arrays(*a) for a in sets], [a[0].shape[0] for a in sets],
                              batches, family, members, options, relative_lr, draws, which, set_of=set_of,
                              metric=metric)


def minibatch_dynamics(batch_gradient, arrays, n, batch, family, members, options, relative_lr: bool,
                       draw=None, which=0, set_of=None, metric=None):
    """A lane of the net sweep: the stochastic lane of the core (`otod.core.dynamics.lane_start`: optax on the sampled gradient,
    the schedule), with each epoch's minibatch order drawn once. ``arrays(dtype)``: the training data (a tuple
    with a leading example axis, floats in ``dtype``); ``batch_gradient(problem, params, data)``: the gradient of
    the mean loss over a minibatch; ``draw(problem, t, dtype)``, where given, step t's fresh minibatch (the stream
    regime) in place of the epochs' order. The carry is (θ, optimizer state, order, t); at an epoch's first step (the
    block's iteration count ``block_t``, one unbatched scalar for all lanes, so the branch is a real ``lax.cond``,
    not a select that draws every step) the order is redrawn by `epoch_order`; step t uses its ranks
    [pB, (p + 1)B), the same minibatch `minibatch` gives, so the counts equal the reference loop's.

    ``batch`` may be a tuple of sizes (``draw`` then one per size) and ``which`` a traced index into it: one lane
    for all of them (`otod.core.variants`), the epoch's length ⌊n/B⌋ read from a table and the minibatch and its
    gradient under ``lax.switch`` (``which`` is one value for the program, so the switch runs one branch); the
    order, its redraw and the update are the same code for every B, so they compile once.

    Several training sets (a finite grid's D, `net_dynamics`): ``arrays`` and ``n`` one per set, ``set_of[i]`` the
    set of ``batch[i]``'s variant, and ``metric`` the variant's metric (else ``family.metric``); the order carry
    holds the largest n, an epoch's order drawn over the variant's own n (its permutation, padded) under
    ``lax.switch``, so each variant's minibatches are those of its own program."""
    from otod.core.api import Dynamics, Lane, lane_start, schedule_factor

    build = members[0].build
    factor = schedule_factor(options.schedule, options.horizon)
    batches = (int(batch),) if np.ndim(batch) == 0 else tuple(int(b) for b in batch)
    draws = None if draw is None else ([draw] if callable(draw) else list(draw))
    set_of = [0] * len(batches) if set_of is None else list(set_of)
    sets = [arrays] if callable(arrays) else list(arrays)
    ns = [int(n)] if np.ndim(n) == 0 else [int(v) for v in n]
    epochs = [max(1, ns[k] // b) for k, b in zip(set_of, batches)]
    metric = family.metric if metric is None else metric

    def one_of(branches):  # the branch of ``batches[which]``: a plain call where there is one batch size
        return branches[0]() if len(branches) == 1 else jax.lax.switch(which, branches)

    def order_of(key, epoch):  # the epoch's order over the variant's own n, padded to the largest
        if len(ns) == 1:
            return epoch_order(key, epoch, ns[0]).astype(jnp.int32)
        return jax.lax.switch(jnp.asarray(set_of, jnp.int32)[which], [
            lambda m=m: jnp.pad(epoch_order(key, epoch, m).astype(jnp.int32), (0, max(ns) - m)) for m in ns])

    def set_up(point, drawn, lr, method_index) -> Lane:
        constants, params, state = lane_start(family, members, options, relative_lr, point, drawn, lr, method_index)
        carry = (params, state, jnp.zeros(1 if draws is not None else max(ns), jnp.int32), jnp.zeros((), jnp.int32))
        return Lane(constants, carry, metric(constants[0], params), constants[2])

    def step(constants, carry, key, block_t):
        problem, info, step_size, hyper = constants
        params, state, order, t = carry
        dtype = jax.tree.leaves(params)[0].dtype
        if draws is not None:  # the stream: step t's fresh examples, the reference loop's (`net_family`'s gradient)
            g = one_of([lambda d=d: batch_gradient(problem, params, d(problem, t, dtype)) for d in draws])
        else:
            per_epoch = epochs[0] if len(epochs) == 1 else jnp.asarray(epochs, jnp.int32)[which]
            epoch, position = block_t // per_epoch, block_t % per_epoch
            order = jax.lax.cond(position == 0, lambda: order_of(problem["key"], epoch), lambda: order)

            def gradient_at(b, data):
                idx = jax.lax.dynamic_slice(order, (position * b,), (b,))
                return batch_gradient(problem, params, tuple(a[idx] for a in data(dtype)))

            g = one_of([lambda b=b, k=k: gradient_at(b, sets[k]) for b, k in zip(batches, set_of)])
        lr_t = step_size * jnp.asarray(factor(t), step_size.dtype)
        updates, state = build(lr_t, info, options, hyper).update(g, state, params)
        return optax.apply_updates(params, updates), state, order, t + 1

    def measure(constants, carry):
        return metric(constants[0], carry[0])

    def advance(constants, carry, key):
        carry = step(constants, carry, key, carry[3])
        return carry, measure(constants, carry)

    return Dynamics(set_up, advance, stochastic=True, step=step, measure=measure, checks=family.checks)


def _dynamics(spec):
    """`net_dynamics` for ``spec``, in the shape a family's ``dynamics`` has."""

    def build(family, members, options, relative_lr):
        return net_dynamics(spec, family, members, options, relative_lr)

    return build


def _variants(spec):
    """`net_dynamics` for several batch sizes in one program (the family's ``variants`` hook,
    `otod.core.variants`): ``specs`` differ from ``spec`` only in their batch, and in a finite grid their D
    (`variant_fields`)."""

    def build(family, specs, members, options, relative_lr, which):
        return net_dynamics(spec, family, members, options, relative_lr, tuple(int(s.batch) for s in specs), which,
                            specs)

    return build
