"""Deep linear networks: a product of L matrices W_L⋯W_1 fitted to a target Φ, the nonlinearity obstacle in its
purest form (the model is linear, its loss is not convex in the factors).

The loss is ½ tr((P − Φ) Σ (P − Φ)ᵀ) with P = W_L⋯W_1 and Σ the input covariance (Σ = I: whitened inputs, the
population loss ½‖P − Φ‖²_F). The metric the engine reads is this loss divided by the zero predictor's loss
½ tr(Φ Σ Φᵀ), so a target of 1e-6 means "a relative loss of 10⁻⁶" whatever the init (an absolute target on the
relative loss). The methods multiply their step by that scale back (``info["loss_scale"]``), so a step η here is
a step η on the loss itself, as in the papers.

Problems:

* ``deep-linear``: L matrices of width n; the target Φ = U diag(s) Vᵀ has singular values s spread geometrically
  over [1, κ_Φ] (``target_kappa``) and random singular vectors from the seed. With ``target = "symmetric"``
  (the default) V = U, so Φ is symmetric positive definite and the identity init is *decoupled*: every layer stays
  U D_l Uᵀ and each singular mode follows a scalar recursion (Saxe, McClelland & Ganguli 2014), which
  `otod.depth.theory` iterates. ``target = "general"`` draws V independently.
* ``chain``: the scalar case, width 1, w_L⋯w_1 → y (Shamir 2019), y = ``target_value`` (2).
* ``residual``: the same net parameterized as (I + V_L)⋯(I + V_1); the init draws the V_l. Gradient descent is
  translation-equivariant, so this is the plain net started at W_l = I + V_l: the parameterization changes where
  the natural inits put the start (near I rather than near 0), which is what ResNets change.

Rectangular nets (``d_in``/``d_out`` given; Hu, Xiao & Pennington 2020, "Provable benefit of orthogonal
initialization in optimizing deep linear networks"): input and output dimensions d_in, d_out fixed, hidden width
n varying, W_1 ∈ R^{n×d_in}, W_l ∈ R^{n×n}, W_L ∈ R^{d_out×n}, and the scaled model αW_L⋯W_1 with
α = √(n/d_out). Derivation: the paper writes f(x) = W̃_L⋯W̃_1 x / √(n^{L−1}d_out) with N(0, 1) entries (or
W̃_lᵀW̃_l = n·I, orthogonal); with W̃_l = √n·W_l (entries N(0, 1/n), or W_lᵀW_l = I) the factor √n^L over
√(n^{L−1}d_out) is α = √(n/d_out), so ``xavier`` is the paper's Gaussian init and ``orthogonal`` its
orthogonal one (semi-orthogonal W_1, W_L: orthonormal columns, resp. rows, when n ≥ d_in, d_out), and at either
init E‖αPx‖² = ‖x‖². The loss is ½ tr((αP − Φ) Σ (αP − Φ)ᵀ) with Φ ∈ R^{d_out×d_in} (singular values over
[1, κ_Φ], min(d_in, d_out) of them; singular vectors shared only when d_in = d_out and the target is symmetric).
The reference step is the paper's η ∝ d_out/L: η = 1/(Lα²) = d_out/(L·n) in W_l, since at an orthogonal init each
layer's Jacobian dW_l ↦ αA dW_l B (A, B partial products, norm 1) has norm α, so the Gauss–Newton curvature is at
most Lα² (W̃_l = √n W_l turns it into the paper's η̃ = n·η = d_out/L). Their result: with orthogonal init the width
needed for efficient convergence does not grow with depth; with Gaussian init it grows (about linearly) with L.
Rectangular nets need depth ≥ 2 and the plain parameterization; without ``d_in``/``d_out`` the problem is the
square one above (α = 1, the balanced-minimum step), unchanged.

Inits (per layer; for ``residual`` they draw V_l): ``identity`` (W = I), ``orthogonal`` (Haar), ``xavier``
(N(0, 1/n) entries), ``small`` (N(0, s²/n), s = ``init_scale``), ``gaussian`` (N(0, 1), Shamir's) and ``zero``
(W = 0: for depth 1 the convex quadratic from 0; for depth ≥ 2 an exact saddle, where gradient methods never move).
The init is a *traced* axis (coded: the engine sees its index in `INITS`, records its name): every init runs in
one program, each seed drawing one set of matrices that all inits share. ``balanced`` rebalances the drawn factors to the same end-to-end product with
W_{j+1}ᵀW_{j+1} = W_jW_jᵀ (Arora, Cohen & Hazan 2018): P = UΣVᵀ gives W_1 = Σ^{1/L}Vᵀ, W_j = Σ^{1/L},
W_L = UΣ^{1/L}.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from otod.core.api import Family, OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
linalg = lazy("otod.core.linalg")

#: Init names in code order: the traced ``init`` axis vmaps over the index; records, tables, fits and figures
#: carry the name (`otod.core.axes.Axis.labels`).
INITS = ("identity", "orthogonal", "xavier", "small", "gaussian", "zero")
PROBLEMS = ("deep-linear", "chain", "residual")
TARGETS = ("symmetric", "general")


def init_code(name: str) -> int:
    try:
        return INITS.index(name)
    except ValueError:
        raise OtodError(f"--init {name}: unknown init; choose from {', '.join(INITS)}, e.g. --init identity") from None


def init_name(code: float) -> str:
    return INITS[int(round(code))]


def haar(rng: np.random.Generator, n: int) -> np.ndarray:
    """A Haar-random orthogonal n×n matrix: QR of a Gaussian matrix with the signs of R's diagonal moved into Q
    (Mezzadri 2007, "How to generate random matrices from the classical compact groups")."""
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def singular_values(width: int, target_kappa: float) -> np.ndarray:
    """The target's singular values: geometrically spaced from κ_Φ down to 1 (κ_Φ alone at width 1)."""
    return np.geomspace(target_kappa, 1.0, width) if width > 1 else np.array([target_kappa])


