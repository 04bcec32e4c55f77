"""What the engine's loop costs on each kind of device, and the block size and iterations per trip chosen from it.

A block of lanes runs one ``while_loop`` (`otod.core.engine`). One iteration of a block of L lanes, K iterations
to a trip of the loop, costs

    t(L, K) = F / K + s + L · n · c

where F is the fixed cost of one trip (the predicate's reduction and the loop's round trip: on a GPU the host
reads the predicate back and launches the next trip), s the fixed cost of one iteration inside a trip (the
body's kernel launches on a GPU; nothing on a CPU, whose trip is one function call), n the floats of lane state
(`otod.core.family.Family.floats_per_lane`) and c the seconds per float of lane state per iteration.

* **Iterations per trip** (`TripCosts.unroll`): the power of two K ≤ ``max_unroll`` that minimises

      T · F / K + (K − 1) · C

  for a program of T predicted trips (its blocks' slowest lanes' iterations, summed: `lax.map` runs them one
  after another), C the compile seconds of one more copy of the step in the loop's body. Each iteration in a
  trip keeps its own check, so a lane's first hit of the target is still recorded at its exact iteration and the
  counts do not depend on K (float64 records identical, tested on every engine path); a trip can run past its
  block's last stop by at most K − 1 iterations. The optimum, K* = √(T·F/C), is large only where a program runs
  long: on an H200 a 16-copy body made the default net sweep's programs compile for 15–19 s each and the
  condition sweep's for 1.9 s more, to save 0.1 s of its 0.13 s of loop.
* **Lanes per block**: `otod.core.engine.choose_points_per_block` weighs a block's per-iteration fixed cost
  F / K + s against its lanes idling for its slowest, up to ``block_lanes``.

The numbers are measured per platform (JAX's ``Device.platform``): the CPU's on the 2-core development machine
(`benchmarks/RESULTS.md`), the GPU's on an NVIDIA H100 and H200 (`benchmarks/bench_trip.py`, run on the GPU)."""

from __future__ import annotations

import dataclasses

@dataclasses.dataclass(frozen=True)
class TripCosts:
    """One platform's loop costs (module docstring): ``trip_seconds`` F, ``iteration_seconds`` s,
    ``seconds_per_float_iteration`` c, ``copy_compile_seconds`` C, the limits ``block_lanes`` (most lanes a
    block) and ``max_unroll``, and ``seconds_per_flop``, the arithmetic's cost for a family that declares its FLOPs
    (`otod.core.family.Family.flops_per_lane`; 0 where not measured: the float term alone)."""

    platform: str
    trip_seconds: float
    iteration_seconds: float
    seconds_per_float_iteration: float
    copy_compile_seconds: float
    block_lanes: int
    max_unroll: int
    seconds_per_flop: float = 0.0

    def lane_seconds(self, floats_per_lane: int, flops_per_lane: float = 0.0) -> float:
        """Seconds of one lane-iteration of a lane with ``floats_per_lane`` floats of state (at least 64: a lane's
        book-keeping) and ``flops_per_lane`` FLOPs of arithmetic, n·c + F·``seconds_per_flop``."""
        return max(64, floats_per_lane) * self.seconds_per_float_iteration + flops_per_lane * self.seconds_per_flop

    def unroll(self, trips: float) -> int:
        """Iterations per trip for a program of ``trips`` predicted trips at one iteration a trip: the power of two
        K ≤ ``max_unroll`` minimising trips · F / K + (K − 1) · C (module docstring); the smaller on a tie."""
        best, best_seconds, k = 1, float(trips) * self.trip_seconds, 2
        while k <= self.max_unroll:
            seconds = float(trips) * self.trip_seconds / k + (k - 1) * self.copy_compile_seconds
            if seconds < best_seconds:
                best, best_seconds = k, seconds
            k *= 2
        return best

    def iteration_overhead(self) -> float:
        """A block's fixed seconds per iteration at one iteration a trip, F + s (what the plan weighs against a
        block's idle lanes; more iterations a trip only lower it)."""
        return self.trip_seconds + self.iteration_seconds


#: The 2-core AMD EPYC development machine: a trip 0.35 µs (0.86 µs per iteration at 8 lanes of 65 ns each),
#: 0.15 ns per float (65 ns per lane-iteration at d = 64 in the eigen basis, 3.1 µs at d = 100 rotated), blocks of
#: at most 128 lanes (70, 66 and 128 ns per lane-iteration at 32, 128 and 512 lanes a block, the last spilling out
#: of cache), one iteration a trip (against 2, 5 alternated pairs, records identical: compile 1.20–1.22× slower
#: and the replayed calls no faster, 0.99–1.14×).
#: Its FLOP rate, 5·10⁻¹⁰ s a FLOP (2 GFLOP/s), is the transformer's (`otod.nets.model.transformer_net.step_flops`
#: and ``check_flops``), measured on ``otod sweep net --model transformer --data sequence --regime stream --examples
#: 256,1024 --width 8,16 --batch 8,32 --seeds 3 --lr-grid 0.3..3:3:log --max-iters 512 --depth 1`` at load 6–7 on
#: the 2 shared cores, float32: 8.5·10¹⁰ FLOPs of steps and held-out checks (3,704 lane-iterations, 3,429 checks)
#: in the 38 s of the sweep's 293 s not spent compiling, 4.5·10⁻¹⁰ s a FLOP; 9 vmapped lanes timed alone gave
#: 2.1·10⁻¹⁰ (d 16, B 32 step) to 1.5·10⁻⁹ (d 8, the 256-sequence check) at load 8.
CPU = TripCosts("cpu", trip_seconds=3.5e-7, iteration_seconds=0.0, seconds_per_float_iteration=1.5e-10,
                copy_compile_seconds=0.05, block_lanes=128, max_unroll=1, seconds_per_flop=5e-10)

#: An NVIDIA H100 and H200 (`benchmarks/RESULTS.md`, "on a GPU" and issue 38): a trip 29.9 µs (1 lane, d = 1);
#: with K gd steps a trip, 64 lanes, K(S + s)/(S + Ks) = 5.84 at K = 8 gives s ≈ 1.1 µs a step; 10⁵ lanes at
#: d = 64 ran 1.93·10⁹ lane-iterations a second, 0.52 ns a lane-iteration, 8·10⁻¹² s a float. One more copy of
#: the step compiled in 0.06 s a program for the condition sweep (H200: 16 copies 3.03 s against 1.18 s for one,
#: 2 programs) and about 0.3 s for depth (32 copies 20.8 s against 2.4 s, 2 programs): C = 0.1 s.
GPU = TripCosts("gpu", trip_seconds=3.0e-5, iteration_seconds=1.1e-6, seconds_per_float_iteration=8e-12,
                copy_compile_seconds=0.1, block_lanes=8192, max_unroll=16)

#: Per JAX platform name; any other platform (a TPU) is costed as a GPU: an accelerator behind a host loop.
COSTS = {"cpu": CPU, "gpu": GPU, "cuda": GPU, "rocm": GPU}


def trip_costs(platform: str) -> TripCosts:
    """The loop costs of a JAX platform (``jax.devices()[0].platform``)."""
    return COSTS.get(platform, GPU)


def default_platform() -> str:
    """The platform JAX runs on by default here (imports JAX)."""
    import jax

    return jax.devices()[0].platform
