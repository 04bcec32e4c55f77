"""The joint D × P grid on the transformer's sequence task (``otod sweep net --model transformer --data sequence
--regime stream|finite``, ``otod.critical_batch_grid(…, model="transformer", data="sequence")``): bad options end
in one line and exit code 2; a tiny grid runs every cell end to end and records each cell's D, width, P (the closed
form) and held-out target, every converged lane stopped at it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from otod.nets.model import sequence

#: 2 D × 2 widths × 2 batches, 2 seeds, 2 lrs, one block: the smallest transformer grid (the joint law needs two
#: D and two widths, the critical batch two batches). Measured 2 min 52 s on the 2 shared cores at load average 4.9,
#: 106 s of it compiling 5 programs (each lane program holds the transformer's gradient at both batches and the
#: stream's draw); a transformer sweep program compiles in ~32 s per CPU device at load 6 whatever its size
#: (`otod.nets.model.transformer_net.COMPILE_SECONDS`), so no smaller grid fits the fast suite: it is slow, and
#: `test_the_grid_config_wires_the_transformer_to_the_sequence_task` checks the wiring with one small program.
TINY = ["sweep", "net", "--model", "transformer", "--data", "sequence", "--depth", "1", "--examples", "32,128",
        "--width", "4,8", "--batch", "2,8", "--seeds", "2", "--lr-grid", "1,3", "--max-iters", "1000", "--no-plot",
        "--yes"]


def invoke(args):
    from otod.cli import main

    return CliRunner().invoke(main, args)


@pytest.mark.parametrize("args,message", [
    (["--model", "mlp", "--data", "sequence"], "--data sequence: token sequences for the transformer"),
    (["--model", "transformer", "--data", "teacher"], "--model transformer: reads token sequences"),
    (["--model", "transformer", "--data", "sequence", "--width", "8,10", "--heads", "4"],
     "--width 10: the transformer's d_model must be a multiple of --heads 4"),
    (["--model", "mlp", "--data", "teacher", "--heads", "2"], "--heads 2: the transformer's attention heads"),
    (["--model", "transformer", "--data", "sequence", "--activation", "tanh"], "--activation"),
    (["--model", "transformer", "--data", "sequence", "--init", "kaiming,small"], "--init, --architecture"),
])
def test_bad_options_end_in_one_line_and_exit_code_2(args, message, tmp_path):
    result = invoke(["sweep", "net", *args, "--regime", "stream", "--examples", "64,128", "--batch", "2,8",
                     "--out", str(tmp_path), "--no-plot", "--yes"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("otod: error: ") and message in lines[0], result.output
    assert not list(tmp_path.iterdir())


def check_cells(frame, config, sizes, widths) -> None:
    """Every cell (D, width) is recorded at both batches and both seeds, with P = the closed form, the cell's
    held-out target from the config's table, and every converged lane's last read ≤ 1 (its held-out loss ÷ target)."""
    from otod.nets.model.reference import parse_table

    table = parse_table(config.problem.held_out_targets)
    assert set(table) == {(d, w) for d in sizes for w in widths}
    v, t = sequence.VOCABULARY, sequence.LENGTH
    for (d, w), (target, _) in table.items():
        cell = frame[(frame["examples"] == d) & (frame["width"] == w)]
        assert set(cell["batch"]) == {2.0, 8.0} and set(cell["seed"]) == {0, 1}
        assert (cell["parameters"] == 2 * v * w + (t - 1) * w + 12 * w * w + 9 * w + 2 * w).all()
        assert (cell["held_out_target"] == target).all()
        assert sequence.source().entropy_rate < target < 3.5  # between the floor and log V + the init's term
    converged = frame[frame["status"] == "converged"]
    assert len(converged) and (converged["final_loss"].to_numpy(float) <= 1.0).all()


@pytest.fixture(scope="module")
def tiny_stream(tmp_path_factory):
    out = tmp_path_factory.mktemp("transformer-grid")
    result = invoke([*TINY, "--regime", "stream", "--out", str(out)])
    assert result.exit_code == 0, result.output
    (path,) = out.glob("net-*.parquet")
    return result.output, path


def placeholder_targets(spec, sizes, widths, lrs, seeds, seed, method, options):
    """`otod.nets.sweep.options.with_regime` without its reference runs: every cell's held-out target 1."""
    import dataclasses

    table = ";".join(f"{int(d)}:{int(w)}:1.0:{lrs[0]!r}:interior" for w in widths for d in sizes)
    return dataclasses.replace(spec, held_out_targets=table)


