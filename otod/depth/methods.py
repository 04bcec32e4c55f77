"""The nonlinearity obstacle's methods as optax transformations: gd, heavy ball, Adam and per-layer KFAC.

There is no condition number here to derive a momentum from, so β is a traced sweep axis (``beta``, read from
``info["beta"]``): heavy ball's momentum and Adam's first-moment decay b₁. gd and heavy ball share the core's
`otod.core.methods.momentum` program. The reference steps (``--lr theory``; ``--lr tuned`` multiplies them):

* gd, heavy ball: the family's ``info["gd_step"]``; for a deep linear net η = 1/(L·s_max^{2(L−1)/L}), the inverse
  of the top Hessian eigenvalue at the balanced minimum (Saxe et al. 2014; Arora, Cohen & Hazan 2018); for the toy
  1/|λ|_max of the Hessian at the start;
* adam: 10⁻² (Kingma & Ba 2015), scale-dependent: tuned by default;
* kfac: 1/L. Each layer's step G_l⁻¹∇W_l A_l⁻¹ alone is Newton's step for that layer (Martens & Grosse 2015);
  the L layers move at once and, to first order, add their corrections to the product, hence 1/L.

The families' metric is the loss divided by ``info["loss_scale"]`` (`otod.depth.linear`); gd, heavy ball and kfac
multiply their step by it, so their step is a step on the loss itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from otod.core.api import Method, lazy, momentum

jax = lazy("jax")
jnp = lazy("jax.numpy")
linalg = lazy("otod.core.linalg")
optax = lazy("optax")

STEPS = frozenset({"steps"})


@dataclass(frozen=True)
class MethodOptions:
    """Options some methods read: KFAC's damping λ, added to both factors."""

    damping: float = 1e-3


def kfac_layers(sigma, offset, damping: float) -> optax.GradientTransformation:
    """Per-layer KFAC for a deep linear net with squared loss: ∇W_l ↦ (G_l + λI)⁻¹ ∇W_l (A_l + λI)⁻¹.

    A_l = E[a aᵀ] over the layer's inputs a = W_{l−1}⋯W_1 x, so A_l = B_l Σ B_lᵀ with B_l = W_{l−1}⋯W_1;
    G_l = E[g gᵀ] over the gradients g with respect to the layer's outputs, with the targets sampled from the
    model's own Gaussian predictive distribution (the Fisher, Martens & Grosse 2015 §5), so G_l = C_lᵀC_l with
    C_l = W_L⋯W_{l+1}: G_L = I at the output of a squared loss. Both are recomputed at every step from the current
    weights W = offset + params (offset I for the residual parameterization). At depth 1 with whitened inputs
    (A = G = I) and λ = 0 this is the identity: gd with step 1 is Newton's method and solves the problem in one step.
    Both factors are symmetric positive definite (λ > 0), so they are solved by Cholesky in XLA's own operations
    (`otod.core.linalg.spd_solve`): LAPACK's solve rounds as the machine's OpenBLAS kernels do, and moved this
    sweep's counts from one machine to another.
    """
    from otod.depth.linear import prefix_suffix

    def init(params):
        del params
        return optax.EmptyState()

    def update(updates, state, params=None):
        weights = offset + params
        before, after = prefix_suffix(weights)
        n = weights.shape[-1]
        eye = jnp.eye(n, dtype=weights.dtype)
        a = before @ sigma @ jnp.swapaxes(before, -1, -2) + damping * eye
        g = jnp.swapaxes(after, -1, -2) @ after + damping * eye
        left = linalg.spd_solve(g, updates)
        out = jnp.swapaxes(linalg.spd_solve(a, jnp.swapaxes(left, -1, -2)), -1, -2)  # A symmetric
        return out, state

    return optax.GradientTransformation(init, update)


def _momentum(beta_of, nesterov: float, reference: str) -> Method:
    def hyper(info):
        b = beta_of(info)
        return b, jnp.zeros_like(b) + nesterov

    def build(lr, info, o, hp=None):
        b, nu = hyper(info) if hp is None else hp
        return optax.chain(momentum(b, nu), optax.scale(-lr * info["loss_scale"]))

    def standalone(lr, info, o):
        return optax.chain(optax.trace(beta_of(info)), optax.scale(-lr * info["loss_scale"]))

    return Method(lambda info: info["gd_step"], build, reference, needs=STEPS, program="momentum",
                  hyperparameters=hyper, standalone=standalone)


def _adam(lr, info, o, hp=None):
    return optax.adam(lr, b1=info["beta"])


def _kfac(lr, info, o, hp=None):
    return optax.chain(kfac_layers(info["sigma"], info["offset"], o.damping),
                       optax.scale(-lr * info["loss_scale"]))


METHODS: dict[str, Method] = {
    "gd": _momentum(lambda info: jnp.zeros_like(info["gd_step"]), 0.0,
                    "η = 1/(L·s_max^{2(L−1)/L}), the inverse top Hessian eigenvalue at the balanced minimum "
                    "(Saxe et al. 2014; Arora et al. 2018)"),
    "heavy-ball": _momentum(lambda info: info["beta"], 0.0,
                            "gd's step, β from the beta axis (Polyak 1964; no κ here to derive it from)"),
    "adam": Method(lambda info: jnp.asarray(1e-2, info["gd_step"].dtype), _adam,
                   "10⁻² (Kingma & Ba 2015), scale-dependent: tuned by default; b₁ from the beta axis",
                   needs=STEPS, tuned_by_default=True),
    "kfac": Method(lambda info: info["kfac_step"], _kfac,
                   "(G_l+λI)⁻¹ ∇W_l (A_l+λI)⁻¹ per layer, step 1/L (Martens & Grosse 2015)",
                   needs=frozenset({"steps", "layers"})),
}

#: Methods whose β axis matters: the others run the same lanes at every β.
USES_BETA = ("heavy-ball", "adam")
