"""CLI commands of the cost package (`otod flops`, `otod profile`); registered with the core by otod.cost.

Both parse options, call the library (`otod.cost.flops.flops_table`, `otod.cost.profile.profile_one`), print a
table, write a results file under ``--out`` and print its path; ``--json`` prints the records to stdout instead
of the table. Bad input ends as one line on stderr and exit code 2 (`otod.cli.user_errors`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from otod.core.cli import user_errors
from otod.core.errors import OtodError
from otod.cost.names import NETWORKS

if TYPE_CHECKING:
    from otod.cost import models as M


def parse_list(text: str, option: str, example: str) -> list[str]:
    """``"a,b"`` → ["a", "b"]; an empty item (``"a,,b"``) raises `OtodError`."""
    items = [t.strip() for t in str(text).split(",")]
    if not items or any(not t for t in items):
        raise OtodError(f"{option} {text}: expected a comma-separated list without empty items, e.g. {option} "
                        f"{example}")
    return items


def build_networks(models: str, widths: str | None, depth: int, image: int, shared: bool, tokens: int,
                   width: int, heads: int, blocks: int) -> list[M.Network]:
    """Networks named in ``--model`` with their shape options (validated before any compilation)."""
    from otod.cost import models as M

    names = parse_list(models, "--model", "convnet,onenet")
    w = M.parse_widths(widths) if widths is not None else None
    if image < 1:
        raise OtodError(f"--image {image}: image side must be an integer ≥ 1, e.g. --image 224")
    return [M.network(n, widths=w, depth=depth, image=image, shared=shared, tokens=tokens, width=width,
                      heads=heads, blocks=blocks) for n in names]


def results_path(kind: str, config: dict, out: str) -> Path:
    """``<out>/<kind>-<digest>.json``: one file per distinct configuration (the project's convention)."""
    from otod.core.results import digest  # imports NumPy: not on the path of `otod --help`
    return Path(out) / f"{kind}-{digest(config)}.json"


def _fmt(x: float) -> str:
    """Engineering-style FLOP count: 1.23G."""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def _seconds(x: float) -> str:
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def network_options(fn):
    """Shape options shared by `flops` and `profile`."""
    options = [
        click.option("--model", "models", default="convnet", show_default=True,
                     help=f"comma list of: {', '.join(NETWORKS)}"),
        click.option("--widths", default=None, help="MLP widths input,hidden...,output, e.g. 784,512,10"),
        click.option("--depth", default=100, show_default=True, type=int,
                     help="DeeperConvNet: number N of intermediate 3×3 conv layers"),
        click.option("--unshared", is_flag=True, help="DeeperConvNet: own weights per intermediate layer "
                                                      "(the appendix code shares one)"),
        click.option("--image", default=224, show_default=True, type=int, help="conv nets: image side"),
        click.option("--tokens", default=64, show_default=True, type=int, help="transformer: sequence length"),
        click.option("--width", default=128, show_default=True, type=int, help="transformer: model width"),
        click.option("--heads", default=4, show_default=True, type=int, help="transformer: attention heads"),
        click.option("--blocks", default=1, show_default=True, type=int, help="transformer: blocks"),
        click.option("--out", default="results", show_default=True, help="folder for the results file"),
        click.option("--json", "as_json", is_flag=True, help="print the records as JSON instead of a table"),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


@click.command("flops")
@network_options
@click.option("--batch", default="1,4,16,64,256", show_default=True, help="comma list of batch sizes")
@click.option("--optimizer", default="sgd", show_default=True, help="comma list of: sgd, momentum, adam")
@click.option("--workers", default=0, type=int, help="compile threads (0: one per CPU)")
@user_errors
def flops_command(models, widths, depth, unshared, image, tokens, width, heads, blocks, out, as_json, batch,
                  optimizer, workers):
    """Forward, backward and update FLOPs of one iteration: XLA's count next to the layer formulas.

    \b
    ratio = (backward + update) / forward, the update counted into backward
    (Hobbhahn & Sevilla, Epoch AI 2021: between 1:1 and 3:1 for SGD, typically 2:1).
    Nothing is allocated: programs are compiled from abstract shapes.

    \b
    Examples:
      otod flops --model convnet --batch 1,4,16,64,256 --optimizer sgd,adam
      otod flops --model mlp --widths 784,512,10 --batch 1,64
    """
    from otod.core import results
    from otod.cost.flops import check_batches, flops_table
    from otod.cost.optimizers import make_optimizer

    networks = build_networks(models, widths, depth, image, not unshared, tokens, width, heads, blocks)
    batches = check_batches(parse_list(batch, "--batch", "1,4,16"))
    optimizers = parse_list(optimizer, "--optimizer", "sgd,adam")
    for o in optimizers:
        make_optimizer(o)
    start = time.perf_counter()
    rows = flops_table(networks, batches, optimizers, workers=workers or None)
    wall = time.perf_counter() - start
    records = [r._asdict() for r in rows]
    config = {"models": [n.name for n in networks], "model_options": {n.name: n.config for n in networks},
              "batches": list(batches), "optimizers": [o.lower() for o in optimizers]}
    meta = {"kind": "flops", "config": config, "environment": results.environment(), "precision": "float32",
            "wall_time_s": wall, "definition": "ratio = (backward + update) / forward; backward = "
                                               "value_and_grad - forward (XLA cost_analysis)"}
    path = results.save(results_path("flops", config, out), meta, records)
    if as_json:
        click.echo(json.dumps(records, indent=1))
        return
    header = (f"{'model':<14}{'batch':>6} {'opt':<5}{'params':>8} {'fwd xla':>9}{'formula':>9} {'bwd xla':>9}"
              f"{'formula':>9} {'upd xla':>9}{'formula':>9} {'ratio xla':>10}{'formula':>8}  where XLA differs")
    click.echo(header)
    for r in rows:
        click.echo(f"{r.model:<14}{r.batch:>6} {r.optimizer:<5}{_fmt(r.params):>8} {_fmt(r.forward_xla):>9}"
                   f"{_fmt(r.forward_formula):>9} {_fmt(r.backward_xla):>9}{_fmt(r.backward_formula):>9} "
                   f"{_fmt(r.update_xla):>9}{_fmt(r.update_formula):>9} {r.ratio_xla:>10.3f}"
                   f"{r.ratio_formula:>8.3f}  {r.note}")
    click.echo(f"{len(rows)} rows in {wall:.1f} s (compile included); wrote {path}")


@click.command("profile")
@network_options
@click.option("--batch", default="16", show_default=True, help="comma list of batch sizes")
@click.option("--optimizer", default="sgd", show_default=True, help="comma list of: sgd, momentum, adam")
@click.option("--precision", default="float32,bfloat16", show_default=True,
              help="comma list of: float32, bfloat16 (mixed precision: bf16 compute, f32 weights)")
@click.option("--repeats", default=7, show_default=True, type=int, help="timed calls per part")
@click.option("--warmup", default=2, show_default=True, type=int, help="untimed calls per part")
@user_errors
def profile_command(models, widths, depth, unshared, image, tokens, width, heads, blocks, out, as_json, batch,
                    optimizer, precision, repeats, warmup):
    """Wall-clock time of forward, backward and update on this device (median and 25–75% spread).

    \b
    The backward/forward time ratio is shown next to the FLOP ratio (XLA's count).
    Example:
      otod profile --model convnet --batch 16
    """
    from otod.core import results
    from otod.cost.flops import check_batches, flops_table
    from otod.cost.optimizers import make_optimizer
    from otod.cost.profile import check_fits, check_precision, profile_one

    networks = build_networks(models, widths, depth, image, not unshared, tokens, width, heads, blocks)
    batches = check_batches(parse_list(batch, "--batch", "16"))
    optimizers = [o.lower() for o in parse_list(optimizer, "--optimizer", "sgd,adam")]
    for o in optimizers:
        make_optimizer(o)
    precisions = [check_precision(p) for p in parse_list(precision, "--precision", "float32,bfloat16")]
    if repeats < 1 or warmup < 0:
        raise OtodError(f"--repeats {repeats} --warmup {warmup}: need repeats ≥ 1 and warmup ≥ 0, "
                        "e.g. --repeats 7 --warmup 2")
    for n in networks:  # refuse before any timing starts
        for b in batches:
            for o in optimizers:
                for p in precisions:
                    check_fits(n, b, o, p)
    start = time.perf_counter()
    flop_rows = {(r.model, r.batch, r.optimizer): r for r in flops_table(networks, batches, optimizers)}
    records = []
    for n in networks:
        for b in batches:
            for o in optimizers:
                for p in precisions:
                    row = profile_one(n, b, o, p, warmup=warmup, repeats=repeats)._asdict()
                    f = flop_rows[n.name, b, o]
                    row.update(flop_ratio_xla=f.ratio_xla, flop_ratio_formula=f.ratio_formula,
                               iteration_flops_xla=f.iteration_flops_xla,
                               flops_per_s=f.iteration_flops_xla / (row["forward_s"] + row["backward_s"]
                                                                    + row["update_s"]))
                    records.append(row)
    wall = time.perf_counter() - start
    config = {"models": [n.name for n in networks], "model_options": {n.name: n.config for n in networks},
              "batches": list(batches), "optimizers": optimizers, "precisions": precisions, "repeats": repeats,
              "warmup": warmup}
    meta = {"kind": "profile", "config": config, "environment": results.environment(), "precision": precisions,
            "wall_time_s": wall}
    path = results.save(results_path("profile", config, out), meta, records)
    if as_json:
        click.echo(json.dumps(records, indent=1))
        return
    span = lambda r, k: f"{_seconds(r[k + '_s'])} [{_seconds(r[k + '_q25_s'])}–{_seconds(r[k + '_q75_s'])}]"
    click.echo(f"{'model':<14}{'batch':>6} {'opt':<5}{'precision':<10} {'forward (median [25–75%])':<32}"
               f"{'backward':<32}{'update':<30}{'time ratio':>11}{'FLOP ratio':>11}")
    for r in records:
        click.echo(f"{r['model']:<14}{r['batch']:>6} {r['optimizer']:<5}{r['precision']:<10} "
                   f"{span(r, 'forward'):<32}{span(r, 'backward'):<32}{span(r, 'update'):<30}"
                   f"{r['time_ratio']:>11.2f}{r['flop_ratio_xla']:>11.2f}")
    click.echo(f"device {records[0]['device']}; ratio = (backward + update) / forward; {repeats} repeats after "
               f"{warmup} warm-up calls; {wall:.1f} s; wrote {path}")


def commands() -> dict[str, list]:
    """This obstacle's commands, by the group they join ('' for top-level commands)."""
    return {"": [flops_command, profile_command]}
