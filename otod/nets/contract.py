"""Any JAX model in, by one small contract: what `otod curvature --model FILE.py:NAME`, `otod noise-scale --model
FILE.py:NAME` and the Python functions `otod.curvature` and `otod.noise_scale` measure.

A user's problem is a Python function of no arguments (named ``path/to/file.py:NAME`` or
``package.module:NAME``) that returns ``(loss, params, data)`` or ``(loss, params, data, init)``:

* ``loss(params, batch) -> scalar``: the *mean* loss over the batch's examples (so that a mean over chunks of the
  data is the mean over the data, `otod.nets.chunked`), ``batch`` a tuple like ``data``;
* ``params``: any pytree of float arrays, the start;
* ``data``: a tuple of arrays with a common leading example axis, the training set;
* ``init(key) -> params`` (optional): a start per seed; without it, seeds vary the minibatch order only.

Flax (``nnx.split`` or linen's ``apply``) and Equinox (``eqx.partition``) models fit it as a closure over their
static part (docs/models.md). `check` refuses a contract that would fail later, each with one line naming what is
wrong (`OtodError`, exit 2 on the command line): a missing file or name, an object that is not callable, a wrong
return shape, non-float parameters, data with unequal leading axes, a loss that is not a scalar, an ``init``
whose parameters differ from ``params`` in structure, and a loss that is not finite at the start. The shape
checks trace the loss abstractly (``jax.eval_shape``: no compute); the finite check evaluates it once over the
data, chunk by chunk.

otod's own nets are contract instances too (`from_spec`), so every measurement has one path.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from otod.core.errors import OtodError
from otod.core.lazy import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")


@dataclass(frozen=True, eq=False)
class Model:
    """A checked contract: ``loss(params, batch)``, the start ``params``, the training ``data`` (a tuple of
    arrays), an optional ``init(key)``, and ``name`` (how it was named: ``FILE.py:NAME``, ``mlp …``).
    Compared and hashed by identity, so that compiled functions are cached per model."""

    loss: Callable
    params: object
    data: tuple
    init: Callable | None = None
    name: str = "model"
    extra: dict = field(default_factory=dict)

    @property
    def examples(self) -> int:
        return int(self.data[0].shape[0])

    @property
    def parameter_count(self) -> int:
        return int(sum(np.size(leaf) for leaf in jax.tree.leaves(self.params)))


def is_reference(text) -> bool:
    """Whether ``--model`` names a user's function (``FILE.py:NAME`` or ``package.module:NAME``) rather than one of
    otod's own nets (mlp, cnn)."""
    return text is not None and ":" in str(text)


def load_function(reference: str, option: str = "--model") -> Callable:
    """The function ``reference`` names: ``path/to/file.py:NAME`` (imported from that file) or
    ``package.module:NAME`` (imported as a module); one line for a missing file, module or name, or an object that
    is not callable."""
    where = f"{option} {reference}"
    target, _, name = str(reference).rpartition(":")
    if not target or not name.isidentifier():
        raise OtodError(f"{where}: name a function as FILE.py:NAME or package.module:NAME, e.g. "
                        f"{option} models.py:problem")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise OtodError(f"{where}: no file {target}")
        module = _import_file(path, where)
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as e:
            raise OtodError(f"{where}: no module {e.name or target} to import") from None
        except Exception as e:  # the user's module failed while importing
            raise OtodError(f"{where}: importing {target} raised {type(e).__name__}: {_first_line(e)}") from None
    if not hasattr(module, name):
        raise OtodError(f"{where}: {target} has no {name}")
    function = getattr(module, name)
    if not callable(function):
        raise OtodError(f"{where}: {name} is a {type(function).__name__}, not a function of no arguments "
                        "returning (loss, params, data)")
    return function


def _import_file(path: Path, where: str):
    """Import a Python file as a module of its own (its folder on sys.path while it imports, for its siblings)."""
    name = f"otod_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise OtodError(f"{where}: cannot import {path} as Python")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise OtodError(f"{where}: importing {path} raised {type(e).__name__}: {_first_line(e)}") from None
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else "(no message)"


