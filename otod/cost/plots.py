"""Figures of the cost of one iteration, run from ``experiments/cost.toml`` by ``otod figures cost``.

* ``cost-ratio-batch``: the backward/forward FLOP ratio (update counted into backward) against batch size for
  the four networks of Hobbhahn & Sevilla (Epoch AI 2021), XLA's count solid, the layer formula dashed, with the
  text's reference lines 1:1 (first layer), 2:1 (other layers) and 3:1 (maximum with SGD).
* ``cost-ratio-depth``: the same ratio against the number N of intermediate conv layers of DeeperConvNet.
* ``cost-time-split``: stacked bars of the share of forward, backward and update in one iteration, in FLOPs
  and in measured time (float32, bfloat16) on this device.

Every maker takes (spec, out_dir), computes what it needs and writes ``cost_<name>.png`` (150 dpi) and ``.pdf``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from otod.cost import flops as F  # noqa: E402
from otod.cost import models as M  # noqa: E402

from otod.core.plotting import PALETTE, caption_text, figure, legend_below, save, series_style  # noqa: E402

COLORS = {"linearnet": PALETTE[0], "onenet": PALETTE[1], "convnet": PALETTE[2], "deeperconvnet": PALETTE[3],
          "mlp": PALETTE[4], "transformer": PALETTE[5]}
MARKERS = {"linearnet": "o", "onenet": "s", "convnet": "D", "deeperconvnet": "v", "mlp": "P", "transformer": "X"}
REFERENCES = ((1.0, "1:1 first layer"), (2.0, "2:1 other layers"), (3.0, "3:1 max (SGD, small batch)"))


def _save(fig, out_dir: Path, stem: str, caption: str | None = None) -> list[Path]:
    return save(fig, Path(out_dir) / stem, caption=caption)


def _reference_lines(ax) -> None:
    """The text's reference ratios as dotted lines, named by the ratio alone at the right (the caption says
    which is which: `REFERENCES`)."""
    for y, label in REFERENCES:
        ax.axhline(y, color="0.6", lw=0.8, ls=":", zorder=0)
        ax.text(1.01, y, label.split(" ")[0], transform=ax.get_yaxis_transform(), va="center", color="0.35")


def _list(value, cast=str) -> list:
    if isinstance(value, (list, tuple)):
        return [cast(v) for v in value]
    return [cast(v) for v in str(value).split(",")]


def _network(name: str, spec: dict) -> M.Network:
    widths = tuple(spec["widths"]) if "widths" in spec else None
    return M.network(name, widths=widths, depth=int(spec.get("depth", 100)), image=int(spec.get("image", 224)))


def ratio_vs_batch(spec: dict[str, Any], out_dir: Path) -> list[Path]:
    """Ratio against batch size, one colour per network; options: models, batches, optimizer."""
    models = _list(spec.get("models", "linearnet,onenet,convnet,deeperconvnet"))
    batches = _list(spec.get("batches", [1, 4, 16, 64, 256, 1024]), int)
    optimizer = str(spec.get("optimizer", "sgd"))
    nets = [_network(m, spec) for m in models]
    rows = F.flops_table(nets, batches, [optimizer])
    fig, ax = figure(columns=2, height=2.6)
    for net in nets:
        rs = [r for r in rows if r.model == net.name]
        label = net.name + (f" (N={net.config['depth']})" if net.name == "deeperconvnet" else "")
        ax.plot([r.batch for r in rs], [r.ratio_xla for r in rs], MARKERS[net.name] + "-", color=COLORS[net.name],
                label=f"{label}, XLA")
        ax.plot([r.batch for r in rs], [r.ratio_formula for r in rs], "--", color=COLORS[net.name], lw=1,
                label=f"{label}, formula")
    _reference_lines(ax)
    ax.set_xscale("log", base=2)
    ax.set_ylim(0.8, 3.2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("(backward + update) / forward FLOPs")
    ax.set_title("The backward/forward FLOP ratio against batch size")
    legend_below(fig, ncol=2)
    return _save(fig, out_dir, f"cost_{spec.get('name', 'ratio_batch')}", caption_text(
        f"Optimizer {optimizer}, 224×224×3 inputs, the networks of Hobbhahn & Sevilla (Epoch AI 2021)",
        "Solid with markers: XLA's FLOP count (update counted into backward); dashed: the layer formula; dotted "
        "grey: the text's reference ratios 1:1 (first layer), 2:1 (other layers) and 3:1 (maximum with SGD)"))


def ratio_vs_depth(spec: dict[str, Any], out_dir: Path) -> list[Path]:
    """DeeperConvNet's ratio against the number N of intermediate conv layers; options: depths, batches, image."""
    depths = _list(spec.get("depths", [0, 1, 2, 4, 8, 16, 32, 64, 100]), int)
    batches = _list(spec.get("batches", [1, 64]), int)
    image = int(spec.get("image", 224))
    optimizer = str(spec.get("optimizer", "sgd"))
    nets = [M.deeperconvnet(n, image) for n in depths]
    rows = F.flops_table(nets, batches, [optimizer])
    fig, ax = figure(columns=1, height=2.4)
    for i, b in enumerate(batches):
        rs = [r for r in rows if r.batch == b]
        style = series_style(i)
        ax.plot(depths, [r.ratio_xla for r in rs], "osDv"[i % 4] + "-", color=style["color"], label=f"batch {b}, XLA",
                ms=7 - 2 * i if i < 2 else 4, mfc="none" if i == 0 else None)
        ax.plot(depths, [r.ratio_formula for r in rs], "--", color=style["color"], lw=1, label=f"batch {b}, formula")
    _reference_lines(ax)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(-0.2, max(depths) * 1.3)
    ax.set_ylim(0.8, 3.2)
    ax.set_xlabel("N, intermediate 3×3 conv layers")
    ax.set_ylabel("(backward + update) / forward")
    ax.set_title("The first layer's 1:1 fades with depth")
    legend_below(fig, ncol=2)
    return _save(fig, out_dir, f"cost_{spec.get('name', 'ratio_depth')}", caption_text(
        f"DeeperConvNet, optimizer {optimizer}, {image}×{image} inputs",
        "Markers: XLA's FLOP count; dashed: the layer formula; dotted grey: the reference ratios 1:1 (first layer), "
        "2:1 (other layers) and 3:1 (maximum with SGD, small batch). The batches "
        "coincide: the SGD update is negligible next to the convolutions"))


