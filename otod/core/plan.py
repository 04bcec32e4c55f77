"""Planning a sweep before it runs: predicted iterations and costs per point, the chunks in run order, the
estimate of memory and time that refuses what cannot fit or would take more than an hour, the shares of a
distributed run, and which chunk a free device takes next."""

from __future__ import annotations

import hashlib
import math
from typing import NamedTuple

import numpy as np

from otod.core.config import SweepConfig, method_points
from otod.core.device_costs import CPU, TripCosts, default_platform, trip_costs
from otod.core.errors import OtodError
from otod.core.line_fit import fit_line
from otod.core.methods import programs


#: A program's blocks are compacted (`compacted_programs`) when its chunks are predicted to run at least this many
#: lane-iterations: at the 1–10 µs a depth or toy lane-iteration costs on the development machine, 5–50 s of
#: work, against the 0.8 s of compile time the compacting loop added to a depth program (measured: 2 programs,
#: 1.9 s → 3.5 s). Below it (`otod sweep depth --depth 4,8 --init xavier`, 2.1·10⁶ a program) compaction saved 3%
#: of the lane-iterations, less than it cost to compile.
COMPACT_LANE_ITERATIONS = 5e6


#: A program's backend compile, in seconds, before the sweep has measured one (`spans_devices`): measured on the
#: 2-core development machine, 0.5–0.7 s a default condition program, 1.3–1.4 s a depth-5 adam one.
FIRST_COMPILE_SECONDS = 1.0


#: Seconds per float of lane state per lane-iteration on a CPU (`otod.core.device_costs.CPU`).
SECONDS_PER_FLOAT_ITERATION = CPU.seconds_per_float_iteration


#: Longer estimated sweeps are refused unless ``yes``.
MAX_SECONDS = 3600.0


#: At most this fraction of the free memory may be planned for.
MEMORY_FRACTION = 0.7


class Chunk(NamedTuple):
    """One compiled call: one method (of its program) at one static point, over a run of traced points (padded to
    the common chunk length by repeating the last one), in order of predicted cost, ``block_points`` points per
    block of lanes (the same for every chunk of a program, so it compiles once)."""

    key: str
    static_index: int
    program: tuple[str, ...]
    method_index: int
    point_indices: tuple[int, ...]
    n_points: int
    block_points: int = 1


def predicted_iterations(config: SweepConfig, point: dict, method: str) -> float:
    """The theory's count at a point where it has one (capped), else the cap: the cost model of planning."""
    cap = config.resolved_max_iters
    theory = config.kind.theory
    guess = None
    if theory is not None and config.relative_lr:
        guess = theory.iterations(config, point, method)
    return float(min(cap, guess)) if guess is not None and math.isfinite(guess) else float(cap)


def predicted_costs(config: SweepConfig) -> dict[str, list[float]]:
    """`predicted_iterations` of every traced point (in `SweepConfig.traced_points` order), by method."""
    points = config.traced_points()
    return {name: [predicted_iterations(config, p, name) for p in points] for name in config.methods}


def lane_seconds(spec, costs: TripCosts = CPU) -> float:
    """Predicted seconds of one lane-iteration of a problem spec on a device of ``costs``' kind: its floats of
    state, and its step's FLOPs where the family declares them (`otod.core.device_costs.TripCosts.lane_seconds`)."""
    family = spec.family()
    return costs.lane_seconds(family.floats_per_lane, family.flops_per_lane)