def input_spectrum(width: int, input_kappa: float) -> np.ndarray:
    """Eigenvalues of the input covariance Σ: geometrically spaced from 1 down to 1/κ_x (top eigenvalue 1, so the
    reference step is unchanged)."""
    return np.geomspace(1.0, 1.0 / input_kappa, width) if width > 1 else np.ones(1)


def chain_product(weights):
    """W_L⋯W_1 of stacked weights [L, n, n] (W_1 first), as a scan: one program for any depth's shape."""
    eye = jnp.eye(weights.shape[-1], dtype=weights.dtype)
    product, _ = jax.lax.scan(lambda p, w: (w @ p, None), eye, weights)
    return product


def prefix_suffix(weights):
    """(before, after): before[l] = W_{l−1}⋯W_1 (I for l = 1), after[l] = W_L⋯W_{l+1} (I for l = L), each [L, n, n]:
    the products KFAC's factors are made of."""
    eye = jnp.eye(weights.shape[-1], dtype=weights.dtype)
    _, before = jax.lax.scan(lambda p, w: (w @ p, p), eye, weights)
    _, after = jax.lax.scan(lambda p, w: (p @ w, p), eye, weights, reverse=True)
    return before, after


@dataclass(frozen=True)
class DeepLinearSpec:
    """Static options of a deep linear problem (module docstring). ``depth`` and ``width`` are the static axes."""

    problem: str = "deep-linear"
    depth: int = 4
    width: int = 8
    init_scale: float = 0.1
    target_kappa: float = 2.0
    target_value: float = 2.0
    input_kappa: float = 1.0
    target: str = "symmetric"
    balanced: bool = False
    d_in: int | None = None
    d_out: int | None = None

    def __post_init__(self):
        if self.problem not in PROBLEMS:
            raise OtodError(f"--problem {self.problem}: unknown; choose from {', '.join(PROBLEMS)}")
        if not (isinstance(self.depth, int) and self.depth >= 1):
            raise OtodError(f"--depth {self.depth}: depth must be an integer ≥ 1, e.g. --depth 1..12")
        if not (isinstance(self.width, int) and self.width >= 1):
            raise OtodError(f"--width {self.width}: width must be an integer ≥ 1, e.g. --width 8")
        if not (self.init_scale > 0 and np.isfinite(self.init_scale)):
            raise OtodError(f"--init-scale {self.init_scale:g}: must be a positive number, e.g. --init-scale 0.1")
        if not (self.target_kappa >= 1 and np.isfinite(self.target_kappa)):
            raise OtodError(f"--target-kappa {self.target_kappa:g}: the target's condition number must be ≥ 1, "
                            "e.g. --target-kappa 2")
        if not (self.input_kappa >= 1 and np.isfinite(self.input_kappa)):
            raise OtodError(f"--input-kappa {self.input_kappa:g}: the input covariance's condition number must be "
                            "≥ 1, e.g. --input-kappa 10")
        if not (self.target_value > 0 and np.isfinite(self.target_value)):
            raise OtodError(f"--target-value {self.target_value:g}: the chain's target y must be positive, "
                            "e.g. --target-value 2")
        if self.target not in TARGETS:
            raise OtodError(f"--target {self.target}: choose from {', '.join(TARGETS)}")
        if self.problem == "chain" and self.width != 1:
            raise OtodError(f"--width {self.width}: the chain is scalar (width 1); use --problem deep-linear for "
                            "matrices")
        if self.balanced and self.problem == "residual":
            raise OtodError("--balanced: applies to the plain parameterization (--problem deep-linear or chain)")
        for option, value in (("--d-in", self.d_in), ("--d-out", self.d_out)):
            if value is not None and not (isinstance(value, int) and 1 <= value <= 4096):
                raise OtodError(f"{option} {value}: must be an integer from 1 to 4096, e.g. {option} 8")
        if self.rectangular:
            if self.problem != "deep-linear" or self.balanced:
                raise OtodError("--d-in/--d-out: the rectangular net applies to --problem deep-linear without "
                                "--balanced")
            if self.depth < 2:
                raise OtodError(f"--depth {self.depth}: --d-in/--d-out need depth ≥ 2 (a hidden width n between "
                                "W_1 and W_L), e.g. --depth 2..32")

    @property
    def kind(self) -> str:
        return self.problem

    @property
    def residual(self) -> bool:
        return self.problem == "residual"

    @property
    def rectangular(self) -> bool:
        """Hu, Xiao & Pennington's setting: d_in, d_out fixed (one given; the other defaults to the width)."""
        return self.d_in is not None or self.d_out is not None

    @property
    def inputs(self) -> int:
        return self.width if self.d_in is None else self.d_in

    @property
    def outputs(self) -> int:
        return self.width if self.d_out is None else self.d_out

    @property
    def output_scale(self) -> float:
        """α of the model αW_L⋯W_1: √(n/d_out) for a rectangular net (module docstring), else 1."""
        return float(np.sqrt(self.width / self.outputs)) if self.rectangular else 1.0

    def target_singular_values(self) -> np.ndarray:
        if self.problem == "chain":
            return np.array([self.target_value])
        return singular_values(min(self.inputs, self.outputs) if self.rectangular else self.width,
                               self.target_kappa)

    def draws(self, rng: np.random.Generator) -> dict:
        """One seed's numbers: the target's singular vectors, the input covariance's eigenvectors, and the init's
        Gaussian and Haar matrices (one set, shared by every init)."""
        if self.rectangular:
            return self._rectangular_draws(rng)
        n, depth = self.width, self.depth
        u = haar(rng, n)
        v = haar(rng, n) if self.target == "general" else u
        r = haar(rng, n)
        gaussian = rng.standard_normal((depth, n, n))
        orthogonal = np.stack([haar(rng, n) for _ in range(depth)])
        return {"u": u, "v": v, "r": r, "gaussian": gaussian, "orthogonal": orthogonal}

    def family(self) -> Family:
        if self.rectangular:
            return self._rectangular_family()
        n, depth = self.width, self.depth
        s = self.target_singular_values()
        x_spectrum = input_spectrum(n, self.input_kappa)
        residual, balanced, scale = self.residual, self.balanced, self.init_scale

        def make(point, drawn):
            dtype = drawn["u"].dtype
            eye = jnp.eye(n, dtype=dtype)
            phi = drawn["u"] @ jnp.diag(jnp.asarray(s, dtype)) @ drawn["v"].T
            sigma = drawn["r"] @ jnp.diag(jnp.asarray(x_spectrum, dtype)) @ drawn["r"].T
            g = drawn["gaussian"]
            candidates = jnp.stack([jnp.broadcast_to(eye, g.shape), drawn["orthogonal"], g / np.sqrt(n),
                                    scale * g / np.sqrt(n), g, jnp.zeros_like(g)])
            code = jnp.asarray(point["init"]).astype(jnp.int32)
            start = jnp.tensordot(jax.nn.one_hot(code, len(INITS), dtype=dtype), candidates, axes=1)
            if balanced:
                start = balance(start)
            zero_loss = 0.5 * jnp.trace(phi @ sigma @ phi.T)
            return {"phi": phi, "sigma": sigma, "start": start, "zero_loss": zero_loss,
                    "offset": eye if residual else jnp.zeros_like(eye),
                    "beta": jnp.asarray(point.get("beta", 0.0), dtype)}

        def loss(p, params):
            e = chain_product(p["offset"] + params) - p["phi"]
            return 0.5 * jnp.trace(e @ p["sigma"] @ e.T)

        def metric(p, params):
            return loss(p, params) / p["zero_loss"]

        s_max = float(np.max(s))

        def info(p, params):
            del params
            dtype = p["zero_loss"].dtype
            return {"loss_scale": p["zero_loss"],
                    "gd_step": jnp.asarray(reference_step(depth, s_max), dtype),
                    "kfac_step": jnp.asarray(1.0 / depth, dtype),
                    "beta": p["beta"], "sigma": p["sigma"], "offset": p["offset"]}

        def value_and_grad(p, params):
            return metric_and_gradient(p, params, depth)

        floats = depth * n * n
        return Family(draws=self.draws, make=make, init=lambda p: p["start"], metric=metric, info=info,
                      provides=frozenset({"steps", "layers"}), floats_per_seed=2 * floats + 3 * n * n,
                      floats_per_lane=8 * floats + 6 * n * n, stall="fixed-point", value_and_grad=value_and_grad)


    def _rectangular_draws(self, rng: np.random.Generator) -> dict:
        """One seed's numbers for a rectangular net: Φ's singular vectors, Σ's eigenvectors, and the Gaussian and
        (semi-)orthogonal matrices of W_1 [n, d_in], W_2..W_{L−1} [L−2, n, n] and W_L [d_out, n]."""
        n, depth, d_in, d_out = self.width, self.depth, self.inputs, self.outputs
        u = haar(rng, d_out)
        v = u if self.target == "symmetric" and d_in == d_out else haar(rng, d_in)
        r = haar(rng, d_in)
        shapes = {"first": (n, d_in), "last": (d_out, n)}
        gaussian = {k: rng.standard_normal(shape) for k, shape in shapes.items()}
        gaussian["middle"] = rng.standard_normal((depth - 2, n, n))
        orthogonal = {k: semi_orthogonal(rng, *shape) for k, shape in shapes.items()}
        orthogonal["middle"] = np.array([haar(rng, n) for _ in range(depth - 2)]).reshape(depth - 2, n, n)
        return {"u": u, "v": v, "r": r, "gaussian": gaussian, "orthogonal": orthogonal}

    def _rectangular_family(self) -> Family:
        """αW_L⋯W_1 → Φ ∈ R^{d_out×d_in} (module docstring); the parameters are {first, middle, last}."""
        n, depth, d_in, d_out = self.width, self.depth, self.inputs, self.outputs
        s = self.target_singular_values()
        rank = len(s)
        x_spectrum = input_spectrum(d_in, self.input_kappa)
        scale, alpha = self.init_scale, self.output_scale

        def make(point, drawn):
            dtype = drawn["u"].dtype
            phi = drawn["u"][:, :rank] @ jnp.diag(jnp.asarray(s, dtype)) @ drawn["v"][:, :rank].T
            sigma = drawn["r"] @ jnp.diag(jnp.asarray(x_spectrum, dtype)) @ drawn["r"].T
            pick = jax.nn.one_hot(jnp.asarray(point["init"]).astype(jnp.int32), len(INITS), dtype=dtype)
            # The inits in INITS order are I, O, g/√n, s·g/√n, g, 0: one weight each on I, O and g, so no lane
            # holds six candidate copies of a deep wide net.
            on_g = pick @ jnp.asarray([0.0, 0.0, 1 / np.sqrt(n), scale / np.sqrt(n), 1.0, 0.0], dtype)

            def start(piece):
                g = drawn["gaussian"][piece]
                eye = jnp.broadcast_to(jnp.eye(*g.shape[-2:], dtype=dtype), g.shape)
                return pick[0] * eye + pick[1] * drawn["orthogonal"][piece] + on_g * g

            return {"phi": phi, "sigma": sigma, "start": {k: start(k) for k in ("first", "middle", "last")},
                    "zero_loss": 0.5 * jnp.trace(phi @ sigma @ phi.T),
                    "beta": jnp.asarray(point.get("beta", 0.0), dtype)}

        def loss(p, params):
            e = alpha * rectangular_product(params) - p["phi"]
            return 0.5 * jnp.trace(e @ p["sigma"] @ e.T)

        def metric(p, params):
            return loss(p, params) / p["zero_loss"]

        step = 1.0 / (depth * alpha ** 2)

        def info(p, params):
            del params
            dtype = p["zero_loss"].dtype
            return {"loss_scale": p["zero_loss"], "gd_step": jnp.asarray(step, dtype), "beta": p["beta"]}

        floats = (depth - 2) * n * n + n * (d_in + d_out)
        return Family(draws=self.draws, make=make, init=lambda p: p["start"], metric=metric,
                      info=info, provides=frozenset({"steps"}), floats_per_seed=2 * floats + 3 * d_in * d_in,
                      floats_per_lane=6 * floats + 6 * d_in * d_in, stall="fixed-point")