def load(reference: str, option: str = "--model", finite: bool = True) -> Model:
    """Load and `check` the contract ``reference`` names: call its function (no arguments) and check what it
    returns."""
    function = load_function(reference, option)
    where = f"{option} {reference}"
    try:
        returned = function()
    except TypeError as e:
        raise OtodError(f"{where}: calling it with no arguments raised TypeError: {_first_line(e)}") from None
    except Exception as e:
        raise OtodError(f"{where}: calling it raised {type(e).__name__}: {_first_line(e)}") from None
    if not isinstance(returned, (tuple, list)) or len(returned) not in (3, 4):
        got = f"a {len(returned)}-tuple" if isinstance(returned, (tuple, list)) else f"a {type(returned).__name__}"
        raise OtodError(f"{where}: returned {got}; return (loss, params, data) or (loss, params, data, init)")
    return check(*returned, where=where, name=str(reference), finite=finite)


def check(loss, params, data, init=None, where: str = "model", name: str = "model", finite: bool = True) -> Model:
    """A `Model` of the contract's parts, or one line (`OtodError`) on the first thing wrong (module docstring);
    ``where`` starts the line (the option and its value on the command line, the argument in Python)."""
    if not callable(loss):
        raise OtodError(f"{where}: loss is a {type(loss).__name__}, not a function loss(params, batch)")
    if init is not None and not callable(init):
        raise OtodError(f"{where}: init is a {type(init).__name__}, not a function init(key) -> params")
    data = _check_data(data, where)
    params = _check_params(params, where)
    _check_loss_shape(loss, params, data, where)
    if init is not None:
        _check_init(init, params, where)
    model = Model(loss, params, data, init, name, {"where": where})
    if finite:
        value = start_loss(model)
        if not math.isfinite(value):
            raise OtodError(f"{where}: the loss at the start is {value} over the {model.examples:,} examples; "
                            "a measurement needs a finite loss (check the data and the start)")
    return model


def _check_data(data, where: str) -> tuple:
    if not isinstance(data, (tuple, list)) or not data:
        raise OtodError(f"{where}: data is a {type(data).__name__}; give a non-empty tuple of arrays with a common "
                        "leading example axis, e.g. (x, y)")
    arrays = []
    for i, a in enumerate(data):
        if not hasattr(a, "shape") or not hasattr(a, "dtype"):
            raise OtodError(f"{where}: data[{i}] is a {type(a).__name__}, not an array")
        if len(a.shape) == 0:
            raise OtodError(f"{where}: data[{i}] is a scalar; each data array needs a leading example axis")
        arrays.append(a)
    lengths = [int(a.shape[0]) for a in arrays]
    if len(set(lengths)) > 1:
        raise OtodError(f"{where}: data arrays have unequal leading axes {lengths}; each array's first axis is the "
                        "example, the same length in all")
    if lengths[0] < 1:
        raise OtodError(f"{where}: data has no examples (leading axis 0)")
    return tuple(arrays)


def _check_params(params, where: str):
    leaves = jax.tree.leaves(params)
    if not leaves:
        raise OtodError(f"{where}: params has no arrays; give a pytree of float arrays")
    for leaf in leaves:
        dtype = getattr(leaf, "dtype", None)
        if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
            raise OtodError(f"{where}: params holds a {dtype if dtype is not None else type(leaf).__name__} leaf; "
                            "every leaf must be a float array")
    return params


def _check_loss_shape(loss, params, data, where: str) -> None:
    """The loss's output on a batch of the data, traced abstractly: one scalar, a float."""
    batch = tuple(a[: min(2, a.shape[0])] for a in data)
    try:
        out = jax.eval_shape(loss, params, batch)
    except Exception as e:
        raise OtodError(f"{where}: loss(params, batch) raised {type(e).__name__}: {_first_line(e)}") from None
    shape = getattr(out, "shape", None)
    if shape is None:
        raise OtodError(f"{where}: loss returns a {type(out).__name__}; it must return one scalar, the mean loss "
                        "over the batch")
    if shape != ():
        raise OtodError(f"{where}: loss returns shape {tuple(shape)} on a batch of {batch[0].shape[0]}; it must "
                        "return a scalar, the mean loss over the batch (e.g. jnp.mean of the per-example losses)")
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise OtodError(f"{where}: loss returns {out.dtype}; it must return a float scalar")


