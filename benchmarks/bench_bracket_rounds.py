"""A bracketed sweep with rounds, whole command, before and after the bracket read the choices on the point
estimates (issue 51 item 2): before, each round ran the kind's full analysis (choice, seed bootstrap that re-chooses
in each resample, fits) and threw it away; after, each round reads `otod.core.analysis.placements` and the sweep is
analysed once.

    PYTHONPATH=. python3 benchmarks/bench_bracket_rounds.py --base /path/to/tree/before --rounds 5

(``--tree``: another copy of the tree after, e.g. a ``git archive`` of this commit, so that editing this checkout
cannot touch a run.)
Each pair runs A (``--base``: a checkout or ``git archive`` of the tree before) and B (this tree) on the same
command into fresh folders, alternating which goes first, with the compilation cache warmed by one untimed run of
each; it prints each run's wall and CPU seconds (user + system of the child), the per-pair ratios B/A, the medians,
and whether the pair's records are equal (pandas ``equals`` on the results file). Then, on B's last results file,
the median of ``--repeats`` calls of the kind's full analysis against its placement (in-process, this checkout's
code): the part of a round the change removes. ``--stages``: also, per run, the CPU seconds spent in the kind's analyses and in the
bracket's reads of the choices during the command (`STAGES`), the work the change moves, apart from the lanes'.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
#: 30 κ × 3 methods × 16 seeds on a grid of two rates, extended 4 rounds (3,472 lanes beyond the grid): a full
#: analysis of its records takes about 1.3 s (the bootstrap, the fits and the theory beside them), a placement 0.1 s.
COMMAND = ["sweep", "condition", "--k", "1..100:30:log", "--dim", "8", "--seeds", "16", "--lr", "tuned", "--lr-grid",
           "0.5,0.7", "--lr-extend", "4", "--method", "gd,heavy-ball,nesterov", "--no-plot"]


def timed(tree: Path, out: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one run of `COMMAND` with ``tree`` first on the path, into ``out``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "otod", *COMMAND, "--out", str(out)], check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(tree)}, cwd=out.parent)  # not here: '' comes first on the path
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


#: Run in a child with a tree on its path: the command in-process, with the CPU seconds (``time.process_time``) of
#: every call of the kind's analysis (``otod.core.pipeline.analyse``, once per round before, once after) and of
#: every read the bracket makes of the choices (the ``place`` it is given, after; none before).
STAGES = """
import sys, time
import otod.core.bracket as bracket, otod.core.pipeline as pipeline
from click.testing import CliRunner
from otod.cli import main
spent = {"analyse": [0.0, 0], "place": [0.0, 0]}
def timer(name, function):
    def call(*args, **kwargs):
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name][0] += time.process_time() - start
            spent[name][1] += 1
    return call
pipeline.analyse = timer("analyse", pipeline.analyse)
old = bracket.bracketed
def bracketed(config, results, place, *args, **kwargs):
    return old(config, results, timer("place", place) if callable(place) else place, *args, **kwargs)
bracket.bracketed = bracketed
result = CliRunner().invoke(main, sys.argv[1:])
assert result.exit_code == 0, result.output
print(spent["analyse"][0], spent["analyse"][1], spent["place"][0], spent["place"][1], pipeline.__file__)
"""


def stages(tree: Path, out: Path) -> tuple[float, int, float, int]:
    """(CPU s in the analyses, their count, CPU s in the bracket's reads, their count) of one run (`STAGES`)."""
    done = subprocess.run([sys.executable, "-c", STAGES, *COMMAND, "--out", str(out)], check=True,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)}, cwd=out.parent)
    analysed, analyses, placed, placements, where = done.stdout.split()[-5:]
    assert Path(where).resolve().is_relative_to(tree), (where, tree)  # the tree asked for ran
    return float(analysed), int(analyses), float(placed), int(placements)


def records(out: Path):
    import pandas as pd

    (path,) = out.glob("*.parquet")
    return pd.read_parquet(path)


def parts(out: Path, repeats: int) -> tuple[float, float]:
    """Median seconds of the kind's full analysis and of its placement on the results file in ``out``."""
    sys.path.insert(0, str(HERE))
    import otod.condition  # noqa: F401  registers the sweep
    from otod.core.registry import sweep_kind
    from otod.core.results import load

    (path,) = out.glob("*.parquet")
    results = load(path)
    shown = sweep_kind(results.meta["sweep"]).presented
    times = {"analyse": [], "place": []}
    for _ in range(repeats):
        for name in times:
            start = time.perf_counter()
            getattr(shown, name)(results)
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["analyse"]), statistics.median(times["place"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, type=Path, help="the tree before (A)")
    parser.add_argument("--tree", type=Path, default=HERE, help="the tree after (B; default this one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--stages", action="store_true", help="also the CPU seconds of the analyses and reads")
    args = parser.parse_args()
    trees = {"A": args.base.resolve(), "B": args.tree.resolve()}
    folder = Path(tempfile.mkdtemp(prefix="bench-bracket-"))
    for name, tree in trees.items():  # warm the compilation cache
        timed(tree, folder / f"warm-{name}")
    rows = []
    for k in range(args.rounds):
        order = ("A", "B") if k % 2 == 0 else ("B", "A")
        got = {name: timed(trees[name], folder / f"{k}-{name}") for name in order}
        same = records(folder / f"{k}-A").equals(records(folder / f"{k}-B"))
        rows.append(got)
        print(f"pair {k + 1} ({order[0]} first): A {got['A'][0]:.2f} s wall {got['A'][1]:.2f} s CPU, B "
              f"{got['B'][0]:.2f} s wall {got['B'][1]:.2f} s CPU, B/A wall {got['B'][0] / got['A'][0]:.3f} CPU "
              f"{got['B'][1] / got['A'][1]:.3f}, records equal {same}", flush=True)
    for i, what in enumerate(("wall", "CPU")):
        a, b = (statistics.median(r[n][i] for r in rows) for n in ("A", "B"))
        ratios = statistics.median(r["B"][i] / r["A"][i] for r in rows)
        print(f"median {what}: A {a:.2f} s, B {b:.2f} s, median per-pair B/A {ratios:.3f}")
    if args.stages:
        for k in range(args.rounds):
            for name in (("A", "B") if k % 2 == 0 else ("B", "A")):
                analysed, analyses, placed, placements = stages(trees[name], folder / f"stages-{k}-{name}")
                print(f"stages {k + 1} {name}: {analyses} analyses {analysed:.2f} s CPU, {placements} reads of the "
                      f"choices {placed:.2f} s CPU, together {analysed + placed:.2f} s", flush=True)
    full, placed = parts(folder / f"{args.rounds - 1}-B", args.repeats)
    print(f"on B's file: full analysis {full:.3f} s, placement {placed:.3f} s (median of {args.repeats})")
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
