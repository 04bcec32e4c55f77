"""Any JAX model in, by one small contract: what `otod curvature --model FILE.py:NAME`, `otod noise-scale --model
FILE.py:NAME` and the Python functions `otod.curvature` and `otod.noise_scale` measure.

A user's problem is a Python function of no arguments (named ``path/to/file.py:NAME`` or
``package.module:NAME``) that returns ``(loss, params, data)`` or ``(loss, params, data, init)``:

* ``loss(params, batch) -> scalar``: the *mean* loss over the batch's examples (so that a mean over chunks of the
  data is the mean over the data, `otod.nets.model.chunked`), ``batch`` a tuple like ``data``;
* ``params``: any pytree of float arrays, the start;
* ``data``: a tuple of arrays with a common leading example axis, the training set;
* ``init(key) -> params`` (optional): a start per seed; without it, seeds vary the minibatch order only.

Flax (``nnx.split`` or linen's ``apply``) and Equinox (``eqx.partition``) models fit it as a closure over their
static part (docs/models.md). `check` refuses a contract that would fail later, each with one line naming what is
wrong (`OtodError`, exit 2 on the command line): a missing file or name, an object that is not callable, a wrong
return shape, non-float parameters, data with unequal leading axes, a loss that is not a scalar, an ``init``
whose parameters differ from ``params`` in structure, a loss in a 16-bit float, and a loss that is not finite at the
start. The shape checks trace the loss and its gradient abstractly (``jax.eval_shape``: no compute) at every batch
size the work will give it (`trace_sizes`: the largest minibatch, the data's chunks, one example), and the
Hessian-vector product where the work takes one; the finite check evaluates the loss once over the data, chunk by
chunk. The user's own code failing, at import, in the function, in ``loss`` (forward or backward, e.g. a
``custom_vjp``) or in ``init``, is reported as one line, "your model's loss raised X: message (file:line)", with
the user's frames named and otod's and the libraries' left out (`user_error`); ``sys.exit`` in it is refused the
same way, never taken as otod's exit.

otod's own nets are contract instances too (`from_spec`), so every measurement has one path.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
import sysconfig
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from otod.core.api import OtodError, lazy

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
        except (Exception, SystemExit) as e:  # the user's module failed while importing
            raise OtodError(f"{where}: importing {target} {_raised(e)}{_located(e)}") from None
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
    except (Exception, SystemExit) as e:
        raise OtodError(f"{where}: importing {path} {_raised(e)}{_located(e, str(path.resolve()))}") from None
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else "(no message)"


def _raised(error: BaseException) -> str:
    """How the user's code ended: "raised X: message", or "called sys.exit(code)" (refused: a model never ends
    otod's process, and exit 0 would read as success with nothing written)."""
    if isinstance(error, SystemExit):
        return f"called sys.exit({error.code!r})"
    return f"raised {type(error).__name__}: {_first_line(error)}"


def _library_folders() -> tuple[str, ...]:
    """Folders whose frames are not the user's: otod's package, the standard library, site-packages."""
    paths = sysconfig.get_paths()
    folders = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    folders.add(str(Path(__file__).resolve().parents[2]))
    return tuple(os.path.join(str(Path(f).resolve()), "") for f in folders)


def user_frames(error: BaseException, model_file: str | None = None) -> list:
    """The frames of ``error``'s traceback (outermost first) in the user's code: the model's own file, and any
    file outside otod and the installed libraries (JAX drops its own frames from what it re-raises)."""
    folders = _library_folders()
    frames = []
    for frame in traceback.extract_tb(error.__traceback__):
        name = frame.filename
        path = str(Path(name).resolve()) if not name.startswith("<") else name
        if path == model_file or not (name.startswith("<") or path.startswith(folders)):
            frames.append(frame)
    return frames


def _located(error: BaseException, model_file: str | None = None) -> str:
    """" (file:line)" of the innermost user frame, then the user frames that called it (" (a.py:9 in f, from
    a.py:20 in loss)"); "" where the traceback holds none."""
    frames = user_frames(error, model_file)[::-1]
    if not frames:
        return ""

    def short(frame) -> str:
        rel = os.path.relpath(frame.filename) if not frame.filename.startswith("<") else frame.filename
        name = rel if not rel.startswith("..") else frame.filename
        return f"{name}:{frame.lineno}"

    if len(frames) == 1:
        return f" ({short(frames[0])})"
    return " (" + ", from ".join(f"{short(f)} in {f.name}" for f in frames) + ")"