def _check_init(init, params, where: str) -> None:
    try:
        drawn = jax.eval_shape(init, jax.random.PRNGKey(0))
    except Exception as e:
        raise OtodError(f"{where}: init(key) raised {type(e).__name__}: {_first_line(e)}") from None
    want = jax.tree.map(lambda a: (tuple(a.shape), str(a.dtype)), params)
    got = jax.tree.map(lambda a: (tuple(a.shape), str(a.dtype)), drawn)
    if jax.tree.structure(want) != jax.tree.structure(got) or jax.tree.leaves(want) != jax.tree.leaves(got):
        raise OtodError(f"{where}: init(key) returns parameters of another structure or shape than params")


def start_loss(model: Model, chunk: int | None = None) -> float:
    """The mean training loss at ``model.params``, over all its data, ``chunk`` examples at a time (default
    `chunk_of`)."""
    from otod.nets.chunked import chunked_mean

    f = chunked_mean(model.loss, chunk or chunk_of(model))
    return float(jax.jit(f)(model.params, *model.data))


def flops_per_example(model) -> float:
    """XLA's flop count of the loss on a batch of one example (forward), at least 1; 2P where XLA gives none."""
    batch = tuple(a[:1] for a in model.data)
    try:
        cost = jax.jit(model.loss).lower(model.params, batch).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        flops = float((cost or {}).get("flops", 0.0))
    except Exception:  # a backend without a cost model
        flops = 0.0
    return max(1.0, flops or 2.0 * model.parameter_count)


def chunk_of(model: Model, vectors: int = 1) -> int:
    """Examples per chunk for ``model`` (`otod.nets.chunked.chunk_for` from its estimated activations)."""
    from otod.nets.chunked import activation_floats, chunk_for

    return chunk_for(model.examples, activation_floats(model.loss, model.params, model.data), vectors)


def cast(model: Model, dtype) -> Model:
    """``model`` with its params and its float data in ``dtype`` (integer data, such as labels, kept)."""
    def to(a):
        return jnp.asarray(a, dtype) if jnp.issubdtype(a.dtype, jnp.floating) else jnp.asarray(a)

    init = None if model.init is None else _CastInit(model.init, dtype)
    return Model(model.loss, jax.tree.map(to, model.params), tuple(to(a) for a in model.data), init, model.name,
                 model.extra)


class _CastInit:
    def __init__(self, init, dtype):
        self.init, self.dtype = init, dtype

    def __call__(self, key):
        return jax.tree.map(lambda a: jnp.asarray(a, self.dtype), self.init(key))


def from_spec(spec, dtype=np.float32, s: int = 0, seed: int = 0) -> Model:
    """One of otod's own nets (`otod.nets.problem.NetSpec`) as a contract instance: its mean loss over a batch
    (x, y), seed ``s``'s start under root ``seed`` (the sweep's draw), its training arrays."""
    from otod.nets.family import seed_starts, start_of

    drawn = seed_starts(spec, np.random.default_rng([seed, s]))
    params = jax.tree.map(lambda a: jnp.asarray(a, dtype), start_of(spec, drawn))
    x, y = (jnp.asarray(a) for a in spec.training_arrays(dtype))
    return Model(_SpecLoss(spec), params, (x, y), None, f"{spec.model} width {spec.width} depth {spec.depth}",
                 {"spec": spec})


class _SpecLoss:
    """A NetSpec's mean loss as loss(params, (x, y)); equal and hashed as its spec, so that jit caches per net."""

    def __init__(self, spec):
        self.spec = spec

    def __eq__(self, other):
        return isinstance(other, _SpecLoss) and self.spec == other.spec

    def __hash__(self):
        return hash((_SpecLoss, self.spec))

    def __call__(self, params, batch):
        return self.spec.mean_loss(params, *batch)
