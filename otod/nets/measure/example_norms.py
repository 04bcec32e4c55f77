"""Per-example squared gradient norms without per-example gradients: Σᵢ |gᵢ − G|² over the training set (n tr Σ,
`otod.nets.measure.noise_scale`) from each layer's inputs and output gradients, one vmapped forward and backward
pass per chunk of examples, the P-vector gᵢ never formed for the layers whose structure allows it.

**The trick** (Goodfellow 2015, "Efficient per-example gradient computations"; BackPACK's BatchL2Grad, Dangel et
al. 2020; the "ghost norm" of DP-SGD libraries, Li et al. 2022). A parameter W used once, as y = x·W (a
``dot_general``), has the per-example gradient ∂ℓᵢ/∂W = Xᵢᵀ Γᵢ, with Xᵢ [T, K] example i's inputs to the layer
(T positions: 1 for a plain dense layer, the tokens of a sequence, the batch-of-one axis) and Γᵢ = ∂ℓᵢ/∂yᵢ
[T, F] its output gradient. Its squared norm is

    |Xᵢᵀ Γᵢ|² = Σ_{t,s} (xᵢₜ·xᵢₛ)(γᵢₜ·γᵢₛ)        (T²(K + F) flops; T = 1: |xᵢ|²|γᵢ|²)

or, where that is dearer (T(K + F) ≥ KF), Xᵢᵀ Γᵢ itself (TKF flops, K × F floats an example): whichever costs
less, as mixed ghost clipping chooses (Bu et al. 2022). Every other recognised use (a convolution's kernel, an
embedding's ``gather``, a bias ``add``, a layer norm's gain ``mul``, each through reshapes, transposes, slices and
broadcasts of the leaf) has its per-example gradient taken through that one operation alone: the vjp of
y = op(view(W), other operands) at example i's operands and Γᵢ, a leaf-sized vector an example (a kernel, a
bias, a gain; an embedding's V × d), not P.

**How the layers are found: from the loss's jaxpr**, so any JAX model fits (plain JAX, Flax, Equinox) without
declaring its layers. The per-example loss ℓᵢ(θ) = loss(θ, the batch of example i alone) (exactly what the
vmapped gradient differentiates, `otod.nets.model.chunked.example_loss`, so a loss that is not separable over
the batch is measured the same way by both) is traced to a jaxpr with one input per parameter leaf; jit and
remat calls are inlined. A leaf is *recognised* where its only use is one operation above (through views);
each such operation's output gets a zero perturbation εᵤ, and one reverse pass of ℓᵢ gives Γᵢ = ∂ℓᵢ/∂εᵤ while
the forward pass keeps the operation's other operands (Xᵢ). The whole is vmapped over a chunk of examples, so
XLA sees one batched forward and backward pass without the weight-gradient products.

**The fallback, per leaf.** A leaf used twice (tied weights), inside a custom derivative, a loop, or by any
other operation (tanh(W), W², a cumulative sum …), or whose use also reads it in its other operand, has its
per-example gradient formed as before: the gradient of ℓᵢ with respect to those leaves, in the same reverse
pass, vmapped over the chunk (its floats counted in the chunk's budget). A model mixes both; every number is
exact either way.

**The sum.** For a recognised leaf the pass gives Σᵢ |gᵢ|², and Σᵢ |gᵢ − G|² = Σᵢ |gᵢ|² − n|G|² (G the mean of
the gᵢ); for a fallback leaf Σᵢ |gᵢ − G|² directly. The subtraction loses about log₁₀(1 + |G|²/tr Σ) =
log₁₀(1 + 1/B_simple) digits against centring each gᵢ; in float64 that keeps 1e-10 for B_simple ≳ 10⁻⁵.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from otod.core.api import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: Operations that only relabel a leaf's entries (its gradient's norm is the leaf's own).
RELABEL = frozenset({"reshape", "transpose", "convert_element_type", "copy", "squeeze", "expand_dims"})
#: Views whose vjp sums or pads (a broadcast bias, a slice of a position table): allowed before a direct use.
SPREAD = frozenset({"broadcast_in_dim", "slice"})
#: The uses whose per-example gradient the pass takes from the operation alone.
USES = frozenset({"dot_general", "conv_general_dilated", "mul", "add", "sub", "gather"})
#: Calls inlined into the walk (their bodies are ordinary operations); custom derivatives are not (their rules
#: stay theirs), so a leaf used inside one falls back.
INLINE = frozenset({"pjit", "jit", "closed_call", "core_call", "checkpoint", "remat"})
#: Floats held by one chunk of examples (activations forward and backward, the fallback's and the direct uses'
#: per-example gradients, the Gram matrices): 2^25, 256 MiB in float64, as `otod.nets.model.chunked.CHUNK_FLOATS`.
CHUNK_FLOATS = 2 ** 25


@dataclass(frozen=True)
class Use:
    """One recognised use of leaf ``leaf``: the operation ``eqn`` (its ``key``, the path of equation indices
    through inlined calls), the operand ``operand`` that is the leaf through the views ``chain``, and ``ghost``:
    a dot whose chain only relabels, its norm by the Gram matrices (True) or Xᵀ Γ (False, "dot"); None: the vjp
    through chain and operation."""

    key: tuple
    leaf: int
    eqn: object
    operand: int
    chain: tuple
    ghost: bool | None


@dataclass(frozen=True)
class Plan:
    """What `plan` found in a loss: the recognised ``uses`` (one per recognised leaf), the ``fallback`` leaves'
    indices, the per-example jaxpr and its consts, the leaves' shapes, and the floats one example holds in the
    pass (`example_floats`)."""

    uses: tuple
    fallback: tuple
    jaxpr: object
    consts: tuple
    treedef: object
    sizes: tuple
    example_floats: int

    @property
    def fallback_parameters(self) -> int:
        return int(sum(self.sizes[j] for j in self.fallback))


class _Tag:
    """A value in the analysis walk: the leaves it depends on, and (leaf, views) where it is a view of one leaf."""

    __slots__ = ("deps", "view")

    def __init__(self, deps=frozenset(), view=None):
        self.deps, self.view = deps, view


def _sub(eqn):
    """(jaxpr, consts) of an inlined call's body."""
    inner = eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))
    return (inner.jaxpr, tuple(inner.consts)) if hasattr(inner, "consts") else (inner, ())


