"""A user's model (`otod.nets.model.contract`) as the net sweep's problem: `ModelProblem`, what ``otod sweep net --model
FILE.py:NAME`` and ``otod.critical_batch(loss, params, data, …)`` run through the core engine.

The problem is flat, like `otod.nets.model.problem.NetSpec`, so that the core's static axes (``batch``, ``examples``)
replace its fields and a results file rebuilds it from its stored config:

* ``reference``: how the model was named (``FILE.py:NAME``, ``package.module:NAME``, or ``python:NAME`` for a
  model given to the Python function);
* ``digest``: a SHA-256 over the contract's numbers (the start's and the data's shapes, dtypes and bytes) and, for
  a file, the file's bytes: the results file is named by the config, so a changed model or data set never resumes
  or reads back another's records, and a record says exactly what it measured;
* ``parameters``, ``data_examples``, ``example_floats``, ``start_loss``: what the sweep's checks and estimates
  read without loading the model again (a results file reads back without the user's file);
* ``batch``: the minibatch size; ``examples``: the first N training examples (None: all), so sets of several N are
  nested and the same for every seed;
* ``branch_step``, ``branch_batch``, ``branch_lr``: a branch (`otod.nets.model.branch`, as `otod.nets.model.problem.NetSpec`'s):
  every seed starts from its checkpoint after ``branch_step`` steps of plain SGD at batch ``branch_batch`` and step
  ``branch_lr`` from its own start; None (all three): the start itself (None fields stay out of the digest).

The loaded model travels with the problem (``model``, left out of comparisons, hashes and the stored config); a
problem read back from a file loads it again from ``reference`` when a run needs it, and refuses one whose digest
changed.

The family (`model_family`) is the net sweep's (`otod.nets.model.family`) with the user's loss: seed s's start is
``init(key_s)`` (key_s drawn from the seed's generator) where the model has an ``init``, else the given
``params`` for every seed (seeds then vary the minibatch order only, as the contract says); step t's minibatch is
`otod.nets.model.family.minibatch` of the seed's shuffle key; the stopping metric is the mean training loss over all
(the first N) examples, accumulated chunk by chunk (`otod.nets.model.chunked`), read at the net family's checkpoints.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from otod.core.api import OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: Floats of one step a lane holds besides the parameters' copies: counted per example of the minibatch.
LANE_COPIES = 8


@dataclass(frozen=True)
class ModelProblem:
    """A contract model as the net sweep's problem (module docstring)."""

    reference: str
    digest: str
    parameters: int
    data_examples: int
    example_floats: int
    start_loss: float
    batch: int = 32
    examples: int | None = None
    branch_step: int | None = None
    branch_batch: int | None = None
    branch_lr: float | None = None
    model: object = field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self):
        for value, option, example in ((self.batch, "--batch", "32"), (self.examples, "--examples", "512")):
            if value is not None and not (isinstance(value, (int, np.integer)) and value >= 1):
                raise OtodError(f"{option} {value}: need an integer ≥ 1, e.g. {option} {example}")
        if self.examples is not None and self.examples > self.data_examples:
            raise OtodError(f"--examples {self.examples}: {self.reference} has {self.data_examples:,} training "
                            f"examples; use --examples ≤ {self.data_examples:,}")
        if self.batch > self.training_examples:
            raise OtodError(f"--batch {self.batch}: larger than the data set ({self.training_examples:,} training "
                            f"examples); use --batch ≤ {self.training_examples:,}")
        if self.branched or self.branch_batch is not None or self.branch_lr is not None:
            from otod.nets.model.branch import check_branch

            check_branch(self, self.training_examples)

    @property
    def kind(self) -> str:
        return "model"

    @property
    def branched(self) -> bool:
        """Whether every seed starts from a checkpoint of its reference run (`otod.nets.model.branch`)."""
        return self.branch_step is not None

    def program_form(self) -> ModelProblem:
        """The problem without its branch's fields, which replace only the family's draws (its seeds' starts), not
        its program (`otod.core.variants.program_form`)."""
        if not self.branched and self.branch_batch is None and self.branch_lr is None:
            return self
        return replace(self, branch_step=None, branch_batch=None, branch_lr=None)

    @property
    def stream(self) -> None:
        """A user's model brings its own finite training set: never a stream (read as `NetSpec.stream`)."""
        return None

    @property
    def training_examples(self) -> int:
        return self.data_examples if self.examples is None else int(self.examples)

    @property
    def parameter_count(self) -> int:
        return int(self.parameters)

    def record(self) -> dict:
        """The fields a results file stores (all but the loaded model)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "model"}

    @functools.cached_property
    def _loaded(self):
        from otod.nets.model.contract import Model

        model = self.model if self.model is not None else _reload(self.reference, self.digest)
        if self.examples is None or self.examples == model.examples:
            return model
        data = tuple(a[: self.examples] for a in model.data)
        return Model(model.loss, model.params, data, model.init, model.name, model.extra)

    def loaded(self):
        """The contract model, its data cut to the first ``examples``: the one given, else loaded again from
        ``reference`` (refused where its digest changed since the run)."""
        return self._loaded

    def training_arrays(self, dtype=np.float32) -> tuple:
        """The training data (the first ``examples``), floats in ``dtype``, integers kept."""
        return tuple(np.asarray(a, dtype) if np.issubdtype(np.asarray(a).dtype, np.floating) else np.asarray(a)
                     for a in self.loaded().data)

    def mean_loss(self, params, *batch):
        """The model's mean loss over a batch given as separate arrays (as `NetSpec.mean_loss` takes x, y)."""
        return self.loaded().loss(params, tuple(batch))

    def initial_params(self, rng: np.random.Generator, init=None, architecture=None):
        """One seed's start, in NumPy float64: ``init(key)`` with a key drawn from ``rng`` where the model has an
        ``init`` (called in JAX's default 32-bit mode, so that a float32 and a float64 sweep start at the same
        point, whatever mode the caller is in), else the given ``params``."""
        del init, architecture
        model = self.loaded()
        key = int(rng.integers(0, 2 ** 31 - 1))
        if model.init is None:
            return jax.tree.map(lambda a: np.asarray(a, np.float64), model.params)
        with jax.enable_x64(False):  # JAX's default precision, whatever the sweep's: one start per seed
            return jax.tree.map(lambda a: np.asarray(a, np.float64), model.init(jax.random.PRNGKey(key)))

    def initial_loss(self, seed: int = 0, s: int = 0) -> float:
        """The training loss at seed ``s``'s start under root ``seed`` (float64, chunked); a branch's start is the
        seed's checkpoint (`otod.nets.model.branch.start_params`)."""
        from otod.nets.model.chunked import chunked_mean
        from otod.nets.model.contract import cast, chunk_of

        rng = np.random.default_rng([seed, s])
        if self.branched:
            from otod.nets.model.branch import start_params

            start = start_params(self, rng)
        else:
            start = self.initial_params(rng)
        with jax.enable_x64(True):
            model = cast(self.loaded(), jnp.float64)
            params = jax.tree.map(jnp.asarray, start)
            return float(jax.jit(chunked_mean(model.loss, chunk_of(model)))(params, *model.data))

    def describe(self) -> str:
        n = self.training_examples
        return f"{self.reference} (P = {self.parameters:,}, {n:,} examples)"

    def flops_per_example(self) -> float:
        """XLA's flop count of the loss on one example (`otod.nets.model.contract.flops_per_example`): the time
        estimates' cost of one example, as `NetSpec.flops_per_example`."""
        return _flops(self.loaded())

    def family(self):
        if self.branched:
            from otod.nets.model.branch import branch_family

            return branch_family(self, model_family(self))
        return model_family(self)


