"""The pre-flight estimate of a joint D × P grid (issue 52): the reference runs' measured time (building the config
runs them, `otod.nets.model.reference`), then the core's estimate of the sweep (`otod.core.preflight.full_estimate`:
every lane to the cap, so an upper bound on the lanes' work) and its programs (one per cell: a cell's batch sizes share one, `otod.core.variants`), each at the
planner's `otod.core.plan.FIRST_COMPILE_SECONDS` and at a measured compile time.

    python3 benchmarks/grid_estimate.py --examples 256,1024,4096,16384 --width 4,12,40,128 --batch 8,32,128,512
    python3 benchmarks/grid_estimate.py --model transformer --depth 1 --examples 256,1024,4096 --width 8,16,32 \
        --batch 8,32,128 --seeds 3

``--model transformer`` runs the sequence task (`otod.nets.model.sequence`), its lanes costed by their FLOPs (the
step's and the held-out check's, `otod.nets.model.transformer_net.step_flops`, ``check_flops``) and its programs by
the family's measured compile time (`otod.nets.model.transformer_net.COMPILE_SECONDS`); ``--model mlp`` the teacher.
"""

from __future__ import annotations

import argparse
import os
import time

import otod.nets  # noqa: F401  (registers the net sweep)
from otod.core.plan import FIRST_COMPILE_SECONDS
from otod.core.preflight import full_estimate
from otod.nets.sweep.options import net_config


def main() -> None:
    parser = argparse.ArgumentParser()
    for name, default in (("examples", "256,1024,4096,16384"), ("width", "4,12,40,128"), ("batch", "8,32,128,512"),
                          ("lr-grid", "0.03..3:9:log"), ("max-iters", "4096"), ("seeds", "5"), ("regime", "stream"),
                          ("compile-seconds", "3"), ("model", "mlp"), ("depth", "2"), ("heads", None)):
        parser.add_argument(f"--{name}", default=default)
    parser.add_argument("--no-reference", action="store_true",
                        help="estimate only: the reference runs by the planner's lane cost, not run (the cells' "
                             "targets a placeholder, which the sweep's estimate does not read)")
    a = parser.parse_args()
    if a.no_reference:
        import otod.nets.sweep.options as options

        options.with_regime = placeholder_targets
    start = time.perf_counter()
    data = "sequence" if a.model == "transformer" else "teacher"
    config = net_config(data=data, model=a.model, depth=a.depth, heads=a.heads, examples=a.examples, width=a.width,
                        batch=a.batch, lr_grid=a.lr_grid, max_iters=a.max_iters, seeds=int(a.seeds), regime=a.regime)
    reference = time.perf_counter() - start
    e = full_estimate(config)
    from otod.core.variants import program_groups

    groups = set(program_groups(config.static_points(), config.specs()))  # a cell's batches share a program
    programs = len(groups) * len(config.methods)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"cells {len(config.values('examples')) * len(config.values('width'))}, programs {programs}, lanes "
          f"{e.lanes}, lane-iterations (every lane to the cap) {e.lane_iterations:.3g}")
    print(f"reference runs ({'not run' if a.no_reference else 'measured'}): {reference:.1f} s; the planner's "
          f"estimate of one round of --lr-grid: {reference_estimate(config):.0f} s")
    declared = config.specs()[0].family().compile_seconds
    if declared:  # the family's own compile term is in the estimate (the transformer's)
        print(f"sweep estimate: {e.seconds:.0f} s, of which {programs} programs × {declared:g} s compiling "
              f"(the family's) and {e.seconds - programs * declared:.0f} s of lanes and checks")
        return
    print(f"sweep estimate: {e.seconds:.0f} s of lanes + {programs} programs × {FIRST_COMPILE_SECONDS:g} s "
          f"(planner) = {e.seconds + programs * FIRST_COMPILE_SECONDS:.0f} s; × {a.compile_seconds} s (measured "
          f"compile) = {e.seconds + programs * float(a.compile_seconds):.0f} s")


def placeholder_targets(spec, sizes, widths, lrs, seeds, seed, method, options):
    """``with_regime`` without its runs: every cell's target 1 at the first lr (``--no-reference``)."""
    import dataclasses

    table = ";".join(f"{int(d)}:{int(w)}:1.0:{lrs[0]!r}:interior" for w in widths for d in sizes)
    return dataclasses.replace(spec, held_out_targets=table)


def reference_estimate(config) -> float:
    """The planner's seconds for the reference runs' first round: per cell, seeds × rates × ⌊D/B_ref⌋ steps at the
    reference batch, each `otod.core.plan.lane_seconds` of the cell's net (`otod.nets.model.reference`)."""
    from otod.core.plan import lane_seconds
    from otod.nets.model.reference import reference_spec, reference_steps

    spec, batch = config.problem, config.problem.reference_batch
    return sum(config.seeds * len(config.lr_grid) * reference_steps(d, batch)
               * lane_seconds(reference_spec(spec, int(w), int(d), batch))
               for w in config.values("width") for d in config.values("examples"))


if __name__ == "__main__":
    main()
