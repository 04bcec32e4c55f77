"""A net's size and what building it costs, in closed form from its options, before anything is drawn or allocated.

`NetSpec` (`otod.nets.model.problem`) checks `check_buildable` first thing, so ``--width 1e9``, ``--depth 1e9`` or
``--examples 1e9`` end in one line naming the option instead of NumPy's MemoryError or an out-of-memory kill:
building the spec itself loads or draws the data set, and every command then draws a start. Each command adds its
own estimate of the rest (the sweep's lanes, the curvature's Lanczos bases, the noise scale's per-example
gradients).

The counts mirror `otod.nets.model.data.load` and `otod.nets.model.models.layer_shapes` without building either: the data
set's shape and the parameter count P as sums over the layers, so a depth of 10⁹ costs nothing to count.
"""

from __future__ import annotations

from typing import NamedTuple

from otod.core.api import OtodError
from otod.nets.model import data as data_sets

#: The deepest net any command builds: every layer is a separate operation of the compiled program (the layers are
#: unrolled, so compile time grows with depth), and the depth obstacle's deep linear nets stop at the same 1000.
MAX_DEPTH = 1000
#: Seconds per floating-point operation of the host's NumPy draws (the orthogonal init's QR, LAPACK): 1.0-1.3·10⁻¹⁰
#: measured for n = 1000-2000 on the 2-core development machine when quiet (8-12 GFLOP/s), several times that under
#: load; counted at 2·10⁻¹⁰.
SECONDS_PER_DRAW_FLOP = 2e-10
#: Bytes of a float64, the precision every start and data set is drawn in.
FLOAT64 = 8


class DataShape(NamedTuple):
    """The training and held-out example counts, the features and outputs per example, and the image shape."""

    train: int
    test: int
    features: int
    outputs: int
    image: tuple[int, int] | None

    @property
    def floats(self) -> int:
        """Floats of the drawn arrays: inputs and targets of every example."""
        return (self.train + self.test) * (self.features + self.outputs)


def data_shape(name: str, examples: int | None, inputs: int, outputs: int, holdout: float) -> DataShape:
    """The shape of `otod.nets.model.data.load`'s data set, counted: digits keep 1,797 − holdout images for training, the
    synthetic sets draw ``examples`` (default 1,024) and a held-out set of a fixed size
    (`otod.nets.model.data.held_out_size`)."""
    if name == "digits":
        train = data_sets.split(data_sets.DIGITS_EXAMPLES, holdout)
        used = train if examples is None else min(int(examples), train)
        return DataShape(used, data_sets.DIGITS_EXAMPLES - train, data_sets.DIGITS_PIXELS, data_sets.DIGITS_CLASSES,
                         (8, 8))
    train = data_sets.DEFAULT_EXAMPLES if examples is None else int(examples)
    if name == "sequence":  # the net reads T − 1 tokens and is scored on T − 2 (`otod.nets.model.sequence`)
        from otod.nets.model import sequence

        return DataShape(train, sequence.HELD_OUT, sequence.LENGTH - 1, sequence.LENGTH - 2, None)
    test = data_sets.held_out_size(holdout) if 0 <= holdout < 1 else 0
    return DataShape(train, test, int(inputs), int(outputs), None)


def layer_sizes(model: str, shape: DataShape, width: int, depth: int) -> tuple[int, float, int]:
    """(P, Σ n³ and the largest n over the layers, n = max(fan_in, fan_out) the side of the square an orthogonal
    init factors), summed over the layers of `otod.nets.model.models.layer_shapes` without listing them."""
    f, o, w = shape.features, shape.outputs, width
    if model == "transformer":  # no orthogonal init: nothing factored
        from otod.nets.model.transformer_net import parameter_count

        return parameter_count(width, depth), 0.0, 0
    if model == "mlp":
        if depth == 1:
            return f * o + o, float(max(f, o)) ** 3, max(f, o)
        ends = [(f * w + w, max(f, w)), (w * o + o, max(w, o))]
        middle = depth - 2
        cubes = sum(float(n) ** 3 for _, n in ends) + middle * float(w) ** 3
        return sum(p for p, _ in ends) + middle * (w * w + w), cubes, max([n for _, n in ends] + [w])
    height, across = shape.image or (8, 8)
    pooled = (height // 2) * (across // 2) * w
    middle = depth - 2
    sides = [(9 * w + w, max(9, w)), (pooled * o + o, max(pooled, o))]
    cubes = sum(float(n) ** 3 for _, n in sides) + middle * float(9 * w) ** 3
    return sum(p for p, _ in sides) + middle * (9 * w * w + w), cubes, max([n for _, n in sides] + [9 * w])


class Footprint(NamedTuple):
    """What building a net costs: its parameter count, the bytes of its data set and of one start (float64), the
    transient bytes of an orthogonal draw's QR, and the host operations of one start's draw per init."""

    parameters: int
    data_bytes: float
    start_bytes: float
    qr_bytes: float
    qr_flops: float


def footprint(model: str, data: str, width: int, depth: int, examples: int | None = None, inputs: int = 16,
              outputs: int = 1, holdout: float = 0.2) -> Footprint:
    """`Footprint` of a net from its options (the fields of `NetSpec`). The orthogonal init factors, per layer, a
    Gaussian square of side max(fan_in, fan_out) (`otod.nets.model.models._orthogonal`): 3 such squares at once (the
    draw, Q and R) and (4/3)·n³ operations each."""
    shape = data_shape(data, examples, inputs, outputs, holdout)
    parameters, cubes, side = layer_sizes(model, shape, int(width), int(depth))
    return Footprint(parameters, FLOAT64 * 4.0 * shape.floats, FLOAT64 * 2.0 * parameters,
                     FLOAT64 * 3.0 * float(side) ** 2, 4.0 / 3.0 * cubes)


def describe_options(model: str, data: str, width: int, depth: int, examples: int | None) -> str:
    """The options that size a net, as typed on the command line."""
    text = f"--model {model} --width {width} --depth {depth} --data {data}"
    return text + (f" --examples {examples}" if examples is not None else "")


def check_buildable(model: str, data: str, width: int, depth: int, examples: int | None = None, inputs: int = 16,
                    outputs: int = 1, holdout: float = 0.2, orthogonal: bool = False,
                    available: int | None = None) -> Footprint:
    """Refuse, in one line naming the options, a net deeper than `MAX_DEPTH` or one whose data set and one start
    (with an orthogonal init's QR where ``orthogonal``) do not fit in the sweeps' share of the free host memory;
    nothing is drawn. Returns the footprint."""
    if depth > MAX_DEPTH:
        raise OtodError(f"--depth {depth}: at most {MAX_DEPTH} layers (each is a separate operation of the compiled "
                        f"program, so compile time grows with depth), e.g. --depth 12")
    size = footprint(model, data, width, depth, examples, inputs, outputs, holdout)
    need = size.data_bytes + size.start_bytes + (size.qr_bytes if orthogonal else 0.0)
    biggest = "--examples" if size.data_bytes > size.start_bytes + size.qr_bytes else "--width or --depth"
    from otod.core.api import refuse_memory

    refuse_memory(need, f"{describe_options(model, data, width, depth, examples)} (P = {size.parameters:.3g} "
                        f"parameters, {(data_shape(data, examples, inputs, outputs, holdout).train):,} training "
                        "examples)", f"use a smaller {biggest}", available)
    return size