def user_error(error: BaseException, what: str, where: str, model_file: str | None = None) -> OtodError:
    """One line for the user's code failing in ``what`` ("loss", "init(key)", or a whole subject such as "the
    gradient of your model's loss"): "WHERE: your model's WHAT raised X: message (file:line)", the user's frames
    named, otod's and the libraries' left out; an `OtodError` (otod's own refusal, or this line already made
    where the user's code was called) passes unchanged."""
    if isinstance(error, OtodError):
        return error
    subject = what if what.startswith("the ") else f"your model's {what}"
    return OtodError(f"{where}: {subject} {_raised(error)}{_located(error, model_file)}")


def load(reference: str, option: str = "--model", finite: bool = True) -> Model:
    """Load and `check` the contract ``reference`` names: call its function (no arguments) and check what it
    returns."""
    function = load_function(reference, option)
    where = f"{option} {reference}"
    file = _source_file(function)
    try:
        returned = function()
    except TypeError as e:
        raise OtodError(f"{where}: calling it with no arguments raised TypeError: {_first_line(e)}"
                        f"{_located(e, file)}") from None
    except (Exception, SystemExit) as e:
        raise OtodError(f"{where}: calling it {_raised(e)}{_located(e, file)}") from None
    if not isinstance(returned, (tuple, list)) or len(returned) not in (3, 4):
        got = f"a {len(returned)}-tuple" if isinstance(returned, (tuple, list)) else f"a {type(returned).__name__}"
        raise OtodError(f"{where}: returned {got}; return (loss, params, data) or (loss, params, data, init)")
    return check(*returned, where=where, name=str(reference), finite=finite, model_file=file)


def _source_file(function) -> str | None:
    """The resolved path of the file that defines ``function`` (its frames are the user's), or None."""
    code = getattr(function, "__code__", None)
    return str(Path(code.co_filename).resolve()) if code is not None else None


def check(loss, params, data, init=None, where: str = "model", name: str = "model", finite: bool = True,
          model_file: str | None = None) -> Model:
    """A `Model` of the contract's parts, or one line (`OtodError`) on the first thing wrong (module docstring);
    ``where`` starts the line (the option and its value on the command line, the argument in Python).
    ``model_file``: the file whose frames are the user's (default: the one defining ``loss``). The model's loss
    and init are wrapped (`_UserCode`) so that the user's code failing later, during the work, is the same one
    line."""
    if not callable(loss):
        raise OtodError(f"{where}: loss is a {type(loss).__name__}, not a function loss(params, batch)")
    if init is not None and not callable(init):
        raise OtodError(f"{where}: init is a {type(init).__name__}, not a function init(key) -> params")
    model_file = model_file or _source_file(loss)
    data = _check_data(data, where)
    params = _check_params(params, where)
    loss = loss if isinstance(loss, _UserCode) else _UserCode(loss, "loss", where, model_file)
    if init is not None:
        init = init if isinstance(init, _UserCode) else _UserCode(init, "init(key)", where, model_file)
    model = Model(loss, params, data, init, name, {"where": where, "file": model_file})
    trace_loss(model, (min(2, model.examples),))
    if init is not None:
        _check_init(init, params, where)
    if finite:
        value = start_loss(model)
        if not math.isfinite(value):
            raise OtodError(f"{where}: the loss at the start is {value} over the {model.examples:,} examples; "
                            "a measurement needs a finite loss (check the data and the start)")
    return model


class _UserCode:
    """The user's ``loss`` or ``init``, called through: any exception (or ``sys.exit``) its own code raises, at
    any time, becomes `user_error`'s one line. Compared and hashed by identity, as the function it wraps."""

    def __init__(self, function, what: str, where: str, model_file: str | None):
        self.function, self.what, self.where, self.model_file = function, what, where, model_file

    def __call__(self, *args):
        try:
            return self.function(*args)
        except (Exception, SystemExit) as e:
            raise user_error(e, self.what, self.where, self.model_file) from None


