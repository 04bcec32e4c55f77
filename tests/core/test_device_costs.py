"""The loop's cost model per device kind (`otod.core.device_costs`): iterations per trip from a program's predicted
trips, the trip's fixed cost and the compile cost of one more copy of the step."""

import pytest

from otod.core.device_costs import CPU, GPU, TripCosts, trip_costs


def test_a_cpu_runs_one_iteration_a_trip_however_long_the_program():
    """Unrolling lost on the CPU (compile 1.2× slower, replays no faster), so its K is 1 for every program."""
    assert {CPU.unroll(trips) for trips in (0, 1e3, 1e6, 1e9)} == {1}
    assert CPU.iteration_overhead() == CPU.trip_seconds


@pytest.mark.parametrize("trips, expected", [
    (2_000, 1),  # the default condition sweep's program: 0.06 s of trips, less than one more copy's 0.1 s
    (20_000, 2),  # 0.6 s of trips: 0.3 + 0.1 = 0.4 s at K = 2 against 0.15 + 0.3 = 0.45 s at K = 4
    (64_000, 4),  # the README depth example's program: K* = √(64000 · 3e-5 / 0.1) = 4.4
    (1e7, 16),  # K* = 55, capped
])
def test_a_gpu_unrolls_as_far_as_the_saved_trips_pay_for_the_compile(trips, expected):
    """K minimises T·F/K + (K − 1)·C over powers of two up to 16: F = 30 µs, C = 0.1 s."""
    assert GPU.unroll(trips) == expected
    seconds = {k: trips * GPU.trip_seconds / k + (k - 1) * GPU.copy_compile_seconds for k in (1, 2, 4, 8, 16)}
    assert seconds[expected] == min(seconds.values())


def test_unroll_is_a_power_of_two_capped_by_the_platform():
    costs = TripCosts("x", trip_seconds=1e-3, iteration_seconds=0.0, seconds_per_float_iteration=1e-12,
                      copy_compile_seconds=0.0, block_lanes=64, max_unroll=8)
    assert costs.unroll(1e6) == 8 and costs.unroll(0) == 1
    assert trip_costs("cpu") is CPU and trip_costs("cuda") is GPU and trip_costs("tpu") is GPU