def time_split(spec: dict[str, Any], out_dir: Path) -> list[Path]:
    """Share of forward, backward and update in one iteration: FLOPs (XLA) and measured time per precision.

    Options: models (each may carry ``:depth`` for deeperconvnet), batch, optimizer, precisions, repeats."""
    from otod.cost.profile import profile_one

    models = _list(spec.get("models", "onenet,mlp,transformer,convnet,deeperconvnet"))
    batch = int(spec.get("batch", 16))
    optimizer = str(spec.get("optimizer", "sgd"))
    precisions = _list(spec.get("precisions", "float32,bfloat16"))
    repeats = int(spec.get("repeats", 5))
    nets = [_network(m, spec) for m in models]
    flops = {r.model: r for r in F.flops_table(nets, [batch], [optimizer])}
    bars = []  # (group label, bar label, forward, backward, update, annotation)
    for net in nets:
        f = flops[net.name]
        total = f.forward_xla + f.backward_xla + f.update_xla
        bars.append((net.name, "FLOPs", f.forward_xla / total, f.backward_xla / total, f.update_xla / total,
                     f"{f.ratio_xla:.2f}"))
        for p in precisions:
            t = profile_one(net, batch, optimizer, p, warmup=2, repeats=repeats, fused=False)
            s = t.forward_s + t.backward_s + t.update_s
            bars.append((net.name, "bf16" if p == "bfloat16" else "fp32", t.forward_s / s, t.backward_s / s,
                         t.update_s / s, f"{t.time_ratio:.2f}, " + (f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s")))
    fig, ax = figure(columns=2, height=2.8)
    xs, gap, x = [], 0.6, 0.0
    for i, bar in enumerate(bars):
        if i and bar[0] != bars[i - 1][0]:
            x += gap
        xs.append(x)
        x += 1
    parts = (("forward", PALETTE[5], None), ("backward", PALETTE[1], "////"), ("update", PALETTE[2], ".."))
    for k, (name, color, hatch) in enumerate(parts):  # hatched too: a grey-scale print tells the parts apart
        bottoms = [sum(b[2:2 + k]) for b in bars]
        ax.bar(xs, [b[2 + k] for b in bars], bottom=bottoms, color=color, width=0.8, label=name, hatch=hatch,
               edgecolor=["black" if b[1] == "FLOPs" else "none" for b in bars], linewidth=0.6)
    for xi, b in zip(xs, bars):
        ax.text(xi, 1.02, b[5], ha="center", va="bottom", fontsize=7, rotation=90)  # upright, they overlap
    ax.axhline(1 / 3, color="0.3", ls="--", lw=0.8, label="forward share at 2:1")
    ax.axhline(1 / 4, color="0.3", ls=":", lw=0.8, label="forward share at 3:1 (backward ≈ 3× forward: Li et al. 2020, V100)")
    ax.set_xticks(xs, [b[1] for b in bars], rotation=90)
    groups = {}
    for xi, b in zip(xs, bars):
        groups.setdefault(b[0], []).append(xi)
    for name, gx in groups.items():
        net = next(n for n in nets if n.name == name)
        label = name + (f"\nN={net.config['depth']}" if name == "deeperconvnet" else "")
        ax.text(sum(gx) / len(gx), -0.2, label, ha="center", va="top", transform=ax.get_xaxis_transform())
    ax.set_ylim(0, 1.6)
    ax.set_ylabel("share of one iteration")
    import jax

    device = getattr(jax.devices()[0], "device_kind", "cpu")
    ax.set_title("Forward, backward and update: their shares of FLOPs and of time")
    legend_below(fig, ncol=2)
    return _save(fig, out_dir, f"cost_{spec.get('name', 'time_split')}", caption_text(
        f"Batch {batch}, optimizer {optimizer}, time measured on {device} ({repeats} repeats after 2 warm-ups)",
        "Outlined bars: shares of XLA's FLOPs; the others: shares of measured time per precision. Above each bar: "
        "the (backward + update)/forward ratio, and for timed bars the time per iteration"))


MAKERS: dict[str, Callable[[dict, Path], list[Path]]] = {
    "cost-ratio-batch": ratio_vs_batch,
    "cost-ratio-depth": ratio_vs_depth,
    "cost-time-split": time_split,
}