def metric_and_gradient(p, params, depth: int):
    """The square net's metric and its gradient in the params, written out: the reverse mode of the metric over
    `chain_product`, op for op what ``jax.value_and_grad`` traces (the same dot_generals with the same dimension
    numbers, the trace's diagonal mask, its cotangent c·I multiplied in by dots), less the products by I (W_1·I
    and dP_1·Iᵀ, exact). XLA:CPU's summation order in a dot depends on the operands' layouts, so any other way of
    writing it (c·u for the dot of c·I with u, a transposed dot) changes float32 rounding and the records: the
    engine's records with it are those of ``jax.value_and_grad``, bit for bit (tested,
    `tests/depth/test_gradient.py`).

    The dots that contract both operands' major dimension (the cotangent's c·Iᵀ(EΣ) and each layer's dPᵀW_l) are
    `transposed_product`: the same sums in the same order, 50 against 559 ns a product for 104 matrices of width 8
    (`benchmarks/bench_small_products.py`). The backward pass over the layers is a ``lax.scan``. Written
    straight, XLA fused each layer's elementwise product into the next layer's and into the gradient's dot, and
    recomputed it in each; the loop's trip boundary keeps it one fusion."""
    dot = jax.lax.dot_general
    w = p["offset"] + params
    eye = jnp.eye(w.shape[-1], dtype=w.dtype)
    prefix = [eye, w[0]]  # prefix[l] = W_l⋯W_1, the input of layer l + 1; W_1·I = W_1 exactly
    for layer in range(1, depth):
        prefix.append(dot(w[layer], prefix[-1], (((1,), (0,)), ((), ()))))
    e = prefix[-1] - p["phi"]
    e_sigma = dot(e, p["sigma"], (((1,), (0,)), ((), ())))
    e_t = e.T
    full = dot(e_sigma, e_t, (((1,), (0,)), ((), ())))
    diagonal = eye.astype(bool)
    f = (0.5 * jnp.sum(jnp.where(diagonal, full, 0.0))) / p["zero_loss"]
    cotangent = jnp.where(diagonal, 0.5 * (1.0 / p["zero_loss"]), 0.0).astype(w.dtype)  # of the trace: c·I
    from_left = transposed_product(cotangent, e_sigma)
    from_right = dot(dot(cotangent, e_t, (((1,), (1,)), ((), ()))), p["sigma"], (((1,), (1,)), ((), ())))
    dp = from_left.T.T + from_right  # ∂f/∂P, as autodiff adds its two transposes' cotangents
    if depth == 1:
        return f, dp[None]  # dP_1·Iᵀ exactly

    def down(dp, layer):
        w_l, below = layer
        # (dPᵀW_l)ᵀ = W_lᵀdP: the same products, summed in the same order
        return transposed_product(w_l, dp), dot(dp, below, (((1,), (1,)), ((), ())))

    dp, grads = jax.lax.scan(down, dp, (w[1:], jnp.stack(prefix[1:depth])), reverse=True)
    return f, jnp.concatenate([dp[None], grads])  # grads[0] = dP_1·Iᵀ exactly


