"""Per-layer curvature: the top eigenvalue of each layer's diagonal Hessian block beside the whole net's
(``otod curvature --per-layer``, ``otod.curvature(..., per_layer=True)``), as PyHessian's users ask for.

* A *layer* is a group of the parameter pytree's parameters: the parameters that share a parent node (a
  parameter's pytree path less its last key), and a parameter at the root is a layer of its own. A parameter is
  an array leaf, or a Flax nnx ``Variable`` (``nnx.Param``: one array boxed with its metadata, reached as
  ``.value``), which counts as its array, so that its box is not taken for the layer. otod's own nets, a tuple of
  ``{"w", "b"}`` per layer, give one layer per weight layer (``[0]``, ``[1]``, …: its weights and biases); a
  Flax nnx module's state (``nnx.split(model, nnx.Param)[1]``) gives one layer per submodule (``['hidden']``,
  ``['out']``: each ``nnx.Linear``'s kernel and bias); a Flax linen tree ``{"params": {"Dense_0": {"kernel",
  "bias"}, …}}`` gives ``['params']['Dense_0']``, …; an Equinox MLP gives ``.layers[0]``, …; a flat dict
  ``{"w1", "b1", "w2"}`` gives one layer per entry. A layer is named by its path as `jax.tree_util.keystr` writes
  it (``params[0]`` is that layer), "(all)" for a bare array.
* Layer ℓ's block H_ℓℓ = ∂²L/∂θ_ℓ² is the Hessian of the loss restricted to θ_ℓ with every other layer held
  fixed: the full Hessian-vector product with the tangent zero outside the layer, projected back onto it
  (H_ℓℓ v_ℓ = [H (v_ℓ, 0)]_ℓ). `block_loss` writes it as the loss of θ_ℓ alone, so each product is the
  forward-over-reverse jvp(∇_ℓ L) (Pearlmutter 1994) of that function, and its top eigenvalue is Lanczos's
  (`otod.nets.measure.curvature.top_eigenvalues`: full re-orthogonalization, min(P_ℓ, 43) steps by default, exact at
  P_ℓ steps), with its residual bound |β_m s_m| (an eigenvalue of H_ℓℓ lies within it).
* By Cauchy interlacing each block's λ_max(H_ℓℓ) ≤ λ_max(H) (H_ℓℓ is a principal submatrix), and
  Σ_ℓ tr H_ℓℓ = tr H; a block near the whole net's λ_max says the sharpest direction lives in that layer.
"""

from __future__ import annotations

import sys
from typing import Callable, NamedTuple

import numpy as np

from otod.core.api import lazy

jax = lazy("jax")


class Layer(NamedTuple):
    """One group of the parameter pytree's leaves: its name (the parent's path), the leaves' indices in
    `jax.tree_util.tree_leaves` order, and its parameter count."""

    name: str
    members: tuple[int, ...]
    parameters: int


def _parent(path: tuple) -> tuple:
    return path[:-1] if len(path) > 1 else path


def _is_boxed_parameter(node) -> bool:
    """A Flax nnx ``Variable`` (``nnx.Param``, …): one parameter in its box (module docstring). Flax is not
    imported for it: a tree that holds one has imported it."""
    nnx = sys.modules.get("flax.nnx")
    return nnx is not None and isinstance(node, nnx.Variable)


def layers_of(params) -> list[Layer]:
    """The layers of ``params`` (module docstring: parameters grouped by their parent's path), in the order of
    their first leaf; ``members`` index the array leaves (`jax.tree_util.tree_leaves` order)."""
    from jax.tree_util import keystr, tree_flatten_with_path, tree_leaves

    parameters, _ = tree_flatten_with_path(params, is_leaf=_is_boxed_parameter)
    groups: dict[tuple, list[int]] = {}
    sizes: dict[tuple, int] = {}
    first = 0
    for path, node in parameters:  # depth-first, as the array leaves: each node's leaves come next in order
        arrays = tree_leaves(node)
        parent = tuple(_parent(path))
        groups.setdefault(parent, []).extend(range(first, first + len(arrays)))
        sizes[parent] = sizes.get(parent, 0) + int(sum(np.size(a) for a in arrays))
        first += len(arrays)
    return [Layer(keystr(parent) or "(all)", tuple(members), sizes[parent]) for parent, members in groups.items()]


class _BlockLoss:
    """loss(θ_ℓ, others, *data) = ``loss`` at the parameters with layer ℓ's leaves ``block`` and the rest
    ``others``: the loss of one layer with the others held fixed. Equal and hashed by (loss, tree, members), so
    one compile serves a layer at every checkpoint."""

    def __init__(self, loss: Callable, treedef, members: tuple[int, ...]):
        self.loss, self.treedef, self.members = loss, treedef, members

    def __eq__(self, other):
        return isinstance(other, _BlockLoss) and (self.loss, self.treedef, self.members) == (
            other.loss, other.treedef, other.members)

    def __hash__(self):
        return hash((_BlockLoss, self.loss, self.treedef, self.members))

    def __call__(self, block, others, *data):
        block, others = iter(block), iter(others)
        leaves = [next(block) if i in self.members else next(others) for i in range(self.treedef.num_leaves)]
        return self.loss(jax.tree_util.tree_unflatten(self.treedef, leaves), *data)


def block_loss(loss: Callable, params, layer: Layer) -> tuple[Callable, tuple, tuple]:
    """(f, θ_ℓ, others): f(θ_ℓ, others, *data) = loss(params with layer ℓ's leaves θ_ℓ, *data), whose Hessian
    in θ_ℓ is the diagonal block H_ℓℓ."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    block = tuple(leaves[i] for i in layer.members)
    others = tuple(leaf for i, leaf in enumerate(leaves) if i not in layer.members)
    return _BlockLoss(loss, treedef, layer.members), block, others


def layer_curvature(top_eigenvalues: Callable, loss: Callable, params, data: tuple, seed: int = 0,
                    top_steps: int | None = None) -> dict:
    """The per-layer record fields: each layer's name, parameter count, top eigenvalue of its diagonal block
    H_ℓℓ (by ``top_eigenvalues``, `otod.nets.measure.curvature.top_eigenvalues` passed in by its module so that this
    one imports nothing of it: Lanczos from PRNGKey(seed), ``top_steps`` steps), its residual bound and the
    Lanczos steps taken, lists in `layers_of` order."""
    names, sizes, tops, residuals, steps = [], [], [], [], []
    for layer in layers_of(params):
        f, block, others = block_loss(loss, params, layer)
        top = top_eigenvalues(f, block, 1, (others, *data), top_steps, seed)
        names.append(layer.name)
        sizes.append(layer.parameters)
        tops.append(float(top.eigenvalues[0]))
        residuals.append(float(top.residuals[0]))
        steps.append(int(top.steps))
    return {"layer_names": names, "layer_parameters": sizes, "layer_lambda_max": tops,
            "layer_residuals": residuals, "layer_lanczos_steps": steps}


def layer_count(params) -> int:
    """How many layers `layers_of` finds (for the time estimates)."""
    return len(layers_of(params))
