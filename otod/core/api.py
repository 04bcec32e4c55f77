"""The core's public face: the one module an obstacle (``otod.condition``, ``cost``, ``depth``, ``noise``,
``nets``) and the paper's figures (``otod.paper``) import from the core, instead of its modules one by one
(tests/core/test_layout.py checks it). Its parts are the design's: the engine, the runner, the store, the analysis
and what shows it, and the command line's helpers; everything else in ``otod/core`` is the core's own.

``from otod.core.api import run_sweep, OtodError`` imports the module that defines each name when that name is
first read (PEP 562), not before: ``otod --help`` and an option refused import no JAX (every obstacle's commands
import this face), and reading a name is the defining module's attribute at that moment (a test that patches
``otod.core.pipeline.sweep`` is seen). A name here is the defining module's own, or ``face=own`` where two
modules use one name (`RENAMED`).
"""

from __future__ import annotations

import importlib

#: Each part's modules (under ``otod.core``) and the names the face takes from each.
PARTS = {
    # The engine: problems, methods and dynamics, run as one compiled loop; it returns data only.
    "dynamics": "Dynamics Lane Order Step lane_start optax_dynamics",
    "engine": "seed_problem_draws=seed_draws",
    "variants": "program_groups sharing",
    "family": "Family",
    "methods": "Method lookup momentum precondition",
    "branch": "cond_any",
    "stochastic": "BETA METHODS NoiseOptions ema_decay ignores power_of schedule_factor theory_name",
    "stopping": "Target decades",
    "precision": "exact_float32",
    "xla": "Cost abstract compiled_cost",
    "compilation_cache": "remembered side_cache",
    "resources": "hold_freed_memory memory_available release_free_memory",
    # The runner: a sweep's config, its pre-flight and the pipeline that runs or reads it back and shows it.
    "config": "DEFAULT_LR_GRID SweepConfig existing_default read_config",
    "sweep": "run_sweep",
    "pipeline": "made marked_records present sweep",
    "preflight": "check_resources given_options make_folder part_out quiet_numerics refuse_memory refuse_time "
                 "refuse_unwritable results_out",
    "registry": "Bracketing Presentation SweepKind Theory register_lazily",
    "axes": "Axis",
    # The store: results files and their columns.
    "results": "Results SUFFIXES cpu_model digest environment jsonable kept load_results=load save_results=save",
    "columns": "table_of",
    # The analysis: the one choice of lr and β, its bootstrap, fits and laws, the critical batch, the bracket.
    "analysis": "Analysis GRID_END Group INTERIOR LIMIT LIST_END Placed SeriesAnalysis analyse at_rung chosen cubes "
                "fit_line fit_medians frame_of lr_places no_ci_reason placements power_law rechosen seed_draws",
    "joint_law": "ABOVE BELOW INSIDE NONE GridAnalysis PlaneLaw analyse_grid",
    "critical_batch": "BatchAnalysis N_BOOT Series analyse_batches describe_critical_batch inside mccandlish_fit "
                      "place_batches scaling_rules",
    "fit": "power_law_fitter",
    "laws": "LAWS law_curves law_fit law_table",
    "bracket": "applies beta_floor beta_ladder default_beta_ladder ladder lr_extend_option lr_given place_lines",
    # Show: text and figures from one analysis.
    "report": "Report fit_table frame_at sweep_header sweep_table",
    "batch_report": "critical_line table",
    "plotting": "BAND_LABEL COLORS DIVERGED_LABEL INIT_COLORS LINESTYLES LOWER_LABEL MARKERS METHOD_MARKERS "
                "MIN_FONT_PT PALETTE caption_text draw_band figure headroom inside_only legend_below legend_inside "
                "legend_key mark_diverged panel_grid plt save series_style series_styles",
    "batch_figure": "FIT_BAND_NOTE draw_fit_band drew_fit_band fit_band_key log_axes method_color method_marker "
                    "none_reached steps_vs_batch",
    "law_figure": "draw_series law_band law_curve law_label legend_keys",
    "figures": "FigureSpec SweepFigureSpec TypedMaker load_specs parsed",
    "figure_guard": "refuse_to_measure",
    # The command line: options, ranges, errors, progress, and modules imported on first use.
    "cli": "common_sweep_options count_progress echo_report terminal_progress user_errors",
    "options": "check_cap check_lr_grid finite_float ladder_rungs nonnegative_float parse_lr parse_methods "
               "positive_float positive_int refuse_ignored representable_lr seed_value tolerance whole_values",
    "ranges": "parse_range",
    "errors": "OtodError",
    "lazy": "lazy",
}


def _where() -> dict[str, tuple[str, str]]:
    """face name → (defining module, its own name there)."""
    where = {}
    for module, names in PARTS.items():
        for name in names.split():
            face, _, own = name.partition("=")
            where[face] = (f"otod.core.{module}", own or face)
    return where


WHERE = _where()
#: The names the face gives otherwise than their module: results' save and load (beside plotting's save), and the
#: engine's per-seed problem draws (beside the analysis's bootstrap draws, ``seed_draws``).
RENAMED = {face: own for face, (_, own) in WHERE.items() if face != own}
__all__ = sorted(WHERE)


def __getattr__(name: str):
    """The face's ``name``, read from its defining module (imported now if it was not)."""
    try:
        module, own = WHERE[name]
    except KeyError:
        raise AttributeError(f"otod.core.api has no {name!r}: the core's face names {len(WHERE)} things "
                             "(otod.core.api.PARTS); add it there with its part, or use what is") from None
    return getattr(importlib.import_module(module), own)


def __dir__() -> list[str]:
    return __all__