def transposed_product(a, b):
    """aᵀb = Σ_k a[k, i]·b[k, j], summed as XLA:CPU's dot sums it when it contracts both operands' major
    dimension, written out elementwise: one chain of fused multiply-adds in increasing k.

    Why: XLA:CPU runs that dot through its naive loop emitter, 559 ns a product for 104 matrices of width 8,
    where the chain is one loop fusion at 50 ns (`benchmarks/bench_small_products.py`, medians of 5 rounds). It
    gives the same bits: tested for widths 1 to 64 (`tests/depth/test_linear.py`), and the engine's records
    against those of ``jax.value_and_grad`` (`tests/depth/test_gradient.py`). Bit for bit relies on LLVM contracting x·y + acc into one fused
    multiply-add in XLA:CPU's loop fusions, as it does. Of a sum of two products it fuses the left one, so the
    first sum is written a₁b₁ + a₀b₀: fma(a₁, b₁, a₀b₀), the dot's first two steps."""
    rows = a.shape[-2]
    if rows == 1:
        return a[0, :, None] * b[0, None, :]
    total = a[1, :, None] * b[1, None, :] + a[0, :, None] * b[0, None, :]
    for k in range(2, rows):
        total = total + a[k, :, None] * b[k, None, :]
    return total


def semi_orthogonal(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """A Haar-random rows×cols matrix with orthonormal columns (rows ≥ cols) or rows (rows < cols): a corner of a
    Haar orthogonal matrix of size max(rows, cols)."""
    return haar(rng, max(rows, cols))[:rows, :cols]


def rectangular_product(params):
    """W_L⋯W_1 of {first [n, d_in], middle [L−2, n, n], last [d_out, n]}: W_1 applied first, the middle as a scan."""
    inner, _ = jax.lax.scan(lambda p, w: (w @ p, None), params["first"], params["middle"])
    return params["last"] @ inner


def reference_step(depth: int, s_max: float) -> float:
    """η = 1/(L·s_max^{2(L−1)/L}): the inverse of the top Hessian eigenvalue of ½‖W_L⋯W_1 − Φ‖² at the balanced
    minimum (Saxe et al. 2014; Arora, Cohen & Hazan 2018), where every layer has singular values s^{1/L}."""
    return 1.0 / (depth * s_max ** (2.0 * (depth - 1) / depth))


def balance(weights):
    """Factors with the same product as ``weights`` [L, n, n] and W_{j+1}ᵀW_{j+1} = W_jW_jᵀ: from P = UΣVᵀ,
    W_1 = Σ^{1/L}Vᵀ, W_j = Σ^{1/L} (1 < j < L), W_L = UΣ^{1/L} (Arora, Cohen & Hazan 2018, balanced init)."""
    depth = weights.shape[0]
    u, sv, vt = linalg.svd(chain_product(weights))
    root = jnp.diag(sv ** (1.0 / depth))
    if depth == 1:
        return (u @ jnp.diag(sv) @ vt)[None]
    middle = jnp.broadcast_to(root, (depth - 2,) + root.shape)
    return jnp.concatenate([(root @ vt)[None], middle, (u @ root)[None]])
