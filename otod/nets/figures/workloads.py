"""The workloads figure (``otod figures nets/workloads``, issue 36 item 4): the gradient noise scales of three
nets side by side along one SGD run each, the digits MLP, otod's CNN on the same digits and the small transformer
on modular addition (`otod.nets.model.zoo`), so that a convolution and an attention model are measured beside the MLP.

Each net is a model-contract instance (`otod.nets.model.contract.from_spec` for otod's own nets, ``otod.nets.model.zoo`` for
the transformer) measured by `otod.nets.api.measure_noise` (the numbers of ``otod noise-scale --model``): at each
checkpoint of an SGD run (lr, B = 32, seed 0; float32 training, float64 measurement) the exact
B_simple = tr Σ/|G|² over all the training examples, and B_noise = tr(HΣ)/GᵀHG with tr(HΣ) the mean of
``trace_examples`` per-example terms (drawn once; its standard error is drawn as a bar), McCandlish et al. 2018's
two noise scales. No two-batch estimates (pairs = none): the exact ones are what the figure shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from otod.core.api import FigureSpec, TypedMaker

#: The nets: (label, how to build its contract instance). The CNN's width 16 puts its P (2,730) beside the
#: MLP's (2,410).
NETS = ("mlp", "cnn", "transformer")


@dataclass(frozen=True)
class WorkloadsSpec(FigureSpec):
    """`make_workloads`'s table: the SGD run of each net (``lr``, minibatch ``batch``, measured at ``checkpoints``),
    tr(HΣ) from ``trace_examples`` drawn examples, and the widths of otod's two nets (``mlp_width`` hidden units,
    ``cnn_width`` channels)."""

    checkpoints: tuple[int, ...] = (0, 100, 1000)
    lr: float = 0.1
    batch: int = 32
    trace_examples: int = 64
    mlp_width: int = 32
    cnn_width: int = 16


def workload(name: str, spec: WorkloadsSpec):
    """The checked contract instance of one of `NETS` (module docstring)."""
    from otod.nets.model.contract import check, from_spec
    from otod.nets.model.problem import NetSpec

    if name == "transformer":
        from otod.nets.model import zoo

        return check(*zoo.transformer(), where="otod.nets.model.zoo:transformer", name="transformer (mod 23)")
    width = int(spec.mlp_width if name == "mlp" else spec.cnn_width)
    return from_spec(NetSpec(model=name, width=width, depth=2, data="digits"))


#: The kind (the name's prefix) of the results file the figure keeps (`measured`).
KIND = "nets-workloads"


def settings(spec: WorkloadsSpec) -> dict:
    """What the measurement depends on (the results file is named by its digest): the nets and the spec's run."""
    return {"kind": KIND, "nets": list(NETS), "checkpoints": [int(s) for s in spec.checkpoints], "lr": float(spec.lr),
            "batch": int(spec.batch), "trace_examples": int(spec.trace_examples), "mlp_width": int(spec.mlp_width),
            "cnn_width": int(spec.cnn_width)}


def measure_all(spec: WorkloadsSpec) -> list[dict]:
    """Each net's records (one per checkpoint) from `otod.nets.api.measure_noise`, each with its ``net``."""
    from otod.nets.api import measure_noise

    steps = [int(s) for s in spec.checkpoints]
    out = []
    for name in NETS:
        model = workload(name, spec)
        result = measure_noise(model, steps, lr=float(spec.lr), batch=int(spec.batch), pairs=[],
                               trace_examples=int(spec.trace_examples))
        out += [{"net": name, **dict(r)} for r in result.records]
    return out


def by_net(records: list[dict]) -> dict[str, list[dict]]:
    """The records of each net, in `NETS`' order."""
    return {name: [r for r in records if r["net"] == name] for name in NETS}


