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

from otod.core.api import OtodError, positive_int, refuse_memory, refuse_time, user_errors
from otod.cost.names import NETWORKS, OPTIMIZER_NAMES, PRECISION_NAMES

if TYPE_CHECKING:
    from otod.cost import models as M


def parse_list(text: str, option: str, example: str) -> list[str]:
    """``"a,b"`` → ["a", "b"]; an empty item (``"a,,b"``) raises `OtodError`."""
    items = [t.strip() for t in str(text).split(",")]
    if not items or any(not t for t in items):
        raise OtodError(f"{option} {text}: expected a comma-separated list without empty items, e.g. {option} "
                        f"{example}")
    return items


#: Which networks each shape option shapes: an option given for none of the listed models would be ignored, so it
#: is refused.
SHAPE_OPTIONS = {"--widths": ("mlp",), "--depth": ("deeperconvnet",), "--unshared": ("deeperconvnet",),
                 "--image": ("convnet", "deeperconvnet"), "--tokens": ("transformer",),
                 "--width": ("transformer",), "--heads": ("transformer",), "--blocks": ("transformer",)}
#: Defaults of the shape options (stated in each option's help).
SHAPE_DEFAULTS = {"depth": 100, "image": 224, "tokens": 64, "width": 128, "heads": 4, "blocks": 1}
#: XLA's compile of one program grows with its layers: measured on the shared 2-core development machine,
#: ``otod flops --model deeperconvnet --batch 1`` (3 programs) took 5.3 s at depth 100 and 12.5 s at depth 400
#: (600 more layers: 0.004 s per layer and program) and 340 → 523 MB peak (0.15 MB per layer and program compiling
#: at once). The constants round these up.
COMPILE_SECONDS_PER_LAYER = 0.005
COMPILE_BYTES_PER_LAYER = 2e5
#: Memory of the interpreter, JAX and XLA before any program (the depth-100 run's 340 MB, rounded up).
BASE_BYTES = 4e8
#: A jitted call costs at least this on this machine's CPU (dispatch and synchronisation), and at most this many
#: FLOP/s: the timing estimate of `otod profile` is a lower bound, so it never refuses a run that would be quick.
CALL_SECONDS = 2e-5
FLOPS_PER_SECOND = 1e11


def model_names(models: str) -> list[str]:
    """The --model list, lower-cased, each a known network (checked before JAX is imported)."""
    names = [n.lower() for n in parse_list(models, "--model", "convnet,onenet")]
    for n in names:
        if n not in NETWORKS:
            raise OtodError(f"--model {n}: unknown model; known: {', '.join(NETWORKS)}, e.g. --model convnet")
    return names


def shape_options(names: list[str], *, widths, depth, unshared, image, tokens, width, heads, blocks) -> dict:
    """The shape options checked and with their defaults: each a whole number in range, and each given option
    shaping at least one listed model (``--depth`` with ``--model convnet`` would be ignored: refused)."""
    given = {"--widths": widths, "--depth": depth, "--unshared": unshared or None, "--image": image,
             "--tokens": tokens, "--width": width, "--heads": heads, "--blocks": blocks}
    for option, value in given.items():
        if value is not None and not set(SHAPE_OPTIONS[option]) & set(names):
            raise OtodError(f"{option}: shapes only {' and '.join(SHAPE_OPTIONS[option])}, not --model "
                            f"{','.join(names)}, which ignores it; drop it or add the model, e.g. --model "
                            f"{SHAPE_OPTIONS[option][0]}")
    out = {k: v if given[f"--{k}"] is None else given[f"--{k}"] for k, v in SHAPE_DEFAULTS.items()}
    out["depth"] = positive_int(out["depth"], "--depth", "8", minimum=0)
    out["image"] = positive_int(out["image"], "--image", "224", minimum=16)
    for key, example in (("tokens", "64"), ("width", "128"), ("heads", "4"), ("blocks", "2")):
        out[key] = positive_int(out[key], f"--{key}", example)
    out["shared"] = not unshared
    out["widths"] = None if widths is None else parse_widths(widths)
    return out


