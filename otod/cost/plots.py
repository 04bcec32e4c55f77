"""Figures of the cost of one iteration, run from ``experiments/cost.toml`` by ``otod figures cost``.

* ``cost-ratio-batch``: the backward/forward FLOP ratio (update counted into backward) against batch size for
  the four networks of Hobbhahn & Sevilla (Epoch AI 2021), XLA's count solid, the layer formula dashed, with the
  text's reference lines 1:1 (first layer), 2:1 (other layers) and 3:1 (maximum with SGD).
* ``cost-ratio-depth``: the same ratio against the number N of intermediate conv layers of DeeperConvNet.
* ``cost-time-split``: stacked horizontal bars of the share of forward, backward and update in one iteration,
  in FLOPs and in measured time (float32, bfloat16) on this device, the ratio and the time per iteration beside
  each bar; the caption names the machine and the date (timings are the machine's and its load's).

Every maker takes (spec, out_dir), computes what it needs and writes ``cost_<name>.png`` (150 dpi) and ``.pdf``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from otod.cost import flops as F  # noqa: E402
from otod.cost import models as M  # noqa: E402

from otod.core.api import caption_text, figure, FigureSpec, legend_below, PALETTE, save, series_style, TypedMaker

COLORS = {"linearnet": PALETTE[0], "onenet": PALETTE[1], "convnet": PALETTE[2], "deeperconvnet": PALETTE[3],
          "mlp": PALETTE[4], "transformer": PALETTE[5]}
MARKERS = {"linearnet": "o", "onenet": "s", "convnet": "D", "deeperconvnet": "v", "mlp": "P", "transformer": "X"}
#: The networks as the Epoch text writes them (the command line takes the lower-case names).
DISPLAY = {"linearnet": "LinearNet", "onenet": "OneNet", "convnet": "ConvNet", "deeperconvnet": "DeeperConvNet",
           "mlp": "MLP", "transformer": "Transformer"}
REFERENCES = ((1.0, "1:1 first layer"), (2.0, "2:1 other layers"), (3.0, "3:1 max (SGD, small batch)"))


def _save(fig, out_dir: Path, stem: str, caption: str | None = None) -> list[Path]:
    return save(fig, Path(out_dir) / stem, caption=caption)


def _display(net: M.Network) -> str:
    """The network's name as the text writes it, DeeperConvNet with its N."""
    name = DISPLAY.get(net.name, net.name)
    return name + (f" (N = {net.config['depth']})" if net.name == "deeperconvnet" else "")


def _reference_lines(ax) -> None:
    """The text's reference ratios as dotted lines, named by the ratio alone at the right (the caption says
    which is which: `REFERENCES`)."""
    for y, label in REFERENCES:
        ax.axhline(y, color="0.6", lw=0.8, ls=":", zorder=0)
        ax.text(1.01, y, label.split(" ")[0], transform=ax.get_yaxis_transform(), va="center", color="0.35")


def _count_keys(ax) -> None:
    """Two grey legend entries drawn on no data: XLA's count solid, the layer formula dashed (the colours and
    markers name the networks or batches)."""
    ax.plot([], [], "-", color="0.35", label="XLA's count")
    ax.plot([], [], "--", color="0.35", lw=1, label="layer formula")


def _plain_ticks(axis, values) -> None:
    """Ticks at ``values`` labelled as plain numbers (1, 16, 1024: not 2⁴ or 10¹), minor ticks unlabelled."""
    import matplotlib.ticker

    axis.set_major_locator(matplotlib.ticker.FixedLocator(values))
    axis.set_major_formatter(matplotlib.ticker.FixedFormatter([f"{v:g}" for v in values]))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _list(value, cast=str) -> list:
    if isinstance(value, (list, tuple)):
        return [cast(v) for v in value]
    return [cast(v) for v in str(value).split(",")]


@dataclass(frozen=True)
class NetworksSpec(FigureSpec):
    """The networks of a cost figure: ``models`` (a comma list or a list of `otod.cost.models` names), built with
    ``depth`` intermediate layers (deeperconvnet), ``image`` pixels a side and ``widths`` (the MLP's; None: its
    own), measured at ``batches`` with ``optimizer``'s update."""

    models: str | tuple[str, ...] = "linearnet,onenet,convnet,deeperconvnet"
    batches: str | tuple[int, ...] = (1, 4, 16, 64, 256, 1024)
    optimizer: str = "sgd"
    depth: int = 100
    image: int = 224
    widths: tuple[int, ...] | None = None


