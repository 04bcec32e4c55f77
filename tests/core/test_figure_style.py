"""The paper style, checked on SAVED figures (issue 35, item 5): a figure's PDF page is at most two columns
(7.0 in) wide (5.5 in, one NeurIPS text block, in the neurips style: issue 50), no text in it is drawn below 7 pt (read from the PDF's text operators: the size operand of each
``Tf``), and no two of its series share both colour and marker (read from the saved figure's legend entries;
a series drawn without markers is told apart by its line style instead).

The fast tests save a few cheap figures from small fixture results, in the paper and the neurips style; the slow
one checks every figure ``otod figures`` makes (``python3 -m pytest -m slow tests/core/test_figure_style.py``)."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures"
MAX_WIDTH_IN = 7.0
MIN_PT = 7.0
#: The page widths (in) each printed style may save: one column and the full text width of a two-column paper;
#: half and the full width of a 5.5 in NeurIPS text block (`otod.core.plotting.NEURIPS_WIDTHS`, written out here
#: so that a change of the style's sizes fails this test).
STYLE_WIDTHS = {"paper": (3.4, 7.0), "neurips": (2.7, 5.5)}


# -- readers of a saved PDF -----------------------------------------------------------------------------------------


def _streams(data: bytes):
    """The PDF's content streams, inflated where compressed (FlateDecode)."""
    for match in re.finditer(rb"<<(.*?)>>\s*stream\r?\n", data, re.S):
        start = match.end()
        end = data.index(b"endstream", start)
        raw = data[start:end]
        if b"/FlateDecode" in match.group(1):
            try:
                raw = zlib.decompress(raw)
            except zlib.error:
                continue
        yield raw