def _walk(jaxpr, consts, args, key, visit, lift):
    """Evaluate ``jaxpr`` on ``args`` with ``visit(eqn, key, values) -> outputs`` for every equation that is not
    an inlined call (`INLINE`, walked into with the path ``key`` extended); ``lift`` makes a literal's or a
    const's value."""
    from jax._src.core import Literal

    env = dict(zip(jaxpr.constvars, (lift(c) for c in consts)))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return lift(v.val) if isinstance(v, Literal) else env[v]

    for i, eqn in enumerate(jaxpr.eqns):
        values = [read(v) for v in eqn.invars]
        if eqn.primitive.name in INLINE:
            sub, sub_consts = _sub(eqn)
            outs = _walk(sub, sub_consts, values, key + (i,), visit, lift)
        else:
            outs = visit(eqn, key + (i,), values)
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def _bind(eqn, values):
    """The equation's outputs on ``values`` (as `jax.core.eval_jaxpr` binds it), a list."""
    bind_params = eqn.primitive.get_bind_params(eqn.params)
    with eqn.ctx.manager:
        out = eqn.primitive.bind(*values, **bind_params)
    return list(out) if eqn.primitive.multiple_results else [out]


def _analyse(jaxpr, consts, leaves: int):
    """(uses, bad): every use of a leaf's view by a `USES` operation whose other operands do not depend on that
    leaf, and the leaves with any other use."""
    uses, bad = [], set()

    def visit(eqn, key, tags):
        deps = frozenset().union(*(t.deps for t in tags)) if tags else frozenset()
        views = [(i, t.view) for i, t in enumerate(tags) if t.view is not None]
        name = eqn.primitive.name
        if name in RELABEL | SPREAD and len(tags) == 1 and views:
            leaf, chain = views[0][1]
            return [_Tag(deps, (leaf, chain + (eqn,)))]
        if name in USES and len(views) == 1 and len(eqn.outvars) == 1:
            i, (leaf, chain) = views[0]
            if all(leaf not in t.deps for k, t in enumerate(tags) if k != i):
                uses.append(Use(key, leaf, eqn, i, chain, _ghost(eqn, i, chain)))
                return [_Tag(deps)]
        bad.update(leaf for _, (leaf, _) in views)
        return [_Tag(deps) for _ in eqn.outvars]

    args = [_Tag(frozenset({j}), (j, ())) for j in range(leaves)] + [_Tag()] * (len(jaxpr.invars) - leaves)
    _walk(jaxpr, consts, args, (), visit, lambda c: _Tag())
    return uses, bad


def _dot_layout(eqn, operand: int):
    """For a dot with the leaf at ``operand``: (batch, free, contracting) axes of the other operand, and the
    output's (batch, other's free, leaf's free) axes, so that X [B, T, K] and Γ [B, T, F] line up."""
    (ca, cb), (ba, bb) = eqn.params["dimension_numbers"]
    co, bo = (cb, bb) if operand == 0 else (ca, ba)
    other_rank = eqn.invars[1 - operand].aval.ndim
    leaf_rank = eqn.invars[operand].aval.ndim
    free = [d for d in range(other_rank) if d not in co and d not in bo]
    nb = len(ba)
    leaf_free = leaf_rank - len(co) - nb
    if operand == 1:  # output: batch, a's free (the other's), b's free (the leaf's)
        out_other, out_leaf = range(nb, nb + len(free)), range(nb + len(free), nb + len(free) + leaf_free)
    else:
        out_leaf, out_other = range(nb, nb + leaf_free), range(nb + leaf_free, nb + leaf_free + len(free))
    return (list(bo), free, list(co)), (list(range(nb)), list(out_other), list(out_leaf))


