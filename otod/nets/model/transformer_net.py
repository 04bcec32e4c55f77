"""otod's transformer as a `otod.nets.model.problem.NetSpec` net (``--model transformer --data sequence``): the zoo's
decoder-only transformer (`otod.nets.model.zoo`: pre-LN blocks, causal attention, GPT-2's init) on the generated
sequence task (`otod.nets.model.sequence`), sized by the net's own options so that the joint grid's width axis is
its model width:

* ``width`` = d_model (a multiple of ``heads``), ``depth`` = the blocks, the MLP 4·d wide (GPT-2's ratio), the
  vocabulary V and T − 1 learned positions of the sequence task;
* P = 2·V·d + (T − 1)·d + depth·(12·d² + 9·d) + 2·d (`parameter_count`: zoo's count at MLP 4d,
  `otod.nets.model.zoo.parameter_count`);
* the loss: each sequence's mean next-token cross-entropy over its T − 2 scored tokens
  (`otod.nets.model.zoo.next_token_losses`), whose floor is the source's entropy rate;
* a seed's start: zoo's init from a key drawn from the seed's generator, in JAX's 32-bit mode (as a user's model's,
  `otod.nets.model.model_problem.ModelProblem.initial_params`), held in float64. The MLP's inits and architectures
  (``--init``, ``--architecture``) do not apply: the start is the transformer's own.
"""

from __future__ import annotations

import functools

import numpy as np

from otod.core.api import OtodError, lazy
from otod.nets.model import sequence, zoo

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: Attention heads where ``--heads`` is not given.
DEFAULT_HEADS = 2
#: The MLP's width over d_model (GPT-2's 4).
MLP_RATIO = 4
#: Positions the net reads: T − 1 of a sequence of T tokens.
POSITIONS = sequence.LENGTH - 1


def heads_of(spec) -> int:
    return DEFAULT_HEADS if spec.heads is None else int(spec.heads)


def check_heads(width: int, heads: int | None) -> None:
    """Refuse, in one line, ``heads`` (None: `DEFAULT_HEADS`) that is not an integer ≥ 1 or does not divide the
    d_model ``width``: arithmetic on the options, so the command runs it on every --width before it draws any
    data (the sequences of the first width took 2 CPU-s before a later width was refused)."""
    heads = DEFAULT_HEADS if heads is None else heads
    if not (isinstance(heads, (int, np.integer)) and heads >= 1):
        raise OtodError(f"--heads {heads}: need an integer ≥ 1, e.g. --heads 2")
    if width % heads:
        raise OtodError(f"--width {width}: the transformer's d_model must be a multiple of --heads {heads} "
                        f"(each head has d/heads dimensions), e.g. --width {max(heads, width - width % heads)}")


def check(spec) -> None:
    """Refuse, in one line, a transformer spec the net cannot be: a width that is not a multiple of the heads, a
    data set other than the sequence task, an MLP's loss, init or architecture."""
    check_heads(spec.width, spec.heads)
    if spec.data != "sequence":
        raise OtodError(f"--model transformer: reads token sequences; use --data sequence (not {spec.data})")
    if spec.loss != "cross-entropy":
        raise OtodError("--model transformer: predicts the next token; use --loss cross-entropy")
    if spec.init != "kaiming" or spec.architecture != "plain":
        raise OtodError("--init, --architecture: the MLP's; the transformer has its own init (GPT-2's) and residual "
                        "blocks; drop them")


def parameter_count(width: int, depth: int) -> int:
    """P of the transformer at d = ``width`` and ``depth`` blocks (module docstring)."""
    return zoo.parameter_count(d=int(width), layers=int(depth), mlp=MLP_RATIO * int(width), length=POSITIONS,
                               vocabulary=sequence.VOCABULARY)


@functools.lru_cache(maxsize=32)
def _init(width: int, heads: int, depth: int):
    return jax.jit(functools.partial(zoo.init_transformer, vocabulary=sequence.VOCABULARY, d=width, heads=heads,
                                     layers=depth, mlp=MLP_RATIO * width, length=POSITIONS))


