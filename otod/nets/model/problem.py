"""A net on a data set as one frozen spec: `NetSpec`, the problem every part of the nets obstacle reads (the
sweep's family, curvature, gradient noise, the NQM bridge).

The spec is flat (every field a number or a name), so that the core's static axes (``width``, ``depth``,
``batch``) replace its fields by name and a results file rebuilds it from its stored config. ``init`` and
``architecture`` are the defaults of the sweep's coded traced axes of the same names.

Pure functions of it: `NetSpec.dataset` (the arrays), `NetSpec.initial_params` (one seed's start, drawn in NumPy
from ``default_rng([seed, s])`` as the engine draws), `NetSpec.mean_loss` (the mean training loss, the target's
metric), `NetSpec.example_loss` (one example's loss, for per-example gradients) and `NetSpec.family` (the core's
contract, `otod.nets.model.family`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace

import numpy as np

from otod.core.api import OtodError, lazy
from otod.nets.model import data as data_sets
from otod.nets.model import models, size

jax = lazy("jax")
jnp = lazy("jax.numpy")


#: `NetSpec.start_loss` by (`NetSpec.start_key`, seed, s): a float each, at most 256 kept.
_START_LOSSES: dict = {}


@dataclass(frozen=True)
class NetSpec:
    """A model (``model``, ``width``, ``depth`` weight layers, ``activation``, ``architecture``, ``init``; the
    transformer's ``width`` is d_model, its ``depth`` its blocks and ``heads`` its attention heads,
    `otod.nets.model.transformer_net`), a data
    set (``data``, ``examples``, the synthetic sets' ``inputs``, ``outputs``, ``teacher_width``, ``label_noise``,
    ``holdout``, ``data_seed``), a ``loss`` and the minibatch size ``batch`` of the sweep's stochastic gradient;
    ``stream``: train on fresh examples every step instead of a finite set (teacher and gaussian only)."""

    model: str = "mlp"
    width: int = 32
    depth: int = 2
    activation: str = "relu"
    architecture: str = "plain"
    init: str = "kaiming"
    data: str = "digits"
    examples: int | None = None
    inputs: int = 16
    outputs: int = 1
    teacher_width: int = 32
    label_noise: float = 0.1
    holdout: float = 0.2
    data_seed: int = 0
    loss: str = "cross-entropy"
    batch: int = 32
    #: The stream regime: fresh teacher examples every step (`otod.nets.model.data.stream_batch`), the metric the loss on
    #: a fixed held-out set (`otod.nets.model.data.stream_held_out`); the training set is not used. None (not False)
    #: where off: a spec field at None is left out of the config's digest, so every finite-data sweep keeps the
    #: results file name it had before the stream existed.
    stream: bool | None = None
    #: A branch (`otod.nets.model.branch`): every seed starts from its checkpoint after ``branch_step`` steps of plain
    #: SGD at batch ``branch_batch`` and step ``branch_lr`` from that seed's own start (the reference run); None
    #: (all three): the start itself. None fields are left out of the config's digest, as ``stream``'s.
    branch_step: int | None = None
    branch_batch: int | None = None
    branch_lr: float | None = None
    #: A phase of a batch schedule (`otod.nets.model.schedule_start`): every seed starts where the schedule's earlier
    #: phases left it (their batches, chosen (lr, β) and per-seed step counts, as text); None: the start itself.
    schedule_start: str | None = None
    #: A held-out target per cell (`otod.nets.model.reference`, ``--regime``): "D:width:loss:lr" entries joined by
    #: ";", each the held-out loss a reference run of the net at that width (batch ``reference_batch``, its best
    #: lr) reaches after D examples (Zhang et al. 2024's construction). Where set, the target's metric is the
    #: held-out loss over the cell's own target (`metric_scale`): a lane stops at 1, when it reaches the reference's
    #: loss. None (both): the metric is the training loss (the held-out loss with ``stream``), as before.
    held_out_targets: str | None = None
    reference_batch: int | None = None
    #: The transformer's attention heads (`otod.nets.model.transformer_net`; None: its default, 2, and the only
    #: value for the other nets, so their digests do not change).
    heads: int | None = None

    def __post_init__(self):
        checks = [(self.model, models.MODELS, "--model", "mlp"),
                  (self.activation, models.ACTIVATIONS, "--activation", "relu"),
                  (self.architecture, models.ARCHITECTURES, "--architecture", "residual"),
                  (self.init, models.INITS, "--init", "kaiming"), (self.data, data_sets.DATASETS, "--data", "digits"),
                  (self.loss, models.LOSSES, "--loss", "squared")]
        if self.model not in models.MODELS and any(c in str(self.model) for c in "./\\"):
            raise OtodError(f"--model {self.model}: a model of your own needs ':NAME', the function in it that returns "
                            f"(loss, params, data[, init]), e.g. --model {self.model}:problem (docs/models.md); or "
                            f"one of otod's nets: {', '.join(models.MODELS)}")
        for value, known, option, example in checks:
            if value not in known:
                raise OtodError(f"{option} {value}: unknown; choose from {', '.join(known)}, e.g. {option} {example}")
        for value, option, example in ((self.width, "--width", "32"), (self.depth, "--depth", "2"),
                                       (self.batch, "--batch", "32")):
            if not (isinstance(value, (int, np.integer)) and value >= 1):
                raise OtodError(f"{option} {value}: need an integer ≥ 1, e.g. {option} {example}")
        if self.model == "cnn" and self.data != "digits":
            raise OtodError(f"--model cnn: needs image data; use --data digits (not {self.data})")
        if self.data in ("teacher", "gaussian") and self.loss == "cross-entropy":
            raise OtodError(f"--data {self.data}: a regression; use --loss squared")
        if self.model == "transformer" or self.data == "sequence":
            if self.model != "transformer":
                raise OtodError(f"--data sequence: token sequences for the transformer; use --model transformer "
                                f"(not {self.model})")
            from otod.nets.model.transformer_net import check

            check(self)
        elif self.heads is not None:
            raise OtodError(f"--heads {self.heads}: the transformer's attention heads; --model {self.model} has none, "
                            "drop --heads")
        if self.model == "cnn" and self.depth < 2:
            raise OtodError("--model cnn: needs --depth ≥ 2 (at least one convolution before the dense layer)")
        self.check_buildable(orthogonal=self.init == "orthogonal")
        ds = self.dataset()
        if self.stream and self.data == "digits":
            raise OtodError("--stream: draws fresh examples from a teacher; use --data teacher or --data gaussian")
        if self.batch > ds.examples and not self.stream:
            raise OtodError(f"--batch {self.batch}: larger than the data set ({ds.examples} training examples); "
                            f"use --batch ≤ {ds.examples}")
        if self.branched or self.branch_batch is not None or self.branch_lr is not None:
            from otod.nets.model.branch import check_branch

            check_branch(self, ds.examples)
        if self.schedule_start is not None:
            from otod.nets.model.schedule_start import decode

            decode(self.schedule_start)
            if self.branched or self.stream:
                raise OtodError("a batch schedule's phase starts from its earlier phases, not from a checkpoint "
                                "or a stream; drop --branch-at and --stream")

    def check_buildable(self, orthogonal: bool) -> size.Footprint:
        """Refuse, before anything is drawn, a net whose data set and one start do not fit in memory, or deeper
        than `otod.nets.model.size.MAX_DEPTH` (`otod.nets.model.size.check_buildable`); ``orthogonal``: an orthogonal start's
        QR is drawn too."""
        return size.check_buildable(self.model, self.data, self.width, self.depth, self.examples, self.inputs,
                                    self.outputs, float(self.holdout), orthogonal)

    @property
    def kind(self) -> str:
        return "net"

    @property
    def branched(self) -> bool:
        """Whether every seed starts from a checkpoint of its reference run (`otod.nets.model.branch`)."""
        return self.branch_step is not None

    def program_form(self) -> NetSpec:
        """The spec without the fields that set only where its seeds start (the branch's checkpoint, the schedule's
        earlier phases): they replace the family's draws and nothing of its program, so the program this form
        keys serves every start (`otod.core.variants.program_form`)."""
        if not self.branched and self.branch_batch is None and self.branch_lr is None and self.schedule_start is None:
            return self
        return replace(self, branch_step=None, branch_batch=None, branch_lr=None, schedule_start=None)

    def dataset(self) -> data_sets.Dataset:
        return data_sets.load(self.data, self.examples, self.inputs, self.outputs, self.teacher_width,
                              float(self.label_noise), float(self.holdout), int(self.data_seed))

    def shapes(self) -> list[tuple[int, ...]]:
        """The MLP's or CNN's weight shapes (`otod.nets.model.models.layer_shapes`); the transformer has none."""
        if self.model == "transformer":
            raise OtodError("--model transformer: this measurement reads an MLP's or CNN's layers; use --model mlp "
                            "or cnn")
        ds = self.dataset()
        return models.layer_shapes(self.model, ds.features, ds.outputs, self.width, self.depth, ds.image)

    @property
    def parameter_count(self) -> int:
        if self.model == "transformer":
            from otod.nets.model.transformer_net import parameter_count

            return parameter_count(self.width, self.depth)
        return models.parameter_count(self.shapes())

    def initial_params(self, rng: np.random.Generator, init: str | None = None,
                       architecture: str | None = None) -> tuple:
        """One start, in NumPy (float64); ``init``/``architecture`` default to the spec's (the transformer's start
        is its own, `otod.nets.model.transformer_net.initial_params`)."""
        if self.model == "transformer":
            from otod.nets.model.transformer_net import initial_params

            return initial_params(self, rng)
        return models.init_params(rng, self.shapes(), init or self.init, self.activation,
                                  (architecture or self.architecture) == "residual")

    def residual(self, architecture: str | None = None) -> float:
        return 1.0 if (architecture or self.architecture) == "residual" else 0.0

    def outputs_of(self, params, x, residual=None):
        if self.model == "transformer":
            from otod.nets.model.transformer_net import outputs_of

            return outputs_of(self, params, x)
        r = self.residual() if residual is None else residual
        return models.apply(self.model, self.activation, params, x, r, self.dataset().image)

    def example_losses(self, params, x, y, residual=None):
        if self.model == "transformer":  # a sequence's mean next-token cross-entropy
            from otod.nets.model.transformer_net import example_losses

            return example_losses(self, params, x, y)
        return models.example_losses(self.loss, self.outputs_of(params, x, residual), y, self.dataset().classes)

    def mean_loss(self, params, x, y, residual=None):
        """The mean loss over the examples (x, y): with the whole training set, the target's metric."""
        return jnp.mean(self.example_losses(params, x, y, residual))

    def example_loss(self, params, x, y, residual=None):
        """One example's loss (x [features], y a label or [outputs]): vmap its gradient for per-example
        gradients."""
        return self.example_losses(params, x[None], y[None], residual)[0]

    def held_out_accuracy(self, params) -> float | None:
        """The fraction of the held-out examples classified right (None for a regression or with no held-out
        examples; the sequence task: None): reported beside the training loss, never a target."""
        ds = self.dataset()
        if self.data == "sequence" or not ds.classes or not len(ds.y_test):
            return None
        dtype = jax.tree.leaves(params)[0].dtype
        out = self.outputs_of(params, jnp.asarray(ds.x_test, dtype))
        return float(models.accuracy(out, jnp.asarray(ds.y_test)))

    def training_arrays(self, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
        ds = self.dataset()
        y = ds.y_train.astype(np.int32) if ds.classes else ds.y_train.astype(dtype)
        return ds.x_train.astype(dtype), y

    def metric_arrays(self, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
        """The examples whose mean loss is the target's metric: the training set, or in the stream regime or with a
        held-out target (``held_out_targets``) the fixed held-out set (`held_out_arrays`)."""
        if not self.stream and self.held_out_targets is None:
            return self.training_arrays(dtype)
        return self.held_out_arrays(dtype)

    def held_out_arrays(self, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
        """The fixed held-out set, the same for every training-set size and seed: the teacher's and gaussian's
        `otod.nets.model.data.STREAM_HELD_OUT` examples from their own stream (`otod.nets.model.data.stream_held_out`),
        the digits' last ``holdout`` images, the sequence task's `otod.nets.model.sequence.HELD_OUT` sequences."""
        if self.data in ("digits", "sequence"):
            ds = self.dataset()
            return ds.x_test.astype(dtype), ds.y_test.astype(np.int32)
        x, y = data_sets.stream_held_out(self.data, self.inputs, self.outputs, self.teacher_width,
                                         float(self.label_noise), int(self.data_seed))
        return x.astype(dtype), y.astype(dtype)

    @property
    def held_out_target(self) -> float | None:
        """This cell's held-out target loss (its ``examples`` and ``width`` in ``held_out_targets``), or None."""
        if self.held_out_targets is None:
            return None
        from otod.nets.model.reference import target_of

        return target_of(self.held_out_targets, self.examples, self.width)[0]

    @property
    def metric_scale(self) -> float:
        """What the target's metric multiplies the mean loss by: 1/`held_out_target` with a held-out target (so
        the sweep's one target, 1, is every cell's own), else 1."""
        target = self.held_out_target
        return 1.0 if target is None else 1.0 / target

    def initial_loss(self, seed: int = 0, s: int = 0) -> float:
        """The target's metric (`metric_arrays`) at seed ``s``'s start as the engine draws it (float64): the
        `start_loss` times `metric_scale`. The start loss is computed once per `start_key`, seed and s in a
        process: a regime grid's check of its target (`otod.nets.sweep.kind.validate`) evaluated every cell's
        start, the same net and held-out set at each D (the transformer's: 2 s a cell on a loaded 2-core machine)."""
        key = (self.start_key(), int(seed), int(s))
        if key not in _START_LOSSES:
            if len(_START_LOSSES) >= 256:
                _START_LOSSES.clear()
            _START_LOSSES[key] = self.start_loss(seed, s)
        return _START_LOSSES[key] * self.metric_scale

    def start_key(self) -> tuple:
        """What `start_loss` reads: every field but the batch, and where the metric is the fixed held-out set
        (stream, or a held-out target) and the start the seed's own draw (no branch or schedule phase, which train
        on the training set first), not D or the held-out targets either: a grid's cells at one width share it."""
        unread = {"batch"}
        if (self.stream or self.held_out_targets is not None) and not self.branched and self.schedule_start is None:
            unread |= {"examples", "held_out_targets", "reference_batch"}
        return tuple((f.name, getattr(self, f.name)) for f in dataclasses.fields(self)
                     if f.compare and f.name not in unread)

    def start_loss(self, seed: int = 0, s: int = 0) -> float:
        """The mean loss over `metric_arrays` at seed ``s``'s start as the engine draws it (float64), unscaled; a
        branch's start is the seed's checkpoint (`otod.nets.model.branch.start_params`), a schedule's phase's where
        the phases before it left the seed (`otod.nets.model.schedule_start`)."""
        import jax

        rng = np.random.default_rng([seed, s])
        if self.branched:
            from otod.nets.model.branch import start_params

            start = start_params(self, rng)
        elif self.schedule_start is not None:
            from otod.nets.model.schedule_start import start_params as scheduled

            start = scheduled(self, rng)
        else:  # the engine's start (`otod.nets.model.family.seed_starts`), not ``initial_params`` drawn from rng directly
            from otod.nets.model.family import seed_starts, start_of

            start = start_of(self, seed_starts(self, rng))
        with jax.enable_x64(True):
            params = jax.tree.map(jnp.asarray, start)
            x, y = self.metric_arrays(np.float64)
            return float(self.mean_loss(params, jnp.asarray(x), jnp.asarray(y)))

    def flops_per_example(self) -> float:
        """Forward multiply-adds × 2 per example (dense and convolution layers; activations and the loss not
        counted): the analytic count beside XLA's (the transformer's: `otod.nets.model.transformer_net`)."""
        if self.model == "transformer":
            from otod.nets.model.transformer_net import flops_per_example

            return flops_per_example(self)
        ds = self.dataset()
        total = 0
        for s in self.shapes():
            if len(s) == 4:
                total += 2 * math.prod(s) * math.prod(ds.image)
            else:
                total += 2 * s[0] * s[1]
        return float(total)

    def family(self):
        from otod.nets.model.family import net_family

        if self.branched:
            from otod.nets.model.branch import branch_family

            return branch_family(self, net_family(self))
        if self.schedule_start is not None:
            from otod.nets.model.schedule_start import schedule_family

            return schedule_family(self, net_family(self))
        return net_family(self)