def _dot_sizes(eqn, operand: int) -> tuple[int, int, int, int]:
    """(B, T, K, F) of a dot's X [B, T, K] and Γ [B, T, F] for one example (`_dot_layout`)."""
    (bo, free, co), (_, _, out_leaf) = _dot_layout(eqn, operand)
    shape, out = eqn.invars[1 - operand].aval.shape, eqn.outvars[0].aval.shape
    size = lambda axes, s: int(math.prod(s[a] for a in axes))  # noqa: E731
    return size(bo, shape), size(free, shape), size(co, shape), size(out_leaf, out)


def _ghost(eqn, operand: int, chain) -> bool | None:
    """A dot reached by relabelling alone: by Gram matrices where T(K + F) < KF, else Xᵀ Γ; anything else: None."""
    if eqn.primitive.name != "dot_general" or any(e.primitive.name not in RELABEL for e in chain):
        return None
    _, t, k, f = _dot_sizes(eqn, operand)
    return t * (k + f) < k * f


def _use_floats(use: Use, sizes) -> int:
    """Floats one example's use holds beyond the activations: two Gram matrices, Xᵀ Γ, or the leaf's gradient."""
    if use.ghost is None:
        return 2 * sizes[use.leaf]
    b, t, k, f = _dot_sizes(use.eqn, use.operand)
    return b * (2 * t * t if use.ghost else k * f)


def plan(loss, params, data: tuple, activations: int | None = None) -> Plan:
    """The recognised uses and the fallback leaves of ``loss`` at ``params`` (module docstring), from the jaxpr of
    one example's loss; ``activations`` (one example's, `otod.nets.model.chunked.activation_floats`, estimated
    where None) sizes the chunk."""
    from otod.nets.model.chunked import activation_floats

    leaves, treedef = jax.tree.flatten(params)
    example = tuple(a[:1] for a in data)
    closed = jax.make_jaxpr(lambda ls, batch: loss(jax.tree.unflatten(treedef, ls), batch))(leaves, example)
    try:
        uses, bad = _analyse(closed.jaxpr, closed.consts, len(leaves))
    except Exception:  # an equation the walk cannot read (a new call primitive): every leaf falls back, exact
        uses, bad = [], set(range(len(leaves)))
    counts = {}
    for u in uses:
        counts[u.leaf] = counts.get(u.leaf, 0) + 1
    kept = tuple(u for u in uses if counts[u.leaf] == 1 and u.leaf not in bad)
    recognised = {u.leaf for u in kept}
    sizes = tuple(int(math.prod(getattr(a, "shape", ()))) for a in leaves)
    fallback = tuple(j for j in range(len(leaves)) if j not in recognised)
    if activations is None:
        activations = activation_floats(loss, params, data)
    floats = 4 * int(activations) + sum(_use_floats(u, sizes) for u in kept) + 2 * sum(sizes[j] for j in fallback)
    return Plan(kept, fallback, closed.jaxpr, tuple(closed.consts), treedef, sizes, int(floats))