def test_the_grid_config_wires_the_transformer_to_the_sequence_task(monkeypatch):
    """The joint grid's config (the CLI's `otod.nets.sweep.options.net_config`, reference runs replaced by targets
    of 1) has one static point per (D, width, batch) (D 32 and 128, d 8, B 2 and 8), each the transformer on the
    stream of sequences with P = the closed form 2Vd + (T − 1)d + 12d² + 9d + 2d (1,488); one program on the (D 32,
    d 8, B 2) point's family reads the held-out loss at its start, log V + s²(1 − 1/V)/2 = 3.4706 (s = 0.1,
    `zoo.LOGIT_SCALE`; within 0.02: the logits' variance is about s², 3,584 held-out tokens), and a finite, nonzero
    gradient of step 0's B = 2 fresh sequences, in the shapes of the parameters. One width: the config's own check
    of the start's loss (`otod.nets.sweep.kind.validate`) draws and evaluates each width's net, ~6 s a width on the
    loaded cores; with it and the one program this test takes ~16 s. d = 8, one block, 2 heads is
    tests/nets/model/test_transformer_net.py's net, whose start (``init_transformer``) and held-out loss the suite's
    compilation cache then holds: the check's programs compile once in the run, not twice (d = 4 compiled its own,
    2.7 s of the start's alone)."""
    import math

    import jax
    import jax.numpy as jnp
    import numpy as np

    import otod.nets.sweep.options as options  # importing it runs otod.nets, which registers the net sweep
    from otod.nets.model import zoo

    monkeypatch.setattr(options, "with_regime", placeholder_targets)
    config = options.net_config(data="sequence", model="transformer", depth="1", examples="32,128", width="8",
                                batch="2,8", lr_grid="1,3", max_iters="8", seeds=2, regime="stream")
    v, t = sequence.VOCABULARY, sequence.LENGTH
    points = {(p["examples"], spec.width, p["batch"]): spec
              for p, spec in zip(config.static_points(), config.specs())}
    assert set(points) == {(d, 8, b) for d in (32, 128) for b in (2, 8)}
    for (d, w, b), spec in points.items():
        assert (spec.model, spec.data, spec.stream, spec.width, spec.batch) == ("transformer", "sequence", True, w, b)
        assert spec.parameter_count == 2 * v * w + (t - 1) * w + 12 * w * w + 9 * w + 2 * w
        assert spec.held_out_target == 1.0
    family = points[32, 8, 2].family()
    drawn = jax.tree.map(lambda a: np.asarray(a, np.float32), family.draws(np.random.default_rng(0)))
    problem = family.make({}, drawn)  # the draws in float32, as the engine casts them (`seed_draws`)

    @jax.jit
    def start(problem):
        params = family.init(problem)
        step = type("Step", (), {"t": jnp.zeros((), jnp.int32)})()
        return params, family.metric(problem, params), family.gradient(problem, params, step)

    params, loss, grad = start(problem)
    s = zoo.LOGIT_SCALE
    assert float(loss) == pytest.approx(math.log(v) + s * s * (1 - 1 / v) / 2, abs=0.02)
    assert jax.tree.structure(grad) == jax.tree.structure(params)
    leaves = [np.asarray(g) for g in jax.tree.leaves(grad)]
    assert all(np.isfinite(g).all() for g in leaves) and sum(float(np.abs(g).sum()) for g in leaves) > 0


@pytest.mark.slow  # ~3 min on the 2 shared cores, mostly compiling the transformer's programs (see `TINY`)
def test_a_tiny_stream_grid_runs_every_cell_and_prints_its_table(tiny_stream):
    from otod.core.config import read_config
    from otod.core.results import load

    text, path = tiny_stream
    results = load(path)
    check_cells(results.to_pandas(), read_config(results.meta), (32.0, 128.0), (4.0, 8.0))
    section = text[text.index("joint law over the D × P grid"):]
    for d, p in ((32, 552), (128, 552), (32, 1488), (128, 1488)):
        assert any(line.split()[:2] == [str(d), str(p)] for line in section.splitlines())
    assert "transformer (2 heads, MLP 4·d, GPT-2 init), data sequence, regime stream" in text


@pytest.mark.slow
def test_the_python_grid_runs_the_finite_regime(tmp_path):
    """``otod.critical_batch_grid`` with model="transformer", data="sequence", regime="finite": the same cells,
    each lane on the first D training sequences."""
    import otod
    from otod.core.config import read_config

    result = otod.critical_batch_grid((32, 128), (4, 8), regime="finite", model="transformer", data="sequence",
                                      depth=1, batches=(2, 8), seeds=2, lr_grid=(1.0, 3.0), max_iters=1000,
                                      out=str(tmp_path))
    frame = result.to_pandas()
    from otod.core.results import load

    check_cells(frame, read_config(load(result.path).meta), (32.0, 128.0), (4.0, 8.0))
    assert set(result.grids) == {"sgd"} and len(result.grid("sgd").cells) == 4