def problem_of(model, batch: int = 32, examples: int | None = None, reference: str | None = None) -> ModelProblem:
    """The `ModelProblem` of a checked contract model (`otod.nets.model.contract.check` or `load`)."""
    from otod.nets.model.contract import cast, start_loss

    with jax.enable_x64(True):
        loss = start_loss(cast(model, jnp.float64))
    reference = reference or model.name
    if not np.isfinite(loss):
        raise OtodError(f"{model.extra.get('where', reference)}: the loss at the start is {loss} over the "
                        f"{model.examples:,} examples; a sweep needs a finite loss (check the data and the start)")
    floats = sum(int(np.prod(a.shape[1:])) for a in model.data)
    return ModelProblem(reference=reference, digest=model_digest(model, reference), parameters=model.parameter_count,
                        data_examples=model.examples, example_floats=max(1, floats), start_loss=float(loss),
                        batch=int(batch), examples=examples, model=model)


def trace_work(problem: ModelProblem, sizes, batches, one: bool = False, hvp: bool = False) -> None:
    """Before the sweep: the loss and its gradient traced (`otod.nets.model.contract.trace_loss`) at every batch size the
    sweep gives it: each minibatch of ``batches``, and the chunks of the stopping metric over each training set of
    ``sizes`` (None: all); with ``one`` and ``hvp`` (the NQM's prediction), one example and the HVP too."""
    from otod.nets.model.contract import chunk_of, trace_loss, trace_sizes

    widths = set()
    for size in sizes:
        sized = problem if size == problem.examples else replace(problem, examples=None if size is None else int(size))
        widths |= set(trace_sizes(sized.training_examples, batches, chunk_of(sized.loaded()), one))
    trace_loss(problem.loaded(), tuple(sorted(widths)), hvp=hvp)