def measured(spec: WorkloadsSpec, folder: str = "results") -> dict[str, list[dict]]:
    """`measure_all`'s records by net (`by_net`), read back from ``<folder>/nets-workloads-<digest>.parquet`` where
    an earlier run wrote it (the committed file: ``committed = true`` in experiments/nets.toml), else measured and
    written there (`otod.core.results.kept`)."""
    from otod.core.api import kept

    return by_net(kept(KIND, settings(spec), lambda: measure_all(spec), folder, suffix=".parquet").records)


def _label(name: str, records: list[dict]) -> str:
    first, last = records[0], records[-1]
    title = {"mlp": "MLP on digits", "cnn": "CNN on digits", "transformer": "transformer, (a+b) mod 23"}[name]
    return (f"{title}: P = {int(first['parameters']):,}, n = {int(first['examples']):,}; loss "
            f"{first['loss']:.3g} → {last['loss']:.3g}")


def make_workloads(spec: WorkloadsSpec, out_dir: Path) -> list[Path]:
    """B_simple and B_noise against the SGD step for the MLP, the CNN and the transformer (module docstring)."""
    from otod.core.api import caption_text, figure, legend_below, save, series_style

    records = measured(spec)
    fig, (left, right) = figure(columns=2, cols=2, height=2.6)
    for i, (name, rs) in enumerate(records.items()):
        style = series_style(i)
        steps = np.array([r["step"] for r in rs], float)
        left.plot(steps, [r["b_simple"] for r in rs], marker=style["marker"], ls=style["ls"], color=style["color"],
                  label=_label(name, rs))
        b_noise = np.array([r["b_noise"] for r in rs], float)
        # B_noise's 1-sigma bar from tr(HΣ)'s standard error (GᵀHG is exact)
        se = np.array([r["trace_h_sigma_se"] / r["gHg"] if r["gHg"] else np.nan for r in rs], float)
        right.errorbar(steps, b_noise, yerr=np.abs(se), marker=style["marker"], ls=style["ls"], color=style["color"],
                       capsize=2)
    for ax, what in ((left, "B_simple = tr Σ / |G|²"), (right, "B_noise = tr(HΣ) / GᵀHG")):
        ax.set_xscale("symlog", linthresh=10, linscale=0.5)
        ax.set_yscale("log")
        ax.set(xlabel=f"SGD step (B = {int(spec.batch)})", ylabel=what)
        ax.grid(alpha=0.25, which="major")
    left.set_title("Simple noise scale (exact, all examples)")
    right.set_title("Hessian-weighted noise scale")
    legend_below(fig, axes=[left], ncol=1)
    k = int(spec.trace_examples)
    return save(fig, out_dir / f"nets_{spec.name}", caption=caption_text(
        f"Settings: SGD lr {float(spec.lr):g}, B = {int(spec.batch)}, seed 0, float32 "
        "training, float64 measurement (otod.nets.api.measure_noise, the numbers of otod noise-scale --model "
        "FILE.py:NAME: the model contract's minibatch order, not that of otod noise-scale --model mlp, whose run "
        "from the same start reads other values after step 0); the "
        f"MLP (one hidden relu layer of {spec.mlp_width}) and the CNN (one 3×3 convolution of {spec.cnn_width} "
        "channels, 2×2 average pool, dense) "
        "on the 1,438 digits training images, the transformer (otod.nets.model.zoo:transformer: one pre-LN causal "
        "attention layer, d 24, 2 heads) on all 529 pairs of modular addition mod 23",
        "Left: B_simple = tr Σ/|G|² (McCandlish et al. 2018), exact over all training examples, at each "
        f"checkpoint. Right: B_noise = tr(HΣ)/GᵀHG with tr(HΣ) the mean over {k} drawn examples' terms, bars "
        "± its standard error; GᵀHG exact. The legend gives each net's parameter count P, examples n and its "
        "training loss at the first and last checkpoints"))


MAKERS = {"nets-workloads": TypedMaker(WorkloadsSpec, make_workloads)}