def parse_widths(text: str) -> tuple[int, ...]:
    """``"784,512,10"`` → (784, 512, 10), without JAX (as `otod.cost.models.parse_widths`, whose message it
    keeps): at least two whole numbers ≥ 1 (``1e3`` is whole too)."""
    try:
        widths = tuple(positive_int(p.strip(), "--widths", "784,512,10") for p in str(text).split(","))
    except OtodError:
        widths = ()
    if len(widths) < 2:
        raise OtodError(f"--widths {text}: widths must be ≥ 2 comma-separated integers ≥ 1, "
                        "e.g. --widths 784,512,10")
    return widths


def layer_count(name: str, shape: dict) -> int:
    """Layers of a network as XLA sees them, from the options alone (no JAX): DeeperConvNet's intermediate
    conv + ReLU pairs are unrolled (2 per --depth), a transformer block is about a dozen operations, an MLP two
    per width."""
    if name == "deeperconvnet":
        return 2 * shape["depth"] + 8
    if name == "transformer":
        return 12 * shape["blocks"] + 2
    if name == "mlp":
        return 2 * len(shape["widths"] or (784, 512, 10))
    return 8


#: XLA multiplies a tensor's dimensions in a signed 64-bit integer and aborts the process (no Python exception)
#: when the product overflows: shapes are refused well before that.
MAX_ELEMENTS = 2 ** 60


def largest_tensor(name: str, shape: dict, batch: int) -> float:
    """An upper bound on the elements of the largest tensor a network's programs hold at ``batch``, from the
    options alone: a conv net's first activations (batch·image²·32, 64 channels at a quarter), a transformer's
    attention scores (batch·heads·tokens²) and MLP activations, an MLP's widest layer and weight matrix,
    LinearNet's input."""
    if name in ("convnet", "deeperconvnet"):
        return float(batch) * shape["image"] ** 2 * 32
    if name == "transformer":
        t, d, h = shape["tokens"], shape["width"], shape["heads"]
        return float(batch) * max(h * t * t, 4 * t * d) + 4.0 * d * d
    if name == "mlp":
        widths = [float(w) for w in shape["widths"] or (784, 512, 10)]
        return max(float(batch) * max(widths), max(a * b for a, b in zip(widths, widths[1:])))
    return float(batch) * 224 * 224 * 3


def check_shapes(names: list[str], shape: dict, batches) -> None:
    """Refuse, in one line, a shape XLA cannot represent (`MAX_ELEMENTS`) instead of letting it abort."""
    for n in names:
        for b in batches:
            elements = largest_tensor(n, shape, b)
            if elements > MAX_ELEMENTS:
                sizes = {"convnet": "--image", "deeperconvnet": "--image", "transformer": "--tokens or --width",
                         "mlp": "--widths"}.get(n, "--batch")
                raise OtodError(f"--model {n} --batch {b}: a tensor of about {elements:.3g} elements, beyond the "
                                f"{MAX_ELEMENTS:.3g} that XLA's 64-bit shapes allow; use a smaller {sizes} or "
                                "--batch")


def check_compile(names: list[str], shape: dict, programs_per_network: int, workers: int, yes: bool) -> None:
    """Refuse, before JAX is imported, a compile that will not fit in memory (programs compile ``workers`` at a
    time) or, without ``yes``, would take over an hour: both grow with the layers (`layer_count`)."""
    layers = max(layer_count(n, shape) for n in names)
    total = sum(layer_count(n, shape) for n in names) * programs_per_network
    at_once = max(1, min(workers, programs_per_network * len(names)))
    what = f"--model {','.join(names)}" + (f" --depth {shape['depth']}" if "deeperconvnet" in names else "") + \
        (f" --blocks {shape['blocks']}" if "transformer" in names else "")
    hint = "use fewer layers (--depth, --blocks) or fewer --batch values"
    refuse_memory(BASE_BYTES + COMPILE_BYTES_PER_LAYER * layers * at_once, f"{what}: compiling", hint)
    refuse_time(COMPILE_SECONDS_PER_LAYER * total / at_once, yes, f"{what}: compiling {total} layer-programs",
                hint)