def trace_sizes(examples: int, batches=(), chunk: int | None = None, one: bool = False) -> tuple[int, ...]:
    """The batch sizes a piece of work gives the loss: the minibatches ``batches``, the data's full chunks and
    the chunk left over (`otod.nets.model.chunked.pieces` of ``chunk``), and one example (``one``: per-example
    gradients), each at most ``examples``."""
    from otod.nets.model.chunked import pieces

    sizes = {int(b) for b in batches}
    if chunk is not None:
        c, _, rest = pieces(examples, int(chunk))
        sizes |= {c, rest} - {0}
    if one:
        sizes.add(1)
    return tuple(sorted(b for b in sizes if 1 <= b <= examples))


def trace_loss(model: Model, sizes, hvp: bool = False) -> None:
    """Trace the loss and its gradient (and, with ``hvp``, its Hessian-vector product) at each batch size of
    ``sizes`` abstractly (``jax.eval_shape``: no compute): one line for a loss that fails at some size, forward or
    backward (the forward pass traced first, so that the two are named apart), that returns no float32 or float64
    scalar, or whose gradient or HVP fails."""
    where, file = model.extra.get("where", model.name), model.extra.get("file")
    for size in sizes:
        batch = tuple(jax.ShapeDtypeStruct((int(size),) + tuple(a.shape[1:]), a.dtype) for a in model.data)
        traced = [("loss", model.loss), ("the gradient of your model's loss", jax.grad(model.loss))]
        traced += [("the Hessian-vector product of your model's loss", _hvp(model.loss))] if hvp else []
        for what, f in traced:
            try:
                out = jax.eval_shape(f, model.params, batch)
            except (Exception, SystemExit) as e:
                raise OtodError(f"{user_error(e, what, where, file)}, on a batch of {size}") from None
            if what == "loss":
                _check_output(out, size, where)


def _hvp(loss):
    """params, batch -> H·params of ``loss`` at params (forward over reverse), for `trace_loss`."""
    def hvp(params, batch):
        return jax.jvp(lambda p: jax.grad(loss)(p, batch), (params,), (params,))[1]

    return hvp


def _check_output(out, size: int, where: str) -> None:
    """The loss's output on a batch of ``size``: one float32 or float64 scalar."""
    shape = getattr(out, "shape", None)
    if shape is None:
        raise OtodError(f"{where}: loss returns a {type(out).__name__}; it must return one scalar, the mean loss "
                        "over the batch")
    if shape != ():
        raise OtodError(f"{where}: loss returns shape {tuple(shape)} on a batch of {size}; it must return a scalar, "
                        "the mean loss over the batch (e.g. jnp.mean of the per-example losses)")
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise OtodError(f"{where}: loss returns {out.dtype}; it must return a float scalar")
    if jnp.dtype(out.dtype).itemsize < 4:
        raise OtodError(f"{where}: loss returns {out.dtype}; otod measures in float32 (float64 with --x64) and reads "
                        "the loss against its target in that precision: return it as float32, e.g. "
                        "jnp.mean(losses).astype(jnp.float32)")


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


def _check_init(init, params, where: str) -> None:
    drawn = jax.eval_shape(init, jax.random.PRNGKey(0))  # the user's failure: one line (`_UserCode`)
    want = jax.tree.map(lambda a: (tuple(a.shape), str(a.dtype)), params)
    got = jax.tree.map(lambda a: (tuple(a.shape), str(a.dtype)), drawn)
    if jax.tree.structure(want) != jax.tree.structure(got) or jax.tree.leaves(want) != jax.tree.leaves(got):
        raise OtodError(f"{where}: init(key) returns parameters of another structure or shape than params")


def start_loss(model: Model, chunk: int | None = None) -> float:
    """The mean training loss at ``model.params``, over all its data, ``chunk`` examples at a time (default
    `chunk_of`)."""
    from otod.nets.model.chunked import chunked_mean

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
    """Examples per chunk for ``model`` (`otod.nets.model.chunked.chunk_for` from its estimated activations)."""
    from otod.nets.model.chunked import activation_floats, chunk_for

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
    """One of otod's own nets (`otod.nets.model.problem.NetSpec`) as a contract instance: its mean loss over a batch
    (x, y), seed ``s``'s start under root ``seed`` (the sweep's draw), its training arrays."""
    from otod.nets.model.family import seed_starts, start_of

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