def initial_params(spec, rng: np.random.Generator) -> dict:
    """One seed's start (module docstring), float64 NumPy arrays."""
    key = int(rng.integers(0, 2 ** 31 - 1))
    with jax.enable_x64(False):
        params = _init(int(spec.width), heads_of(spec), int(spec.depth))(jax.random.PRNGKey(key))
        return jax.tree.map(lambda a: np.asarray(a, np.float64), params)


def example_losses(spec, params, x, y):
    """Each sequence's mean next-token cross-entropy [n] (x [n, T − 1] tokens, y [n, T − 2] labels)."""
    return zoo.next_token_losses(params, x, y, heads_of(spec))


def outputs_of(spec, params, x):
    """The logits [n, T − 1, V] at every position of the inputs."""
    return zoo.logits(params, x.astype(jnp.int32), heads_of(spec))


def activation_floats(spec) -> int:
    """The floats one sequence's forward pass holds (`otod.nets.model.zoo.activation_floats`: T·d per block and
    layer output, the attention's T² per head)."""
    return zoo.activation_floats(sequence.VOCABULARY, POSITIONS, int(spec.width), heads_of(spec), int(spec.depth),
                                 MLP_RATIO * int(spec.width))


def flops_per_example(spec) -> float:
    """Forward multiply-adds × 2 of one sequence: per position and block the q, k, v, o projections (4d²) and the
    MLP (2·d·4d), the attention's scores and weighted sum (2·T·d, every position against all T before masking),
    and the unembedding (d·V)."""
    d, t, layers = int(spec.width), POSITIONS, int(spec.depth)
    per_position = layers * (4 * d * d + 2 * d * MLP_RATIO * d + 2 * t * d) + d * sequence.VOCABULARY
    return 2.0 * t * per_position


#: Seconds to compile one sweep program of the transformer on a CPU (`otod.core.family.Family.compile_seconds`),
#: one program per cell for all its batch sizes (`otod.core.variants`), compiled once for each of the 2 CPU
#: devices: a grid of 4 cells (d 8 and 16, D 256 and 1,024, B 8 and 32, depth 1, 9 lanes) compiled 8 times in
#: 254.6 s, 64 s a cell, on the 2 shared cores at load 6–7 (persistent cache off), against the planner's 1 s.
#: Not scaled with depth: the vmapped step and check alone compiled in 5.5, 7.7 and 5.0 s at depth 1, 2 and 4
#: (d 16, B 32, load 7): the engine's loop, not the blocks, dominates.
COMPILE_SECONDS = 64.0


def nonembedding_parameters(spec) -> int:
    """P less the token and position embeddings, (V + T − 1)·d: the parameters a token's forward pass multiplies
    by (the lookups cost no multiply-adds; the unembedding, d·V, does)."""
    return int(spec.parameter_count) - (sequence.VOCABULARY + POSITIONS) * int(spec.width)


def forward_flops(spec, sequences: int) -> float:
    """The forward pass of ``sequences`` sequences: 2·P_nonembed FLOPs per token (one multiply-add per parameter)
    and the attention's 4·T·d per token and block (scores q·k and the weighted sum of v, 2·T·d each, over all T
    positions: the causal mask is applied, not skipped), T = `POSITIONS` (Kaplan et al. 2020, table 1)."""
    d, t, layers = int(spec.width), POSITIONS, int(spec.depth)
    return float(sequences) * t * (2.0 * nonembedding_parameters(spec) + 4.0 * layers * t * d)


def step_flops(spec, batch: int) -> float:
    """FLOPs of one SGD step at batch B: forward and backward, 3× the forward (the backward costs two forward
    passes' products), ≈ 6·P_nonembed·B·T + 12·L·B·T²·d (`forward_flops`)."""
    return 3.0 * forward_flops(spec, int(batch))


def check_flops(spec) -> float:
    """FLOPs of one read of the metric: the forward pass of the `sequence.HELD_OUT` held-out sequences, ≈
    2·P_nonembed·N·T + 4·L·N·T²·d (every step up to t = 64, `otod.nets.model.family.checks`, then 32 times per
    doubling of t; 10× a B = 8 step's FLOPs at d = 8)."""
    return forward_flops(spec, sequence.HELD_OUT)