def build_networks(names: list[str], shape: dict) -> list[M.Network]:
    """Networks named in ``--model`` with their shape options (validated before any compilation)."""
    from otod.cost import models as M

    return [M.network(n, widths=shape["widths"], depth=shape["depth"], image=shape["image"],
                      shared=shape["shared"], tokens=shape["tokens"], width=shape["width"], heads=shape["heads"],
                      blocks=shape["blocks"]) for n in names]


def results_path(kind: str, config: dict, out: str) -> Path:
    """``<out>/<kind>-<digest>.json`` (one file per distinct configuration, the project's convention), or ``out``
    itself where it names a .json file."""
    if Path(out).suffix == ".json":
        return Path(out)
    from otod.core.api import digest  # imports NumPy: not on the path of `otod --help`
    return Path(out) / f"{kind}-{digest(config)}.json"


def check_cost_out(out: str) -> str:
    """--out is a folder or a .json file (what these commands write); ``x.csv`` or ``x.npz`` is refused."""
    suffix = Path(str(out)).suffix
    if suffix and suffix != ".json":
        raise OtodError(f"--out {out}: this command writes a .json results file; name a folder (no extension) or "
                        f"a .json file, e.g. --out runs/ or --out runs/flops.json")
    return str(out)


def _fmt(x: float) -> str:
    """Engineering-style FLOP count: 1.23G."""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def flops_row_text(r: dict) -> str:
    """One row of `otod flops`' table from its record (a results file's record reads back as the command printed
    it: the claims table quotes these rows)."""
    return (f"{r['model']:<14}{r['batch']:>6} {r['optimizer']:<5}{_fmt(r['params']):>8} {_fmt(r['forward_xla']):>9}"
            f"{_fmt(r['forward_formula']):>9} {_fmt(r['backward_xla']):>9}{_fmt(r['backward_formula']):>9} "
            f"{_fmt(r['update_xla']):>9}{_fmt(r['update_formula']):>9} {r['ratio_xla']:>10.3f}"
            f"{r['ratio_formula']:>8.3f}  {r['note']}")


