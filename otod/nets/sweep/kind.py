"""The ``net`` sweep as the core sees it: steps to a training-loss target of a real net, against batch size, width
(parameter count) and depth, with (lr, β) tuned per point as the noise obstacle tunes them.

Axes: ``batch``, ``width``, ``depth`` and ``examples`` (the training set's size D: nested subsets of one set,
`otod.nets.model.data`) are static (a minibatch's size and the weights' shapes are shapes: one
compiled program per value; a traced B would pad every minibatch to the largest, and a B = 1024 step costs 33× a
B = 8 step on the default net: 364 against 11 µs, `benchmarks/roofline.py`), except that the batch sizes of one
net share one program (`otod.core.variants`: each B's minibatch gradient a branch of ``lax.switch``); ``init`` and ``architecture`` are coded traced axes (every start is drawn, a lane
picks one); ``beta`` (heavy-ball's momentum) is traced. The first axis the sweep varies is the x of its fits and
figures: batch (S(B) and the critical batch), else width, else depth (iterations vs depth, plain vs residual).

Methods are the noise obstacle's (sgd, heavy-ball, adam: `otod.core.stochastic`), its dynamics and schedules, and
its ``ignores`` rule (sgd and adam run at the first β only). The lr grid holds absolute steps (the family's
reference step is 1; adam's is 1e-2): a net's sharpness moves during training, so no fixed stability limit
bounds the grid; it spans 10⁻³ to 10 (4 per decade), lanes above the stable range diverge and are recorded so,
and a choice on the grid's edge is flagged.

The rate is bracketed only when asked (`BRACKET`): ``otod sweep net --lr-extend N`` runs, where a point's chosen lr
is on an end of the grid, up to N steps beyond it at the end's own ratio (`otod.core.bracket`), until the choice is
inside the rates tried or the next larger rate diverges. Without it every net caller of the pipeline passes 0 steps
(the command, `otod.nets.batch_api`, --branch-at and --batch-schedule, which refuse --lr-extend), so the grid is
tried as given and every existing results file reads back unchanged; the figures read theirs back through
`otod.core.sweep.run_sweep`, which no stage follows. A bracket's sub-sweeps carry the config's problem, so a
``--regime`` grid's lanes beyond the grid stop at their cell's held-out target, from the reference runs made once.
β is not bracketed (heavy-ball's --beta list is tried as given): the kind's β ladder would run by default, not on
request.
"""

from __future__ import annotations

import dataclasses

from otod.core.api import Axis, Bracketing, OtodError, SweepKind
from otod.nets.model import models
from otod.nets.model.model_problem import ModelProblem
from otod.nets.model.problem import NetSpec
from otod.core.api import BETA, METHODS as NOISE_METHODS, NoiseOptions, ignores

BATCH = Axis("batch", "B", "batch size B", "--batch", traced=False, minimum=1, integer=True, what="batch sizes B",
             example="8..1024:8:log")
WIDTH = Axis("width", "n", "width n", "--width", traced=False, minimum=1, integer=True, what="widths",
             example="8..256:6:log")
DEPTH = Axis("depth", "L", "depth L (weight layers)", "--depth", traced=False, minimum=1, integer=True,
             what="depths", example="2..12:6")
EXAMPLES = Axis("examples", "D", "training examples D", "--examples", traced=False, minimum=1, integer=True,
                what="training-set sizes", example="256,512,1024")
INIT = Axis("init", "init", "initialization", "--init", traced=True, labels=models.INITS, what="inits",
            example="kaiming,orthogonal")
ARCHITECTURE = Axis("architecture", "arch", "architecture", "--architecture", traced=True,
                    labels=models.ARCHITECTURES, what="architectures", example="plain,residual")

#: The methods a net sweep offers: the noise obstacle's, less those that need a quadratic's curvature or average.
METHODS = {name: NOISE_METHODS[name] for name in ("sgd", "heavy-ball", "adam")}
#: The methods that read β (heavy-ball's momentum): the others run at the β axis's first value only.
USES_BETA = ("heavy-ball",)

#: The automatic cap: a net's count has no closed form to scale it by.
AUTO_MAX_ITERS = 20_000

#: The default lr grid: absolute steps 10^(k/4), k = −12..4 (10⁻³ to 10), multipliers of adam's 1e-2.
DEFAULT_LR_GRID = tuple(float(10 ** (k / 4)) for k in range(-12, 5))


def max_iters(config) -> int:
    return AUTO_MAX_ITERS