def chunk_size(plan_: Plan, examples: int, floats: int = CHUNK_FLOATS) -> int:
    """Examples per vmapped chunk: as many as fit in ``floats`` at `Plan.example_floats` each, at least 1."""
    return int(max(1, min(examples, floats // max(1, plan_.example_floats))))


def _forward(plan_: Plan, leaves, batch, perturbations):
    """One example's loss with every recognised use's output perturbed (``perturbations`` by key), and each use's
    operands (by key)."""
    if not plan_.uses:  # nothing recognised: the jaxpr as JAX evaluates it, not walked
        from jax._src.core import eval_jaxpr

        return eval_jaxpr(plan_.jaxpr, plan_.consts, *leaves, *batch)[0], {}
    uses = {u.key: u for u in plan_.uses}
    kept = {}

    def visit(eqn, key, values):
        outs = _bind(eqn, values)
        if key in uses:
            kept[key] = values
            outs[0] = outs[0] + perturbations[key]
        return outs

    out = _walk(plan_.jaxpr, plan_.consts, list(leaves) + list(batch), (), visit, lambda c: c)
    return out[0], kept


def _dot_square(use: Use, x, gamma):
    """|Xᵀ Γ|² of one example's dot (module docstring), by the Gram matrices or by Xᵀ Γ (`Use.ghost`)."""
    (bo, free, co), (ob, oo, ol) = _dot_layout(use.eqn, use.operand)
    b, t, k, f = _dot_sizes(use.eqn, use.operand)
    X = jnp.transpose(x, bo + free + co).reshape(b, t, k)
    G = jnp.transpose(gamma, ob + oo + ol).reshape(b, t, f)
    if use.ghost:
        return jnp.sum(jnp.einsum("btk,bsk->bts", X, X) * jnp.einsum("btf,bsf->bts", G, G))
    return jnp.sum(jnp.einsum("btk,btf->bkf", X, G) ** 2)


def _direct_square(use: Use, leaf, values, gamma):
    """|∂ℓ/∂W|² of one example through the use alone: the vjp of op(views(W), other operands) at Γ."""
    def through(w):
        for e in use.chain:
            w = _bind(e, [w])[0]
        args = list(values)
        args[use.operand] = w
        return _bind(use.eqn, args)[0]

    _, pull = jax.vjp(through, leaf)
    return jnp.sum(pull(gamma)[0] ** 2)


def example_squares(plan_: Plan, leaves, centre, example):
    """One example's squared gradient norms per leaf [L]: |gᵢ|² for a recognised leaf, |gᵢ − G|² for a fallback
    leaf (``centre`` the leaves of G), from one forward and reverse pass of its loss (``example``: its arrays
    without the example axis)."""
    batch = tuple(a[None] for a in example)
    zeros = {u.key: jnp.zeros(u.eqn.outvars[0].aval.shape, u.eqn.outvars[0].aval.dtype) for u in plan_.uses}
    fallback = [leaves[j] for j in plan_.fallback]

    def loss(perturbations, free):
        current = list(leaves)
        for j, w in zip(plan_.fallback, free):
            current[j] = w
        return _forward(plan_, current, batch, perturbations)

    (gammas, grads), kept = jax.grad(loss, argnums=(0, 1), has_aux=True)(zeros, fallback)
    squares = [jnp.zeros((), leaves[0].dtype)] * len(leaves)
    for u in plan_.uses:
        if u.ghost is None:
            squares[u.leaf] = _direct_square(u, leaves[u.leaf], kept[u.key], gammas[u.key])
        else:
            squares[u.leaf] = _dot_square(u, kept[u.key][1 - u.operand], gammas[u.key])
    for j, g in zip(plan_.fallback, grads):
        squares[j] = jnp.sum((g - centre[j]) ** 2)
    return jnp.stack(squares)


def square_sums(plan_: Plan, params, centre, batch):
    """Σ over the examples of ``batch`` (arrays with the example axis) of `example_squares`, per leaf [L]."""
    leaves = jax.tree.leaves(params)
    centre = jax.tree.leaves(centre)
    per = jax.vmap(lambda *ex: example_squares(plan_, leaves, centre, ex))(*batch)
    return jnp.sum(per, 0)


def centred_square_sum(plan_: Plan, sums, centre, count: int) -> float:
    """Σᵢ |gᵢ − G|² over ``count`` examples from the per-leaf sums (`square_sums` added over all chunks): a
    recognised leaf's Σᵢ|gᵢ|² − n|G|², a fallback leaf's sum as it is (module docstring)."""
    import numpy as np

    sums = np.asarray(sums, np.float64)
    g2 = np.array([float(jnp.sum(jnp.asarray(c) ** 2)) for c in jax.tree.leaves(centre)])
    recognised = np.zeros(len(sums), bool)
    recognised[[u.leaf for u in plan_.uses]] = True
    return float(np.sum(sums[~recognised]) + np.sum(sums[recognised] - count * g2[recognised]))


def problem_square_sum(compiled: dict, v, G) -> float:
    """Σᵢ |gᵢ − G|² over a `otod.nets.measure.noise_scale.Problem`'s n examples at the flat parameters ``v`` (G the
    flat mean gradient): its model's `plan` and the jitted chunk sums, built once and kept in ``compiled``, then
    `square_sums` over chunks of `chunk_size` examples."""
    if "norms" not in compiled:
        model = compiled["model"]
        plan_ = plan(model.loss, model.params, compiled["data"])

        def sums(v, G, idx, *data):
            unflatten = compiled["unflatten"]
            return square_sums(plan_, unflatten(v), unflatten(G), tuple(a[idx] for a in data))

        compiled["norms"] = (plan_, jax.jit(sums), chunk_size(plan_, compiled["n"]))
    plan_, sums, chunk = compiled["norms"]
    n = compiled["n"]
    total = 0.0
    for start in range(0, n, chunk):
        idx = jnp.arange(start, min(n, start + chunk), dtype=jnp.int32)
        total = total + sums(v, G, idx, *compiled["data"])
    return centred_square_sum(plan_, total, compiled["unflatten"](G), n)