def _seconds(x: float) -> str:
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def network_options(fn):
    """Shape options shared by `flops` and `profile`. The shape options default to None so that one given for a
    model it does not shape is refused (`shape_options`); their defaults are stated in the help."""
    options = [
        click.option("--model", "models", default="convnet", show_default=True,
                     help=f"Comma list of: {', '.join(NETWORKS)}. E.g. --model convnet,deeperconvnet"),
        click.option("--widths", default=None, help="mlp only: widths input,hidden...,output. Default 784,512,10. "
                                                    "E.g. --widths 784,512,10"),
        click.option("--depth", default=None, help="deeperconvnet only: number N of intermediate 3×3 conv layers. "
                                                   "Default 100. E.g. --depth 8"),
        click.option("--unshared", is_flag=True, help="deeperconvnet only: own weights per intermediate layer (the "
                                                      "appendix code shares one). E.g. --unshared"),
        click.option("--image", default=None, help="convnet, deeperconvnet only: image side, ≥ 16. Default 224. "
                                                   "E.g. --image 64"),
        click.option("--tokens", default=None, help="transformer only: sequence length. Default 64. E.g. --tokens 128"),
        click.option("--width", default=None, help="transformer only: model width, a multiple of --heads. Default "
                                                   "128. E.g. --width 256"),
        click.option("--heads", default=None, help="transformer only: attention heads. Default 4. E.g. --heads 8"),
        click.option("--blocks", default=None, help="transformer only: blocks. Default 1. E.g. --blocks 2"),
        click.option("--out", default="results", show_default=True,
                     help="Folder for the results file, or the .json file itself. E.g. --out runs/ or "
                          "--out runs/cost.json"),
        click.option("--json", "as_json", is_flag=True,
                     help="Print the records as JSON instead of a table. E.g. --json | jq"),
        click.option("--yes", is_flag=True, help="Run even when the estimate says it takes more than an hour. "
                                                 "E.g. --yes"),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def parse_workers(workers) -> int:
    """--workers: 0 (one compile thread per CPU) or a positive count."""
    import os

    count = positive_int(workers, "--workers", "2", minimum=0)
    return count or os.cpu_count() or 1


def common_cost_options(models, widths, depth, unshared, image, tokens, width, heads, blocks, out, batch,
                        optimizer) -> tuple[list[str], dict, tuple[int, ...], list[str]]:
    """What `flops` and `profile` check alike before JAX is imported: the models, their shapes, --out, the
    batches and the optimizers' names."""
    names = model_names(models)
    shape = shape_options(names, widths=widths, depth=depth, unshared=unshared, image=image, tokens=tokens,
                          width=width, heads=heads, blocks=blocks)
    check_cost_out(out)
    batches = check_batches(parse_list(batch, "--batch", "1,4,16"))
    optimizers = [o.lower() for o in parse_list(optimizer, "--optimizer", "sgd,adam")]
    for o in optimizers:
        if o not in OPTIMIZER_NAMES:
            raise OtodError(f"--optimizer {o}: unknown optimizer; known: {', '.join(OPTIMIZER_NAMES)}, e.g. "
                            "--optimizer sgd,adam")
    return names, shape, batches, optimizers


def check_batches(batches) -> tuple[int, ...]:
    """Batch sizes as whole numbers ≥ 1 (``1e3`` is whole too), or `OtodError` naming the bad one."""
    out = [positive_int(str(b).strip(), "--batch", "1,4,16") for b in batches]
    if not out:
        raise OtodError("--batch: give at least one batch size, e.g. --batch 1,4,16")
    return tuple(out)


@click.command("flops")
@network_options
@click.option("--batch", default="1,4,16,64,256", show_default=True,
              help="Comma list of batch sizes. E.g. --batch 1,64")
@click.option("--optimizer", default="sgd", show_default=True,
              help="Comma list of: sgd, momentum, adam. E.g. --optimizer sgd,adam")
@click.option("--workers", default="0", show_default=True,
              help="Compile threads (0: one per CPU). E.g. --workers 2")
@user_errors
def flops_command(models, widths, depth, unshared, image, tokens, width, heads, blocks, out, as_json, yes, batch,
                  optimizer, workers):
    """Forward, backward and update FLOPs of one iteration: XLA's count next to the layer formulas.

    \b
    ratio = (backward + update) / forward, the update counted into backward
    (Hobbhahn & Sevilla, Epoch AI 2021: between 1:1 and 3:1 for SGD, typically 2:1).
    Nothing is allocated: programs are compiled from abstract shapes. The compile's memory and time grow with
    the layers; they are estimated first, and a compile over an hour needs --yes.

    \b
    Examples:
      otod flops --model convnet --batch 1,4,16,64,256 --optimizer sgd,adam
      otod flops --model mlp --widths 784,512,10 --batch 1,64
    """
    names, shape, batches, optimizers = common_cost_options(models, widths, depth, unshared, image, tokens, width,
                                                            heads, blocks, out, batch, optimizer)
    threads = parse_workers(workers)
    check_shapes(names, shape, batches)
    check_compile(names, shape, 2 * len(batches) + len(optimizers), threads, yes)
    from otod.core.api import environment, save_results
    from otod.cost.flops import flops_table

    networks = build_networks(names, shape)
    start = time.perf_counter()
    rows = flops_table(networks, batches, optimizers, workers=threads)
    wall = time.perf_counter() - start
    records = [r._asdict() for r in rows]
    config = {"models": [n.name for n in networks], "model_options": {n.name: n.config for n in networks},
              "batches": list(batches), "optimizers": optimizers}
    meta = {"kind": "flops", "config": config, "environment": environment(), "precision": "float32",
            "wall_time_s": wall, "definition": "ratio = (backward + update) / forward; backward = "
                                               "value_and_grad - forward (XLA cost_analysis)"}
    path = save_results(results_path("flops", config, out), meta, records)
    if as_json:
        click.echo(json.dumps(records, indent=1))
        return
    header = (f"{'model':<14}{'batch':>6} {'opt':<5}{'params':>8} {'fwd xla':>9}{'formula':>9} {'bwd xla':>9}"
              f"{'formula':>9} {'upd xla':>9}{'formula':>9} {'ratio xla':>10}{'formula':>8}  where XLA differs")
    click.echo(header)
    for r in records:
        click.echo(flops_row_text(r))
    click.echo(f"{len(rows)} rows in {wall:.1f} s (compile included); wrote {path}")


def timing_seconds(networks, batches, optimizers, precisions, warmup: int, repeats: int) -> float:
    """A lower bound on `otod profile`'s time: per model × batch × optimizer × precision, four programs
    compiled (`COMPILE_SECONDS_PER_LAYER` per layer) and called warmup + repeats times each, a call costing at
    least `CALL_SECONDS` and its layer-formula FLOPs at `FLOPS_PER_SECOND`."""
    from otod.cost import models as M
    from otod.cost.flops import _flat_layers

    total = 0.0
    for n in networks:
        layers = len(_flat_layers(n.layers))
        for b in batches:
            a = M.analytic_flops(n, b)
            parts = (a.forward, a.backward, 4.0 * a.params, a.forward + a.backward)
            call = sum(max(CALL_SECONDS, f / FLOPS_PER_SECOND) for f in parts)
            total += len(optimizers) * len(precisions) * (4 * COMPILE_SECONDS_PER_LAYER * layers
                                                          + (warmup + repeats) * call)
    return total


@click.command("profile")
@network_options
@click.option("--batch", default="16", show_default=True, help="Comma list of batch sizes. E.g. --batch 16,64")
@click.option("--optimizer", default="sgd", show_default=True,
              help="Comma list of: sgd, momentum, adam. E.g. --optimizer sgd,adam")
@click.option("--precision", default="float32,bfloat16", show_default=True,
              help="Comma list of: float32, bfloat16 (mixed precision: bf16 compute, f32 weights). "
                   "E.g. --precision float32")
@click.option("--repeats", default="7", show_default=True, help="Timed calls per part. E.g. --repeats 20")
@click.option("--warmup", default="2", show_default=True, help="Untimed calls per part (≥ 0). E.g. --warmup 1")
@user_errors
def profile_command(models, widths, depth, unshared, image, tokens, width, heads, blocks, out, as_json, yes,
                    batch, optimizer, precision, repeats, warmup):
    """Wall-clock time of forward, backward and update on this device (median and 25–75% spread).

    \b
    The backward/forward time ratio is shown next to the FLOP ratio (XLA's count).
    Memory and time are estimated first: a model too large for memory is refused, and a run over an hour needs
    --yes.
    Example:
      otod profile --model convnet --batch 16
    """
    names, shape, batches, optimizers = common_cost_options(models, widths, depth, unshared, image, tokens, width,
                                                            heads, blocks, out, batch, optimizer)
    repeats = positive_int(repeats, "--repeats", "7")
    warmup = positive_int(warmup, "--warmup", "2", minimum=0)
    precisions = [p.lower() for p in parse_list(precision, "--precision", "float32,bfloat16")]
    for p in precisions:
        if p not in PRECISION_NAMES:
            raise OtodError(f"--precision {p}: unknown precision; known: {', '.join(PRECISION_NAMES)}, "
                            "e.g. --precision float32,bfloat16")
    check_shapes(names, shape, batches)
    check_compile(names, shape, 4, 1, yes)
    runs = len(names) * len(batches) * len(optimizers) * len(precisions)
    refuse_time(runs * 4 * (warmup + repeats) * CALL_SECONDS, yes,  # the floor, before JAX is imported
                f"--repeats {repeats} --warmup {warmup}: timing {runs} model × batch × optimizer × precision",
                "use fewer --repeats, --batch values or models")
    networks = build_networks(names, shape)
    seconds = timing_seconds(networks, batches, optimizers, precisions, warmup, repeats)
    refuse_time(seconds, yes, f"--repeats {repeats} --warmup {warmup}: timing {runs} model × batch × optimizer × "
                "precision", "use fewer --repeats, --batch values or models")
    from otod.core.api import environment, save_results
    from otod.cost.flops import flops_table
    from otod.cost.profile import check_fits, profile_one

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
    meta = {"kind": "profile", "config": config, "environment": environment(), "precision": precisions,
            "wall_time_s": wall}
    path = save_results(results_path("profile", config, out), meta, records)
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