def _nets(config) -> list:
    """One spec per net and data set of the sweep: the batch changes neither the start's loss nor the net's size."""
    nets = {}
    for spec in config.specs():
        nets.setdefault(tuple((f.name, getattr(spec, f.name)) for f in dataclasses.fields(spec)
                              if f.compare and f.name != "batch"), spec)
    return list(nets.values())


def validate_stored(config) -> None:
    """The checks a net config read back from a results file gets (`otod.core.registry.SweepKind.validate_stored`):
    an absolute target and each net's size (`NetSpec.check_buildable`: arithmetic on the shapes), besides the
    spec's own (`NetSpec.__post_init__`). Not the target against each net's start loss (`validate`): that draws
    every start and evaluates the loss, one compiled program per net (0.4 s each; a branch's reference run to its
    checkpoint), and the run that wrote the file passed it with the same config; tests/test_claims.py's re-read of
    the committed results spent about 17 of its 50 CPU-s there."""
    if config.target.kind != "absolute":
        raise OtodError("net sweeps stop at an absolute training loss (--target), not a relative gap")
    for spec in _nets(config):
        if spec.kind != "model":
            spec.check_buildable(orthogonal=True)  # a seed's draws hold every init's start, the orthogonal one too


def validate(config) -> None:
    """`validate_stored`'s checks, and the target below each net's initial loss at seed ``config.seed``'s first
    start (`NetSpec.initial_loss`; a user's model: its start loss measured when it was loaded)."""
    validate_stored(config)
    for spec in _nets(config):
        if spec.kind == "model":  # a user's model: its start loss was measured when it was loaded
            start, named, what = spec.start_loss, spec.reference, "training"
            if spec.branched:  # the checkpoint's loss (`otod.nets.model.branch`)
                start, named = spec.initial_loss(config.seed), f"{named}, checkpoint at step {spec.branch_step}"
        else:
            start, named = spec.initial_loss(config.seed), f"{spec.model} width {spec.width} depth {spec.depth}"
            named += f", checkpoint at step {spec.branch_step}" if spec.branched else ""
            what = "held-out" if spec.stream else "training"
        if config.target.tol >= start:
            raise OtodError(f"--target {config.target.tol:g}: must lie below the initial {what} loss {start:.4g} "
                            f"(seed 0, {named}), e.g. --target {start / 20:.2g}")


def record_fields(config, mode: str = "simulate", point: dict | None = None) -> dict:
    """Every net record carries its batch B, β, schedule, path, its net's parameter count (as ``dim`` too, so the
    noise obstacle's analysis panels a batch sweep by it), width, depth and training examples D."""
    fields = {"schedule": config.options.schedule, "mode": mode}
    if point is None:
        return fields
    spec = config.spec_at({k: v for k, v in point.items() if k in ("batch", "width", "depth", "examples")})
    branch = {} if not spec.branched else {  # the checkpoint this lane starts from (`otod.nets.model.branch`)
        "checkpoint": float(spec.branch_step), "checkpoint_batch": float(spec.branch_batch),
        "checkpoint_lr": float(spec.branch_lr)}
    if spec.kind == "model":
        return {"batch": float(spec.batch), "examples": float(spec.training_examples), **branch,
                "dim": float(spec.parameter_count), "parameters": float(spec.parameter_count),
                "beta": float(point.get("beta", 0.0)), **fields}
    data = {} if spec.stream else {"examples": float(spec.dataset().examples)}  # a stream has no training set
    if spec.held_out_targets is not None:  # --regime: D is the reference's examples seen, the target its loss
        data.update(examples=float(spec.examples), held_out_target=float(spec.held_out_target))
    data.update(branch)
    return {"batch": float(spec.batch), "width": float(spec.width), "depth": float(spec.depth), **data,
            "dim": float(spec.parameter_count), "parameters": float(spec.parameter_count),
            "beta": float(point.get("beta", 0.0)), **fields}


#: The net sweep's bracket stage: the rate only, with the steps ``--lr-extend`` gives (the command passes 0 when it
#: is not given); β as listed.
BRACKET = Bracketing(lr=True)

NET = SweepKind(name="net", axes=(BATCH, WIDTH, DEPTH, EXAMPLES, INIT, ARCHITECTURE, BETA), methods=METHODS,
                problems={"net": NetSpec, "model": ModelProblem}, options=NoiseOptions, max_iters=max_iters,
                x64=lambda config: False,
                validate=validate, validate_stored=validate_stored, record_fields=record_fields, ignores=ignores, bracket=BRACKET,
                smaller="fewer --batch, --width or --depth values, a smaller net (--width, --depth, --examples), or "
                        "fewer --seeds")