def pdf_page_widths(path: Path) -> list[float]:
    """Each page's width in inches (its MediaBox)."""
    data = Path(path).read_bytes()
    return [(float(b[2]) - float(b[0])) / 72 for b in
            re.findall(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]", data)]


def pdf_font_sizes(path: Path) -> list[float]:
    """The size of every font a text object selects (``size Tf``) in the page content, in points. Matplotlib
    writes text with a unit text matrix (``Tm`` carries only rotation and position), so these are the sizes as
    printed at the page's size."""
    sizes = []
    for stream in _streams(Path(path).read_bytes()):
        if b"BT" not in stream:
            continue
        sizes += [float(s) for s in re.findall(rb"/[\w.+-]+\s+([-\d.]+)\s+Tf\b", stream)]
    return sizes


def series_clashes(fig) -> list[tuple]:
    """Groups of entries of one legend of ``fig`` (its axes' and its figure legends) that share colour and marker (or,
    without markers, colour and line style): series a reader cannot tell apart in grey scale or colour-blind."""
    from matplotlib.colors import to_hex
    from matplotlib.container import ErrorbarContainer
    from matplotlib.lines import Line2D

    clashes = []
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    for legend in legends:  # one legend's series: panels with legends of their own may reuse a style
        entries = {}
        for handle, text in zip(legend.legend_handles, legend.get_texts()):
            line = handle.lines[0] if isinstance(handle, ErrorbarContainer) else handle
            if not isinstance(line, Line2D):
                continue
            marker = line.get_marker()
            blank_marker = marker in (None, "", " ", "None", "none")
            if blank_marker and line.get_linestyle() in ("None", "", " ", "none"):
                continue  # a text-only entry
            key = (to_hex(line.get_color()), "ls " + str(line.get_linestyle()) if blank_marker else str(marker),
                   str(line.get_markerfacecolor()) if not blank_marker else "")
            entries.setdefault(key, []).append(text.get_text())
        clashes += [(key, names) for key, names in entries.items() if len(set(names)) > 1]
    return clashes


#: Mathtext draws a sub- or superscript at this share of its text's size (matplotlib's ``SHRINK_FACTOR``), as TeX
#: does: the one text allowed under `MIN_PT`, and only as the script of a text drawn at `MIN_PT` or more.
SCRIPT_SHARE = 0.7
LEGEND_SHARE = 1 / 3


def _texts(fig):
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


def script_sizes(fig) -> set[float]:
    """The sizes (pt, 2 decimals) mathtext draws the scripts of ``fig``'s texts at: `SCRIPT_SHARE` of each text at
    `MIN_PT` or more whose mathtext holds a sub- or superscript."""
    return {round(t.get_fontsize() * SCRIPT_SHARE, 2) for t in _texts(fig) if t.get_fontsize() >= MIN_PT - 0.01
            and any(c in m for m in re.findall(r"\$[^$]*\$", t.get_text()) for c in "_^")}


def literal_underscores(fig) -> list[str]:
    """Texts of ``fig`` that show an underscore or a caret (one outside mathtext ``$…$``): B_crit where B with a
    subscript is meant, κ^b where κ with a superscript is."""
    return [t.get_text() for t in _texts(fig) if set("_^") & set(re.sub(r"\$[^$]*\$", "", t.get_text()))]


def tall_legends(fig) -> list[float]:
    """The share of ``fig``'s height each of its legends takes that is taller than `LEGEND_SHARE`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    if not hasattr(fig.canvas, "get_renderer"):  # a closed figure: a canvas to measure on
        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    shares = [leg.get_window_extent(renderer).height / (fig.get_figheight() * fig.dpi) for leg in legends
              if leg.get_visible()]
    return [share for share in shares if share > LEGEND_SHARE + 0.005]


def panel_letter_problems(fig) -> list[str]:
    """Panel letters where they do not belong: any in a figure of one panel; in a figure of several, letters
    other than (a), (b), … in order."""
    from otod.core.plotting import panels

    found = panels(fig)
    letters = [m.group(1) for ax in found for m in [re.match(r"\((\w)\)", ax.get_title())] if m]
    if len(found) < 2:
        return [f"a single-panel figure lettered ({', '.join(letters)})"] if letters else []
    want = [chr(ord("a") + i) for i in range(len(found))]
    return [] if letters in ([], want) else [f"panels lettered {letters}, not {want}"]


def style_problems(pdf: Path, fig=None, widths: tuple[float, ...] | None = None) -> list[str]:
    """What breaks the paper style in a saved figure (empty: nothing). The page at most `MAX_WIDTH_IN` wide, or
    with ``widths`` (a style's, `STYLE_WIDTHS`) exactly one of them. With ``fig`` (the figure saved) also what
    only its artists tell: series that share colour and marker, literal underscores, legends taller than a third
    of the figure, panel letters in the wrong place; and the sizes its mathtext scripts are drawn at are allowed."""
    problems = [f"{pdf.name}: page {w:.2f} in wide (> {MAX_WIDTH_IN} in)" for w in pdf_page_widths(pdf)
                if w > MAX_WIDTH_IN + 0.005]
    if widths is not None:
        problems += [f"{pdf.name}: page {w:.2f} in wide (not one of the style's {widths} in)"
                     for w in pdf_page_widths(pdf) if min(abs(w - v) for v in widths) > 0.005]
    scripts = script_sizes(fig) if fig is not None else set()
    small = sorted({s for s in pdf_font_sizes(pdf) if s < MIN_PT - 0.01 and round(s, 2) not in scripts})
    if small:
        problems.append(f"{pdf.name}: text drawn at {', '.join(f'{s:g}' for s in small)} pt (< {MIN_PT:g} pt)")
    if fig is not None:
        problems += [f"{pdf.name}: series {names} share colour and marker {key}" for key, names in series_clashes(fig)]
        problems += [f"{pdf.name}: literal underscore or caret in {text!r}" for text in literal_underscores(fig)]
        problems += [f"{pdf.name}: a legend {share:.0%} of the figure's height (> 1/3)" for share in tall_legends(fig)]
        problems += [f"{pdf.name}: {why}" for why in panel_letter_problems(fig)]
    return problems


@pytest.fixture
def kept_figures(monkeypatch):
    """Every figure `otod.core.plotting.save` closes after saving, kept (its artists stay readable)."""
    from otod.core import plotting

    kept = []
    close = plotting.plt.close

    def keep(fig=None):
        if fig is not None and not isinstance(fig, str):
            kept.append(fig)
        close(fig)

    monkeypatch.setattr(plotting.plt, "close", keep)
    return kept


@pytest.fixture(params=sorted(STYLE_WIDTHS))
def print_style(request):
    """Each printed style in turn (paper, neurips), in force for the test; the one before is restored after."""
    from otod.core.plotting import styled

    with styled(request.param):
        yield request.param


def _check_saved(out: Path, figs, style: str = "paper") -> None:
    """Every PDF in ``out`` keeps ``style`` (`style_problems`, its page one of the style's widths)."""
    pdfs = sorted(out.glob("*.pdf"))
    assert pdfs, f"no PDF saved in {out}"
    by_name = {}
    for fig in figs:
        by_name.setdefault(getattr(fig, "_otod_saved_as", None), fig)
    problems = []
    for pdf in pdfs:
        problems += style_problems(pdf, by_name.get(pdf.with_suffix("").name), STYLE_WIDTHS[style])
    assert not problems, "\n".join(problems)


# -- the test catches what it should --------------------------------------------------------------------------------


def test_a_scratch_figure_with_a_5pt_label_fails(tmp_path):
    """A figure saved straight through matplotlib with a 5 pt axis label and a 9 in page: both are caught in the
    PDF, as are two series with one colour and one marker."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3))
    ax.plot([1, 2], [1, 2], "o-", color="C0", label="one")
    ax.plot([1, 2], [2, 3], "o--", color="C0", label="two")
    ax.set_xlabel("a 5 pt label", fontsize=5)
    ax.legend()
    fig.savefig(tmp_path / "scratch.pdf")
    problems = style_problems(tmp_path / "scratch.pdf", fig)
    plt.close(fig)
    assert any("5 pt" in p for p in problems), problems
    assert any("9.00 in wide" in p for p in problems), problems
    assert any("share colour and marker" in p for p in problems), problems


def test_a_scratch_figure_with_underscores_a_tall_legend_and_a_lone_panel_letter_fails(tmp_path):
    """A one-panel figure titled "(k) …" with a 12-entry legend and B_crit written with an underscore: each is
    caught; the same label in mathtext passes, its subscript drawn under 7 pt but allowed as a script."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.4, 2.4))
    for i in range(12):
        ax.plot([1, 2], [i, i + 1], marker="os^vDPX*hdp<"[i], color=f"C{i % 10}", label=f"series {i}")
    ax.set_title("(k) one panel")
    ax.set_xlabel("critical batch B_crit")
    ax.set_ylabel(r"critical batch $B_{\mathrm{crit}}$", fontsize=7.5)
    ax.text(1, 1, "fitted a·κ^b")
    ax.text(1, 2, r"fitted $a\,\kappa^{b}$")
    ax.legend()
    fig.savefig(tmp_path / "scratch.pdf")
    problems = style_problems(tmp_path / "scratch.pdf", fig)
    plt.close(fig)
    assert any("literal underscore or caret in 'critical batch B_crit'" in p for p in problems), problems
    assert any("literal underscore or caret in 'fitted a·κ^b'" in p for p in problems), problems
    assert not any("kappa" in p for p in problems), problems
    assert not any("mathrm" in p for p in problems), problems
    assert any("of the figure's height (> 1/3)" in p for p in problems), problems
    assert any("single-panel figure lettered (k)" in p for p in problems), problems
    assert not any("pt (< 7 pt)" in p for p in problems), problems  # 5.25 pt: the subscript of a 7.5 pt label


def test_the_style_core_letters_only_the_panels_of_a_multi_panel_figure_and_plain_ticks_under_a_decade(
        tmp_path, kept_figures):
    """`save` drops a maker's panel letter from a one-panel figure and letters a two-panel one (a), (b) left to
    right whatever letters its maker gave; a log axis spanning less than a decade reads 200, 300, not 2×10²."""
    from otod.core import plotting

    fig, ax = plotting.figure()
    ax.plot([1, 2], [150, 450])
    ax.set(yscale="log", title="(k) alone")
    plotting.save(fig, tmp_path / "one")
    fig.canvas.draw()
    assert ax.get_title() == "alone"
    labels = [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()]
    assert "200" in labels and "400" in labels and not any("×" in t for t in labels), labels
    fig, (left, right) = plotting.figure(columns=2, cols=2)
    left.set_title("(q) left")
    right.set_title("right")
    right.plot([1, 10 ** 3], [1, 10 ** 3])
    right.set(xscale="log")
    plotting.save(fig, tmp_path / "two")
    fig.canvas.draw()
    assert (left.get_title(), right.get_title()) == ("(a) left", "(b) right")
    assert "10³" in [t.get_text() for t in right.get_xticklabels()]
    assert style_problems(tmp_path / "two.pdf", fig) == []
    fig, ax = plotting.figure()  # 1.4 decades with one power inside: the ticks between are labelled, all plain
    ax.plot([1, 2], [1500, 35000])
    ax.set(yscale="log")
    plotting.save(fig, tmp_path / "short")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True) if t.get_text()]
    assert "10,000" in labels and "20,000" in labels and not any("×" in t or "⁴" in t for t in labels), labels


def test_save_hides_a_marked_label_cut_at_the_axes_edge_and_keeps_one_inside(tmp_path, kept_figures):
    """Two contour-style labels marked `inside_only`: one centred on the axes' right edge (half of it would be cut)
    is hidden by `save`, one in the middle stays; an unmarked note on the edge is left alone."""
    from otod.core import plotting

    fig, ax = plotting.figure()
    ax.set(xlim=(0, 1), ylim=(0, 1))
    edge = ax.text(1.0, 0.5, "0.58", ha="center")
    middle = ax.text(0.5, 0.5, "0.83", ha="center")
    note = ax.text(1.0, 0.2, "note", ha="center")
    plotting.inside_only([edge, middle])
    plotting.save(fig, tmp_path / "labels")
    assert (edge.get_visible(), middle.get_visible(), note.get_visible()) == (False, True, True)


def test_legend_below_keeps_a_long_legend_within_a_third_of_the_figure(tmp_path, kept_figures, print_style):
    """Nine series with 60-character labels under one panel: `legend_below` takes more columns until the legend is
    at most a third of the grown figure, and never breaks a mathtext span across lines. On the neurips style's
    narrower page (5.5 in) every column count wraps the labels onto 9 lines or more, 1.3 in against the 1.2 in a
    2.4 in panel allows: the panel grows to twice the legend's height instead."""
    from otod.core import plotting

    fig, ax = plotting.figure(columns=2, height=2.4)
    for i in range(9):
        ax.plot([1, 2], [i, i + 1], **plotting.series_style(i),
                label=f"series {i}: a label of some length, $B_{{\\mathrm{{crit}}}} = {i}$ at the end")
    legend = plotting.legend_below(fig)
    tall = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
    plotting.save(fig, tmp_path / "long")
    if print_style == "paper":
        assert legend._ncols > 1 and fig.get_figheight() == pytest.approx(2.4 + tall + 0.05)
    else:
        assert fig.get_figheight() == pytest.approx(3 * tall + 0.05) and fig.get_figheight() > 2.4 + tall + 0.05
    assert all(t.get_text().count("$") % 2 == 0 for t in legend.get_texts())
    assert style_problems(tmp_path / "long.pdf", fig, STYLE_WIDTHS[print_style]) == []
    assert pdf_page_widths(tmp_path / "long.pdf") == [pytest.approx(STYLE_WIDTHS[print_style][1])]


def test_a_compressed_and_an_uncompressed_pdf_read_alike(tmp_path):
    import matplotlib
    import matplotlib.pyplot as plt

    for compression in (0, 6):
        fig, ax = plt.subplots(figsize=(3.4, 2))
        ax.set_xlabel("x", fontsize=5)
        with matplotlib.rc_context({"pdf.compression": compression}):
            fig.savefig(tmp_path / f"c{compression}.pdf")
        plt.close(fig)
        assert 5.0 in pdf_font_sizes(tmp_path / f"c{compression}.pdf")
        assert pdf_page_widths(tmp_path / f"c{compression}.pdf") == [pytest.approx(3.4)]


def test_the_style_core_draws_at_the_column_width_and_fixes_what_a_maker_left(tmp_path, kept_figures):
    """A figure drawn too wide, with a 5 pt note and a legend to the right of its axes, saved through
    `otod.core.plotting.save` in the paper style: the page is 7.0 in, the note 7 pt, the legend under the axes."""
    from otod.core import plotting

    fig, ax = plotting.plt.subplots(figsize=(10, 4))
    for i in range(3):
        ax.plot([1, 2, 3], np.arange(3) + i, **plotting.series_style(i), label=f"series {i}")
    ax.text(0.5, 0.5, "a note", fontsize=5, transform=ax.transAxes)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    plotting.save(fig, tmp_path / "wide", caption="settings")
    assert (tmp_path / "wide.caption.txt").read_text() == "settings\n"
    assert style_problems(tmp_path / "wide.pdf", fig) == []
    assert pdf_page_widths(tmp_path / "wide.pdf") == [pytest.approx(7.0)]
    assert fig.legends and ax.get_legend() is None  # moved below the axes


def test_series_style_gives_every_series_its_own_colour_marker_and_line_style():
    from otod.core.plotting import series_style

    styles = [series_style(i) for i in range(8)]
    assert len({s["color"] for s in styles}) == 8 and len({s["marker"] for s in styles}) == 8


# -- cheap figures from the small fixture results ------------------------------------------------------------------


def _stamp_names(monkeypatch):
    """Mark each figure with the name it is saved under, so the check pairs a PDF with its figure."""
    from otod.core import plotting

    real = plotting.plt.Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        self._otod_saved_as = Path(fname).with_suffix("").name
        return real(self, fname, *args, **kwargs)

    monkeypatch.setattr(plotting.plt.Figure, "savefig", savefig)


def test_the_condition_figure_of_a_fixture_sweep_keeps_the_style(tmp_path, kept_figures, monkeypatch, print_style):
    from otod.condition.figures import condition_figure
    from otod.core import results as results_io

    _stamp_names(monkeypatch)
    condition_figure(results_io.load(FIXTURES / "condition-format2-lr_selected.json"), tmp_path / "condition")
    _check_saved(tmp_path, kept_figures, print_style)
    assert (tmp_path / "condition.caption.txt").is_file()


def test_the_depth_figure_of_a_fixture_sweep_keeps_the_style(tmp_path, kept_figures, monkeypatch, print_style):
    from otod.core import results as results_io
    from otod.depth.figures import sweep_figure

    _stamp_names(monkeypatch)
    sweep_figure(results_io.load(FIXTURES / "depth-format2-lr_selected.json"), tmp_path / "depth")
    _check_saved(tmp_path, kept_figures, print_style)
    assert (tmp_path / "depth.caption.txt").is_file()


def test_the_net_batch_figure_of_a_fixture_sweep_keeps_the_style(tmp_path, kept_figures, monkeypatch, print_style):
    from otod.core import results as results_io
    from otod.nets.figures.sweep import sweep_figure

    _stamp_names(monkeypatch)
    sweep_figure(results_io.load(FIXTURES / "net-batch-5seeds.parquet"), tmp_path / "net", pdf=True)
    _check_saved(tmp_path, kept_figures, print_style)
    assert (tmp_path / "net.caption.txt").is_file()


def test_the_noise_rms_and_rosenbrock_figures_keep_the_style(tmp_path, kept_figures, monkeypatch, print_style):
    from otod.noise.figures import MAKERS

    _stamp_names(monkeypatch)
    MAKERS["noise-rms"]({"name": "rms", "draws": 20}, tmp_path)
    MAKERS["noise-rosenbrock"]({"name": "rosenbrock", "steps": 300}, tmp_path)
    _check_saved(tmp_path, kept_figures, print_style)


def _formula_costs(monkeypatch):
    """`otod.cost.flops`' XLA costs (a compiled program each) replaced by the layer formula's counts
    (`otod.cost.models.analytic_flops`, the optimizer's update per parameter), so that a figure's FLOP table
    compiles nothing."""
    from otod.core.api import Cost
    from otod.cost import flops, models
    from otod.cost.optimizers import optimizer

    def pass_costs(network, batch):
        counted = models.analytic_flops(network, batch)
        return Cost(counted.forward, 0.0, 0.0), Cost(counted.backward, 0.0, 0.0)

    def update_cost(network, name):
        return Cost(optimizer(name).update_flops_per_param * network.n_params(), 0.0, 0.0)

    monkeypatch.setattr(flops, "pass_costs", pass_costs)
    monkeypatch.setattr(flops, "update_cost", update_cost)


def test_the_cost_figures_keep_the_style(tmp_path, kept_figures, monkeypatch, print_style):
    """The three cost figures on small networks (an MLP's FLOP ratio at batches 1, 2 and 16, DeeperConvNet with 0
    and 1 intermediate layers on 16×16 inputs, the time split drawn from fixed shares, so that no timing runs): the
    style, plain ticks (1, 4, 16 on the base-2 batch axis, 4 where no batch was run; 0, 1 on the depth axis), and
    the time split's network names left of its tick labels. XLA's FLOP counts are stood in by the layer formula's
    (`_formula_costs`): the figures' style is tested here, XLA's counts in tests/cost (test_flops, and
    test_plots, which draws both ratio figures from them); compiling the ten FLOP programs took 9.5 of this
    test's 12.3 CPU-s."""
    from otod.core import plotting
    from otod.cost import plots

    _stamp_names(monkeypatch)
    _formula_costs(monkeypatch)
    plots.MAKERS["cost-ratio-batch"]({"name": "batch", "models": "mlp", "widths": [20, 10], "batches": [1, 2, 16]},
                         tmp_path)
    plots.MAKERS["cost-ratio-depth"]({"name": "depth", "depths": [0, 1], "batches": [1, 2], "image": 16}, tmp_path)
    bars = [(net, label, 0.3, 0.6, 0.1, 2.0, None if label == "FLOPs" else 0.0123)
            for net in ("OneNet", "DeeperConvNet (N = 8)") for label in ("FLOPs", "fp32 time", "bf16 time")]
    plotting.save(plots._draw_time_split(bars), tmp_path / "cost_time")
    _check_saved(tmp_path, kept_figures, print_style)
    figs = {getattr(f, "_otod_saved_as", None): f for f in kept_figures}
    ticks = [t.get_text() for t in figs["cost_batch"].axes[0].get_xticklabels()]
    assert ticks == ["1", "4", "16"], ticks
    assert [t.get_text() for t in figs["cost_depth"].axes[0].get_xticklabels()] == ["0", "1"]
    ax = figs["cost_time"].axes[0]
    names = [t for t in ax.texts if t.get_text().startswith(("OneNet", "DeeperConvNet"))]
    left = min(t.get_window_extent().x0 for t in ax.get_yticklabels())
    assert len(names) == 2 and all(t.get_window_extent().x1 < left for t in names)


# -- every figure of `otod figures` ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_figure_of_otod_figures_keeps_the_style(tmp_path, kept_figures, monkeypatch, print_style):
    """Runs all of ``otod figures`` into a scratch folder (as long as the figures take: their sweeps are read back
    from ``results/`` where cached) and checks every PDF it saved (`style_problems`: with its figure, also no
    literal underscore, no legend over a third of the height, panel letters only in multi-panel figures, (a), (b),
    … in order, the page one of the style's widths) and that each has its caption; once per printed style
    (``-k paper`` or ``-k neurips`` picks one)."""
    from otod.core.figures import make_figures

    _stamp_names(monkeypatch)
    make_figures(None, out_dir=tmp_path, log=lambda line: None, seconds_file=tmp_path / "seconds.json")
    _check_saved(tmp_path, kept_figures, print_style)
    missing = [p.name for p in tmp_path.glob("*.pdf") if not p.with_suffix(".caption.txt").is_file()]
    assert not missing, missing


def test_otod_plot_style_paper_saves_a_page_within_two_columns_and_screen_a_larger_one(tmp_path):
    """``otod plot --style paper`` draws the fixture sweep's figure at its printed size (page 7.0 in, no type
    under 7 pt); ``--style neurips`` at the full width of a 5.5 in text block, its type still ≥ 7 pt;
    ``--style screen`` (its default) draws it larger, for a monitor; the style ends with the command."""
    from click.testing import CliRunner

    from otod.cli import main
    from otod.core import plotting

    fixture = FIXTURES / "depth-format2-lr_selected.json"
    for style in ("paper", "neurips", "screen"):
        out = CliRunner().invoke(main, ["plot", str(fixture), "--out", str(tmp_path / style), "--pdf",
                                        "--style", style])
        assert out.exit_code == 0, out.output
    paper, neurips, screen = (tmp_path / s / "depth-format2-lr_selected.pdf" for s in ("paper", "neurips", "screen"))
    assert style_problems(paper, widths=STYLE_WIDTHS["paper"]) == [] and pdf_page_widths(paper)[0] == pytest.approx(7.0)
    assert style_problems(neurips, widths=STYLE_WIDTHS["neurips"]) == []
    assert pdf_page_widths(neurips)[0] == pytest.approx(5.5)
    assert pdf_page_widths(screen)[0] > 7.5
    assert plotting.style_name() == "paper"


def test_the_neurips_style_draws_one_column_at_half_the_text_block_and_shrinks_a_wide_figure_to_it(
        tmp_path, kept_figures):
    """In the neurips style `figure` draws a one-column figure 2.7 in wide and a two-column one 5.5 in, each as tall
    as the maker asks (the type is as tall as in the paper style); a figure drawn 10 in wide with a 5 pt note is
    saved 5.5 in wide with the note at 7 pt; the paper style's sizes come back after the ``with``."""
    from otod.core import plotting

    with plotting.styled("neurips"):
        one, _ = plotting.figure(columns=1, height=2.4)
        two, _ = plotting.figure(columns=2, height=2.8)
        assert [one.get_size_inches().tolist(), two.get_size_inches().tolist()] == [[2.7, 2.4], [5.5, 2.8]]
        plotting.plt.close(one), plotting.plt.close(two)
        fig, ax = plotting.plt.subplots(figsize=(10, 4))
        ax.plot([1, 2], [1, 2], label="series")
        ax.text(0.5, 0.5, "a note", fontsize=5, transform=ax.transAxes)
        plotting.save(fig, tmp_path / "wide")
    assert pdf_page_widths(tmp_path / "wide.pdf") == [pytest.approx(5.5)]
    assert style_problems(tmp_path / "wide.pdf", fig, STYLE_WIDTHS["neurips"]) == []
    assert plotting.page_width(1) == 3.4 and plotting.page_width(2) == 7.0