def plan(config: SweepConfig, costs: dict[str, list[float]] | None = None) -> list[Chunk]:
    """The chunks of a sweep, in run order.

    Each method's points run in order of predicted cost (`predicted_iterations`: the theory's count where there
    is one), so the lanes that share a block, and a chunk, finish at about the same iteration instead of waiting
    for a slow neighbour. The block size comes from the engine's cost model
    (`otod.core.engine.choose_points_per_block`) on those predictions, one per (static point, program). Chunk
    lengths are equal per (static point, program) so each program compiles once, a multiple of the block where
    possible (``costs``: `predicted_costs`, computed here when not given; static points that share a program,
    `otod.core.variants`, are sized at their slowest lane so that their chunks have one shape); the length is the
    number of points whose predicted work, at the program's heaviest point, is about
    ``chunk_seconds`` (at most 1000 chunks per method). A chunk's key names its points, so a journal written under
    another plan is never mistaken for this one's.
    """
    from otod.core.engine import choose_points_per_block
    from otod.core.variants import program_groups

    points = config.traced_points()
    costs = predicted_costs(config) if costs is None else costs
    loop = trip_costs(default_platform())
    chunks = []
    specs = config.specs()
    own = [lane_seconds(spec, loop) for spec in specs]
    groups = program_groups(config.static_points(), specs)
    for si, spec in enumerate(specs):
        seconds = max(own[j] for j in groups[si])  # static points that share a program get one chunk shape
        for program in programs(config.kind.methods, config.methods):
            per_point_lanes = config.seeds * max(len(config.rates_for(name)) for name in program)
            orders = {name: sorted(method_points(config, name), key=lambda i, c=costs[name]: (c[i], i))
                      for name in program}
            heaviest = max(max(costs[name]) for name in program)
            per_chunk = max(1, min(len(points), int(config.chunk_seconds // max(heaviest * per_point_lanes
                                                                                  * seconds, 1e-12))))
            per_chunk = max(per_chunk, -(-len(points) // 1000))
            block = max(choose_points_per_block([costs[name][i] for i in orders[name]], per_point_lanes, seconds,
                                                loop.iteration_overhead(), loop.block_lanes) for name in program)
            if per_chunk >= block:
                per_chunk -= per_chunk % block
            block = min(block, per_chunk)
            for mi, name in enumerate(program):
                order = orders[name]
                for c, start in enumerate(range(0, len(order), per_chunk)):
                    idx = order[start:start + per_chunk]
                    n = len(idx)
                    idx += [idx[-1]] * (per_chunk - n)
                    tag = hashlib.sha256(repr(idx).encode()).hexdigest()[:8]
                    chunks.append(Chunk(f"{si}/{name}/{c}/{tag}", si, program, mi, tuple(idx), n, block))
    return chunks


#: Host bytes per entry of a record's trace: a Python float (24) and its list slot (8).
TRACE_ENTRY_BYTES = 32


class Estimate(NamedTuple):
    lanes: int
    lane_iterations: float
    seconds: float
    bytes: float


def estimate(config: SweepConfig) -> Estimate:
    """Lanes, predicted lane-iterations and seconds, and peak bytes (per-seed draws + one block's lane state +
    a chunk's outputs, and where the family reads its metric at ``checks``, the traces: a block's buffer of one
    float per lane and checkpoint, and every record's trace held as Python floats, `TRACE_ENTRY_BYTES` each, all
    slots counted though a lane that stops sooner keeps fewer) of a sweep, from the families' declared sizes:
    nothing is drawn or allocated. A family that declares its metric's FLOPs (``flops_per_check``) adds, per lane,
    the checks (`otod.core.traces.checkpoints`) up to its predicted count at the CPU's FLOP rate; one that declares
    ``compile_seconds`` adds them once per compiled program: per group of static points that share one
    (`otod.core.variants`: a net's batch sizes) and per program of methods, not per static point."""
    from otod.core.engine import BLOCK_LANES
    from otod.core.methods import programs
    from otod.core.traces import checkpoints
    from otod.core.variants import program_groups

    itemsize = 8 if config.resolved_x64 else 4
    points = config.traced_points()
    lanes, work, seconds, peak, traces = 0, 0.0, 0.0, 0.0, 0.0
    specs = config.specs()
    groups = program_groups(config.static_points(), specs)
    for si, spec in enumerate(specs):
        family = spec.family()
        seconds += config.seeds * family.seconds_per_seed
        if groups[si][0] == si:  # the first static point of its program's group compiles it
            seconds += family.compile_seconds * len(programs(config.kind.methods, config.methods))
        for name in config.methods:
            per_point = config.seeds * len(config.rates_for(name))
            block = max(BLOCK_LANES, per_point)
            run = [points[i] for i in method_points(config, name)]
            slots = 0 if family.checks is None else len(checkpoints(family.checks, config.target.check_every,
                                                                    config.resolved_max_iters))
            traces += slots * TRACE_ENTRY_BYTES * per_point * len(run)
            peak = max(peak, itemsize * (config.seeds * family.floats_per_seed + 2 * block * family.floats_per_lane
                                         + block * slots) + 64 * per_point * len(points))
            predicted = [predicted_iterations(config, p, name) for p in run]
            its = sum(predicted) * per_point
            lanes += per_point * len(run)
            work += its
            seconds += its * lane_seconds(spec)
            if family.flops_per_check:
                reads = checkpoints(family.checks, config.target.check_every, config.resolved_max_iters) \
                    if family.checks is not None else np.arange(config.resolved_max_iters + 1)
                checked = float(np.searchsorted(reads, predicted, side="right").sum()) * per_point
                seconds += checked * family.flops_per_check * CPU.seconds_per_flop
    return Estimate(lanes, work, seconds, peak + traces)


def check_estimate(config: SweepConfig, yes: bool = False, available: int | None = None,
                   processes: int = 1, smaller: str | None = None,
                   estimated: Estimate | None = None) -> Estimate:
    """Refuse with one line what cannot fit in memory, or would take longer than an hour (shared among
    ``processes``) without ``yes``. ``smaller`` names the options that shrink this sweep (the command's own;
    default: its kind's, `otod.core.registry.SweepKind.smaller`); ``estimated`` is an estimate made already (the
    command line's, from a sample of a long axis), else `estimate`."""
    from otod.core.registry import sweep_kind
    from otod.core.resources import memory_available

    e = estimate(config) if estimated is None else estimated
    hint = smaller or sweep_kind(config.sweep).smaller
    available = memory_available() if available is None else available
    if available is not None and e.bytes > MEMORY_FRACTION * available:
        raise OtodError(f"{config.sweep} sweep: needs about {e.bytes / 2**30:.3g} GiB of memory and "
                        f"{available / 2**30:.3g} GiB is free; use {hint}")
    if e.seconds / processes > MAX_SECONDS and not yes:
        where = "this machine" if processes == 1 else f"each of {processes} processes"
        raise OtodError(f"{config.sweep} sweep: about {e.lane_iterations:.3g} lane-iterations, an estimated "
                        f"{e.seconds / processes / 3600:.1f} h on {where}; use {hint}, "
                        "lower --max-iters, or pass --yes")
    return e


def chunk_lane_iterations_predicted(config: SweepConfig, chunk: Chunk, costs: dict[str, list[float]]) -> float:
    """A chunk's predicted lane-iterations: its points' predicted counts (`predicted_iterations`) × their lanes."""
    name = chunk.program[chunk.method_index]
    lanes = config.seeds * len(config.rates_for(name))
    return sum(costs[name][i] for i in chunk.point_indices[:chunk.n_points]) * lanes


def chunk_seconds_predicted(config: SweepConfig, chunk: Chunk, costs: dict[str, list[float]], spec) -> float:
    """A chunk's predicted seconds (its points' theory counts × lanes × a lane-iteration's time): what the
    processes of a distributed sweep balance."""
    return chunk_lane_iterations_predicted(config, chunk, costs) * lane_seconds(spec)


def compacted_programs(config: SweepConfig, chunks: list[Chunk], costs: dict[str, list[float]]) -> set:
    """The (static point, program) pairs whose engine calls compact their blocks' last running lanes
    (`otod.core.engine.compact_width`): those whose chunks are predicted to run at least
    `COMPACT_LANE_ITERATIONS` together. Decided per program, so that each compiles once. Compaction only removes
    waiting, and its second loop costs compile time: a short program, or one whose counts theory predicts (the
    condition sweeps: blocks formed by the predicted counts finish together), would not pay it back."""
    work: dict = {}
    for c in chunks:
        key = (c.static_index, c.program)
        work[key] = work.get(key, 0.0) + chunk_lane_iterations_predicted(config, c, costs)
    return {key for key, predicted in work.items() if predicted >= COMPACT_LANE_ITERATIONS}


def eta_seconds(done: list[tuple[float, float]], left: list[float], compile_seconds: float = 0.0,
                programs_left: int = 0) -> float:
    """Seconds left, from the cost model. ``done`` holds (predicted, measured) seconds of the chunks run so far
    (measured without compiling), ``left`` the predicted seconds of those to come. A chunk costs a·predicted + b:
    b is its fixed cost (dispatch, records, the journal's write), fitted with a by least squares on ``done``
    (a ≥ 0, b ≥ 0); each of the ``programs_left`` programs not compiled yet adds ``compile_seconds``.

    Measured on ``otod sweep condition --k 1..100 --lr tuned`` (41,600 lanes, 8 s): the 0.006-0.02 s predicted
    heavy-ball chunks each took about 0.2 s, and the last program's compile 3 s. With 2.1 s left this ETA said
    2.8 s, counting lanes done said 1.9 s; on ``--k 1..1e4:25:log`` with 2.4 s left, 1.7 s against 0.9 s. Fewer
    than two chunks run: infinite (unknown)."""
    if not left:
        return 0.0
    if len(done) < 2:  # one chunk cannot tell the fixed cost from the scale: "ETA ?"
        return math.inf
    x, y = np.asarray(done, float).T
    if np.ptp(x) > 0:
        a, b = (float(v) for v in fit_line(x, y)[:2])
        if b < 0:
            a, b = float(y.sum() / max(x.sum(), 1e-12)), 0.0
        elif a < 0:
            a, b = 0.0, float(y.mean())
    else:  # equal predictions cannot separate the two: trust the cost model's proportions
        a, b = float(y.sum() / max(x.sum(), 1e-12)), 0.0
    return float(a * np.sum(left) + b * len(left) + compile_seconds * programs_left)


def share_owners(config: SweepConfig, chunks: list[Chunk], count: int,
                 costs: dict[str, list[float]] | None = None) -> list[int]:
    """The share (0 to ``count`` − 1) that runs each chunk: `otod.core.distributed.share` of the whole plan by
    predicted cost. It depends on the plan alone, not on what is done, so a rerun gives each process the same
    share and it finishes only its missing chunks."""
    from otod.core.distributed import share

    if count == 1:
        return [0] * len(chunks)
    costs, specs = predicted_costs(config) if costs is None else costs, config.specs()
    return share([chunk_seconds_predicted(config, c, costs, specs[c.static_index]) for c in chunks], count)


def share_of(config: SweepConfig, chunks: list[Chunk], index: int, count: int,
             costs: dict[str, list[float]] | None = None) -> list[Chunk]:
    """The chunks process (or ``--share``) ``index`` of ``count`` runs (`share_owners`)."""
    return [c for c, p in zip(chunks, share_owners(config, chunks, count, costs)) if p == index]


def missing_shares(config: SweepConfig, chunks: list[Chunk], done: dict, count: int) -> list[tuple[int, int, int]]:
    """(share index, its chunks absent from ``done``, its chunks) for each of ``count`` shares of the plan
    ``chunks`` that misses a chunk, in share order."""
    owner = share_owners(config, chunks, count)
    size = [owner.count(i) for i in range(count)]
    lost = [sum(c.key not in done for c, p in zip(chunks, owner) if p == i) for i in range(count)]
    return [(i, lost[i], size[i]) for i in range(count) if lost[i]]


def next_chunk(waiting: list[Chunk], slot, compiled: dict, compile_seconds: dict,
               expected: dict[str, float], program_of=None) -> int | None:
    """Which of the ``waiting`` chunks (in plan order) the free device ``slot`` runs next: the first whose
    program is compiled for it; else the first of a program compiled nowhere yet; else the first of a program
    compiled for another device whose waiting chunks are expected (`expected_seconds`) to take longer than that
    compile took (a program compiles once per device). None: the device waits for a chunk compiled elsewhere to
    end. ``program_of(chunk)`` keys ``compiled`` (default: its static point and methods; static points that share
    a program, `otod.core.variants`, share a key)."""
    def key(c: Chunk):
        return (c.static_index, c.program) if program_of is None else program_of(c)

    for i, c in enumerate(waiting):
        if slot in compiled.get(key(c), ()):
            return i
    for i, c in enumerate(waiting):
        if key(c) not in compiled:
            return i
    left: dict = {}
    for c in waiting:
        left[key(c)] = left.get(key(c), 0.0) + expected[c.key]
    for i, c in enumerate(waiting):
        if left[key(c)] > compile_seconds.get(key(c), 0.0):
            return i
    return None


def expected_seconds(chunks: list[Chunk], predicted: dict[str, float],
                     ratios: dict[str, list[float]]) -> dict[str, float]:
    """Each chunk's predicted seconds scaled by the median of measured over predicted seconds of the sweep's
    finished chunks of its method (``ratios``, by method name), else of every finished chunk, else as predicted;
    the medians once per call, not per chunk. The cost model counts a method's iterations from theory, which
    adam's and the momentum methods' tuned rates do not follow (measured on ``otod sweep depth --depth 5,6 --init
    xavier --method heavy-ball,adam``: adam chunks predicted at 1.8–4.6 s took 9.8–21 s)."""
    every = [r for rs in ratios.values() for r in rs]
    fallback = float(np.median(every)) if every else 1.0
    scale = {name: float(np.median(rs)) for name, rs in ratios.items() if rs}
    return {c.key: predicted[c.key] * scale.get(c.program[c.method_index], fallback) for c in chunks}


def spans_devices(chunk: Chunk, compile_seconds: dict, seconds: float, program_of=None) -> bool:
    """Whether a sweep's last chunk has its blocks dealt among every device rather than run on one beside the others.
    On one device it takes ``seconds``, W (`expected_seconds`); on two, about W/2 after one more compile c (each
    device's program has the one-device shape, `otod.core.engine.dispatch`'s ``one_device_shape``, so it compiles
    only for a device it has not run on), so it spans when it has two blocks or more and W > 2c. c is its program's
    (keyed by ``program_of``, as in `next_chunk`) measured compile, else the slowest compile of the sweep so far,
    else `FIRST_COMPILE_SECONDS`. Side by side the
    last chunk would run alone on one device while the others idle (measured on ``otod sweep depth --depth 5,6
    --init xavier --method heavy-ball,adam``: the last adam chunk, 18 s, ran alone)."""
    blocks = -(-chunk.n_points // chunk.block_points)
    key = (chunk.static_index, chunk.program) if program_of is None else program_of(chunk)
    c = compile_seconds.get(key, max(compile_seconds.values(), default=FIRST_COMPILE_SECONDS))
    return blocks > 1 and seconds > 2 * c