@dataclass(frozen=True)
class DepthSpec(FigureSpec):
    """`ratio_vs_depth`'s table: DeeperConvNet at each of ``depths`` intermediate conv layers."""

    depths: str | tuple[int, ...] = (0, 1, 2, 4, 8, 16, 32, 64, 100)
    batches: str | tuple[int, ...] = (1, 64)
    image: int = 224
    optimizer: str = "sgd"


@dataclass(frozen=True)
class TimeSplitSpec(NetworksSpec):
    """`time_split`'s table: the networks at one ``batch``, timed in each of ``precisions`` (median of
    ``repeats``)."""

    models: str | tuple[str, ...] = "onenet,mlp,transformer,convnet,deeperconvnet"
    batch: int = 16
    precisions: str | tuple[str, ...] = "float32,bfloat16"
    repeats: int = 5


def _network(name: str, spec: NetworksSpec) -> M.Network:
    widths = tuple(spec.widths) if spec.widths is not None else None
    return M.network(name, widths=widths, depth=int(spec.depth), image=int(spec.image))


def ratio_vs_batch(spec: NetworksSpec, out_dir: Path) -> list[Path]:
    """Ratio against batch size, one colour and marker per network; options: models, batches, optimizer."""
    models = _list(spec.models)
    batches = _list(spec.batches, int)
    optimizer = str(spec.optimizer)
    nets = [_network(m, spec) for m in models]
    rows = F.flops_table(nets, batches, [optimizer])
    fig, ax = figure(columns=2, height=2.6)
    for net in nets:
        rs = [r for r in rows if r.model == net.name]
        ax.plot([r.batch for r in rs], [r.ratio_xla for r in rs], MARKERS[net.name] + "-", color=COLORS[net.name],
                label=_display(net))
        ax.plot([r.batch for r in rs], [r.ratio_formula for r in rs], "--", color=COLORS[net.name], lw=1)
    _count_keys(ax)
    _reference_lines(ax)
    ax.set_xscale("log", base=2)
    _plain_ticks(ax.xaxis, [b for b in (1, 4, 16, 64, 256, 1024, 4096) if min(batches) <= b <= max(batches)])
    ax.set_ylim(0.8, 3.2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("(backward + update) / forward FLOPs")
    ax.set_title("The backward/forward FLOP ratio against batch size")
    legend_below(fig, ncol=3)
    return _save(fig, out_dir, f"cost_{spec.name}", caption_text(
        f"Optimizer {optimizer}, 224×224×3 inputs, the networks of Hobbhahn & Sevilla (Epoch AI 2021)",
        "Solid with markers: XLA's FLOP count (update counted into backward); dashed, same colour: the layer "
        "formula; dotted grey: the text's reference ratios 1:1 (first layer), 2:1 (other layers) and 3:1 "
        "(maximum with SGD)", _batch_one_note(rows)))


def _batch_one_note(rows) -> str:
    """Where XLA's count and the formula part at batch 1 and meet from batch 2 on, why (read from ``rows``): the
    weight gradient at batch 1 is an outer product, a contraction of length 1, which XLA counts as one multiply
    per weight where the formula counts 2·B = 2 FLOPs."""
    apart = sorted({r.model for r in rows if r.batch == 1 and abs(r.ratio_xla - r.ratio_formula) > 0.05})
    met = all(abs(r.ratio_xla - r.ratio_formula) <= 0.05 * r.ratio_formula for r in rows
              if r.model in apart and r.batch > 1)
    if not apart or not met:
        return ""
    names = " and ".join(DISPLAY.get(m, m) for m in apart)
    return (f"{names}: XLA's count lies under the formula at batch 1 alone, where the weight gradient is an outer "
            "product (a contraction of length 1) that XLA counts as one multiply per weight, the formula as two "
            "FLOPs")


def ratio_vs_depth(spec: DepthSpec, out_dir: Path) -> list[Path]:
    """DeeperConvNet's ratio against the number N of intermediate conv layers; options: depths, batches, image."""
    depths = _list(spec.depths, int)
    batches = _list(spec.batches, int)
    image = int(spec.image)
    optimizer = str(spec.optimizer)
    nets = [M.deeperconvnet(n, image) for n in depths]
    rows = F.flops_table(nets, batches, [optimizer])
    fig, ax = figure(columns=1, height=2.4)
    for i, b in enumerate(batches):
        rs = [r for r in rows if r.batch == b]
        style = series_style(i)
        ax.plot(depths, [r.ratio_xla for r in rs], "osDv"[i % 4] + "-", color=style["color"], label=f"batch {b}",
                ms=7 - 2 * i if i < 2 else 4, mfc="none" if i == 0 else None)
        ax.plot(depths, [r.ratio_formula for r in rs], "--", color=style["color"], lw=1)
    _count_keys(ax)
    _reference_lines(ax)
    ax.set_xscale("symlog", linthresh=1)
    _plain_ticks(ax.xaxis, [v for v in (0, 1, 10, 100, 1000) if v <= max(depths)])
    ax.set_xlim(-0.2, max(depths) * 1.3)
    ax.set_ylim(0.8, 3.2)
    ax.set_xlabel("N, intermediate 3×3 conv layers")
    ax.set_ylabel("(backward + update) / forward")
    ax.set_title("The first layer's 1:1 fades with depth")
    legend_below(fig, ncol=2)
    return _save(fig, out_dir, f"cost_{spec.name}", caption_text(
        f"DeeperConvNet, optimizer {optimizer}, {image}×{image} inputs",
        "Markers joined by solid lines: XLA's FLOP count; dashed: the layer formula; dotted grey: the reference "
        "ratios 1:1 (first layer), 2:1 (other layers) and 3:1 (maximum with SGD, small batch). The batches "
        "coincide: the SGD update is negligible next to the convolutions"))


def time_split(spec: TimeSplitSpec, out_dir: Path) -> list[Path]:
    """Share of forward, backward and update in one iteration: FLOPs (XLA) and measured time per precision.

    Options: models (each may carry ``:depth`` for deeperconvnet), batch, optimizer, precisions, repeats."""
    import datetime
    import os

    from otod.cost.profile import profile_one

    models = _list(spec.models)
    batch = int(spec.batch)
    optimizer = str(spec.optimizer)
    precisions = _list(spec.precisions)
    repeats = int(spec.repeats)
    nets = [_network(m, spec) for m in models]
    flops = {r.model: r for r in F.flops_table(nets, [batch], [optimizer])}
    bars = []  # (network, bar label, forward, backward, update share, ratio, seconds per iteration or None)
    for net in nets:
        f = flops[net.name]
        total = f.forward_xla + f.backward_xla + f.update_xla
        bars.append((_display(net), "FLOPs", f.forward_xla / total, f.backward_xla / total, f.update_xla / total,
                     f.ratio_xla, None))
        for p in precisions:
            t = profile_one(net, batch, optimizer, p, warmup=2, repeats=repeats, fused=False)
            s = t.forward_s + t.backward_s + t.update_s
            bars.append((_display(net), "bf16 time" if p == "bfloat16" else "fp32 time", t.forward_s / s,
                         t.backward_s / s, t.update_s / s, t.time_ratio, s))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")  # the load the timings ran under
    fig = _draw_time_split(bars)
    when = datetime.date.today().isoformat()
    return _save(fig, out_dir, f"cost_{spec.name}", caption_text(
        f"Batch {batch}, optimizer {optimizer}; time measured on {when} on {_machine()} ({os.cpu_count()} cores, "
        f"1-minute load average {load:.1f} at the end of the timings, this run included), each part the median "
        f"of {repeats} repeats after 2 warm-ups: timings are this machine's and its load's, the FLOP shares are not",
        "Outlined bars: shares of XLA's FLOPs; the others: shares of measured time per precision. Right of each "
        "bar: the (backward + update)/forward ratio, and for timed bars the time per iteration (forward + "
        "backward + update, each a median). Vertical lines: the forward share at ratio 2:1 (1/3) and at 3:1 (1/4; "
        "backward ≈ 3× forward: Li et al. 2020, V100)"))


def _machine() -> str:
    """What the timings ran on: the accelerator's kind, or on a CPU its model name."""
    import jax

    from otod.core.api import cpu_model

    device = jax.devices()[0]
    return cpu_model() if device.platform == "cpu" else getattr(device, "device_kind", device.platform)


def _three_digits(x: float) -> str:
    """``x`` (> 0) to three significant digits, trailing zeros kept so that a column reads alike: 1.30, 42.6, 646."""
    import math

    x = float(f"{x:.3g}")  # rounded first: 9.996 is 10.0, not 10.00
    return f"{x:.{max(0, 2 - math.floor(math.log10(x)))}f}"


#: The parts of one iteration as stacked bar segments: name, colour, hatch (a grey-scale print tells them apart).
PARTS = (("forward", PALETTE[5], None), ("backward", PALETTE[1], "////"), ("update", PALETTE[2], ".."))


def _draw_time_split(bars: list[tuple]):
    """The time-split figure of ``bars`` (network, label, forward, backward, update share, ratio, seconds or None):
    one horizontal stacked bar each, top to bottom, networks named left of their groups, ratio and time per
    iteration as two columns right of the axes."""
    fig, ax = figure(columns=2, height=0.13 * len(bars) + 1.2)
    ys, gap, y = [], 0.6, 0.0
    for i, bar in enumerate(bars):
        if i and bar[0] != bars[i - 1][0]:
            y += gap
        ys.append(y)
        y += 1
    for k, (name, color, hatch) in enumerate(PARTS):
        lefts = [sum(b[2:2 + k]) for b in bars]
        ax.barh(ys, [b[2 + k] for b in bars], left=lefts, color=color, height=0.8, label=name, hatch=hatch,
                edgecolor=["black" if b[6] is None else "none" for b in bars], linewidth=0.6)
    ax.axvline(1 / 3, color="0.2", ls="--", lw=0.8, label="forward share at 2:1")
    ax.axvline(1 / 4, color="0.2", ls=":", lw=0.9, label="forward share at 3:1")
    ax.set_yticks(ys, [b[1] for b in bars])
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(ys[-1] + 0.7, -1.3)  # top to bottom, a row above the first bar for the column heads
    ax.set_xlim(0, 1)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0", "0.25", "0.5", "0.75", "1"])
    ax.set_xlabel("share of one iteration")
    fig.draw_without_rendering()  # the tick labels' width: the network names go left of them
    ticks = max(t.get_window_extent().width for t in ax.get_yticklabels()) * 72 / fig.dpi
    for name in dict.fromkeys(b[0] for b in bars):
        at = [yi for yi, b in zip(ys, bars) if b[0] == name]
        ax.annotate(name.replace(" (", "\n("), (0, sum(at) / len(at)), xycoords=("axes fraction", "data"),
                    xytext=(-ticks - 10, 0), textcoords="offset points", ha="right", va="center")
    for yi, b in zip(ys, bars):
        ax.annotate(f"{b[5]:.2f}", (1, yi), xycoords=("axes fraction", "data"), xytext=(6, 0),
                    textcoords="offset points", ha="left", va="center")
        if b[6] is not None:
            ax.annotate(_three_digits(b[6] * 1e3) + " ms" if b[6] < 1 else _three_digits(b[6]) + " s", (1, yi),
                        xycoords=("axes fraction", "data"), xytext=(34, 0), textcoords="offset points",
                        ha="left", va="center")
    for text, dx in (("ratio", 6), ("time", 34)):
        ax.annotate(text, (1, -1.0), xycoords=("axes fraction", "data"), xytext=(dx, 0),
                    textcoords="offset points", ha="left", va="center", color="0.35")
    backward_heavier = all(b[5] > f[5] for f in bars if f[6] is None for b in bars if b[6] is not None and b[0] == f[0])
    ax.set_title("Backward takes a larger share of the time than of the FLOPs" if backward_heavier else
                 "Forward, backward and update: their shares of FLOPs and of time")
    order = [name for name, *_ in PARTS]
    legend_below(fig, ncol=3, sort_key=lambda label: order.index(label) if label in order else len(order))
    return fig


MAKERS: dict[str, TypedMaker] = {
    "cost-ratio-batch": TypedMaker(NetworksSpec, ratio_vs_batch),
    "cost-ratio-depth": TypedMaker(DepthSpec, ratio_vs_depth),
    "cost-time-split": TypedMaker(TimeSplitSpec, time_split),
}