def refuse_bad_starts(problem: ModelProblem, seeds: int, seed: int) -> None:
    """One line, before the sweep, where a seed's start (``init(key)``, `ModelProblem.initial_params`) has a
    non-finite parameter or loss: every lane of that seed would stop as diverged at iteration 0. Without an
    ``init`` every seed starts at ``params``, whose loss `problem_of` checked."""
    model = problem.loaded()
    if model.init is None or problem.branched:
        return
    where = model.extra.get("where", problem.reference)
    for s in range(int(seeds)):
        start = problem.initial_params(np.random.default_rng([seed, s]))
        bad = [jax.tree_util.keystr(path) for path, leaf in jax.tree_util.tree_leaves_with_path(start)
               if not np.all(np.isfinite(leaf))]
        if bad:
            raise OtodError(f"{where}: init(key) drew seed {s}'s start with non-finite parameters in "
                            f"{', '.join(bad[:3])}; every lane of that seed would stop at iteration 0 (check init)")
        loss = problem.initial_loss(seed, s)
        if not np.isfinite(loss):
            raise OtodError(f"{where}: the loss at seed {s}'s start (init(key)) is {loss} over the "
                            f"{problem.training_examples:,} examples; a sweep needs a finite start (check init)")


def model_digest(model, reference: str) -> str:
    """SHA-256 (16 hex digits) over the start's and the data's shapes, dtypes and bytes, in order, and the bytes
    of the file ``reference`` names, where it names a file."""
    h = hashlib.sha256()
    for leaf in [*jax.tree.leaves(model.params), *model.data]:
        a = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(a.tobytes())
    h.update(str(jax.tree.structure(model.params)).encode())
    target = str(reference).rpartition(":")[0]
    if target.endswith(".py") and Path(target).is_file():
        h.update(Path(target).read_bytes())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=8)
def _reload(reference: str, digest: str):
    """The model ``reference`` names, loaded again for a problem read back from a results file."""
    from otod.nets.model.contract import load

    if reference.startswith("python:"):
        raise OtodError(f"the model {reference[7:]} was given in Python; pass it again (otod.critical_batch) to run "
                        "more of this sweep")
    model = load(reference)
    now = model_digest(model, reference)
    if now != digest:
        raise OtodError(f"--model {reference}: the model or its data changed since this sweep was run (digest {now}, "
                        f"recorded {digest}); run it afresh with another --out")
    return model


def seed_starts(problem: ModelProblem, rng: np.random.Generator) -> dict:
    """One seed's draws: the start (`ModelProblem.initial_params`) and the seed of its minibatch order."""
    params = problem.initial_params(rng)
    return {"params": params, "shuffle": np.array(float(rng.integers(0, 2 ** 24)))}


def model_family(problem: ModelProblem):
    """The core's family of a contract model (module docstring): the net family's functions with the user's loss,
    and the net sweep's lane (`otod.nets.model.family.minibatch_dynamics`)."""
    from otod.core.api import Family
    from otod.nets.model.chunked import chunked_mean
    from otod.nets.model.family import checks, minibatch, minibatch_dynamics

    n, batch = problem.training_examples, int(problem.batch)

    def arrays(dtype):
        return _cast(problem.loaded().data, dtype)

    def metric(p, params):
        model = problem.loaded()
        chunk = _chunk(problem)
        return chunked_mean(model.loss, chunk)(params, *arrays(jax.tree.leaves(params)[0].dtype))

    def gradient(p, params, step):
        idx = minibatch(p["key"], step.t, batch, n)
        data = tuple(a[idx] for a in arrays(jax.tree.leaves(params)[0].dtype))
        return jax.grad(problem.loaded().loss)(params, data)

    def batch_gradient(p, params, data):
        return jax.grad(problem.loaded().loss)(params, data)

    def make(point, drawn):
        dtype = drawn["shuffle"].dtype
        return {"params0": drawn["params"], "key": jax.random.PRNGKey(drawn["shuffle"].astype(jnp.int32)),
                "beta": point.get("beta", jnp.zeros((), dtype))}

    def info(p, params):
        return {"lipschitz": jnp.ones((), jax.tree.leaves(params)[0].dtype), "beta": p["beta"]}

    def dynamics(family, members, options, relative_lr):
        return minibatch_dynamics(batch_gradient, arrays, n, batch, family, members, options, relative_lr)

    def variants(family, specs, members, options, relative_lr, which):  # one program for every batch of ``specs``
        return minibatch_dynamics(batch_gradient, arrays, n, tuple(int(s.batch) for s in specs), family, members,
                                  options, relative_lr, which=which)

    size = problem.parameters
    return Family(draws=lambda rng: seed_starts(problem, rng), make=make, init=lambda p: p["params0"],
                  metric=metric, gradient=gradient, info=info, provides=frozenset({"lipschitz", "beta"}),
                  dynamics=dynamics, floats_per_seed=size + 1,
                  floats_per_lane=LANE_COPIES * size + batch * problem.example_floats, checks=checks,
                  compactable=False, variants=variants, variant_fields=("batch",))


def _cast(data: tuple, dtype) -> tuple:
    """The data with its float arrays in ``dtype`` (labels and other integers kept)."""
    return tuple(jnp.asarray(a, dtype) if jnp.issubdtype(a.dtype, jnp.floating) else jnp.asarray(a) for a in data)


@functools.lru_cache(maxsize=8)
def _flops(model) -> float:
    from otod.nets.model.contract import flops_per_example

    return flops_per_example(model)


def _chunk(problem: ModelProblem) -> int:
    from otod.nets.model.contract import chunk_of

    return chunk_of(problem.loaded())
