"""Where a figure's results come from (`otod.core.figure_sources`): a ``committed = true`` figure reads its results
file and runs no sweep; ``--remeasure`` runs it from nothing and replaces the file only once the figure is drawn; a
committed figure whose file is missing ends in one line with exit code 2. On a scratch experiments folder with a
tiny condition sweep (2 values of κ, one seed, one method), never the real figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otod.core import registry
from otod.core.errors import OtodError
from otod.core.figures import make_figures
from otod.core.results import load
from tests.conftest import run_otod

TINY = {"k": "1..10:2:log", "method": "gd", "dim": 4, "seeds": 1, "tol": 1e-3}


def tiny_sweep_figure(spec: dict, out: Path, seen: list) -> list[Path]:
    """A maker: the tiny sweep into the relative results/ (as the real makers write), then a PNG and its caption."""
    from otod.condition.options import sweep_config_from_options
    from otod.core.sweep import run_sweep

    results = run_sweep(sweep_config_from_options(**TINY), out_dir="results")
    seen.append(bool(results.meta.get("read_back")))
    if spec.get("fail"):
        raise OtodError("drawing failed")
    png = Path(out) / f"{spec['name']}.png"
    png.write_bytes(b"drawn")
    png.with_name(png.stem + ".caption.txt").write_text("The tiny sweep.\n")
    return [png]


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A checkout of one group ``g`` with a committed figure ``heavy``, run in ``tmp_path``; yields (experiments
    folder, the figures folder, the read_back flag of each sweep the maker ran, the chunks that ran)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("otod.core.figures.SECONDS_FILE", tmp_path / "figure-seconds.json")
    seen: list[bool] = []
    registry.register(registry.Obstacle(name="sources-test", summary="", figure_makers=lambda: {
        "tiny": lambda spec, out: tiny_sweep_figure(spec, out, seen)}))
    chunks: list[int] = []
    from otod.core.scheduler import ChunkRunner

    real_run = ChunkRunner.run

    def counted(self, *args, **kwargs):  # the spy: a sweep that measures runs its chunks here
        chunks.append(len(self.pending))
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(ChunkRunner, "run", counted)
    folder = tmp_path / "experiments"
    folder.mkdir()
    (folder / "g.toml").write_text('[heavy]\nmaker = "tiny"\ncommitted = true\n')
    figures = tmp_path / "figures"
    figures.mkdir()
    yield folder, figures, seen, chunks
    registry._OBSTACLES.pop("sources-test")


def quiet(**kwargs):
    return make_figures(["g"], log=lambda line: None, **kwargs)


def test_remeasure_runs_then_the_committed_figure_reads_its_file_without_sweeping(scratch, tmp_path):
    folder, figures, seen, chunks = scratch
    quiet(out_dir=figures, experiments_dir=folder, remeasure=True)
    assert seen == [False] and chunks == [1], "the re-measure ran the sweep"
    (name,) = json.loads((folder / "figure-results.json").read_text())["g/heavy"]
    committed = tmp_path / "results" / name
    assert committed.is_file() and not (tmp_path / "results" / "remeasure").exists(), "published, workspace gone"
    first = committed.read_bytes()
    quiet(out_dir=figures, experiments_dir=folder)
    assert seen == [False, True] and chunks == [1], "by default: read back, no chunk ran"
    assert committed.read_bytes() == first
    env = load(committed).meta["environment"]
    caption = (figures / "heavy.caption.txt").read_text()
    assert caption.startswith("The tiny sweep. Drawn from the committed results (results/" + name)
    assert f"measured {env['utc_time'][:10]} on {env['cpu']}" in caption
    assert caption.rstrip().endswith("otod figures --remeasure g/heavy measures them again from nothing.")
    assert (figures / "heavy.png").read_bytes() == b"drawn", "the drawn file is the maker's alone"


def test_remeasure_ignores_the_committed_file_and_replaces_it(scratch, tmp_path):
    folder, figures, seen, chunks = scratch
    quiet(out_dir=figures, experiments_dir=folder, remeasure=True)
    (name,) = json.loads((folder / "figure-results.json").read_text())["g/heavy"]
    committed = tmp_path / "results" / name
    inode = committed.stat().st_ino
    quiet(out_dir=figures, experiments_dir=folder, remeasure=True)
    assert seen == [False, False] and chunks == [1, 1], "the existing file was not read back: the sweep ran again"
    assert committed.stat().st_ino != inode, "replaced by a new file (os.replace)"


def test_an_interrupted_remeasure_keeps_the_committed_file_and_its_finished_work(scratch, tmp_path):
    folder, figures, seen, chunks = scratch
    quiet(out_dir=figures, experiments_dir=folder, remeasure=True)
    (name,) = json.loads((folder / "figure-results.json").read_text())["g/heavy"]
    committed = tmp_path / "results" / name
    before = committed.read_bytes()
    (folder / "g.toml").write_text('[heavy]\nmaker = "tiny"\ncommitted = true\nfail = true\n')
    with pytest.raises(OtodError, match="drawing failed"):
        quiet(out_dir=figures, experiments_dir=folder, remeasure=True)
    assert committed.read_bytes() == before, "not replaced: the figure did not finish"
    assert (tmp_path / "results" / "remeasure" / "results" / name).is_file(), "the measured sweep is kept"
    (folder / "g.toml").write_text('[heavy]\nmaker = "tiny"\ncommitted = true\n')
    quiet(out_dir=figures, experiments_dir=folder, remeasure=True)
    assert seen == [False, False, True] and chunks == [1, 1], "the same command resumed: read back, no chunk ran"
    assert committed.read_bytes() != before and not (tmp_path / "results" / "remeasure").exists()


def test_a_committed_figure_whose_file_is_missing_is_refused_before_any_figure(scratch, tmp_path):
    folder, figures, seen, chunks = scratch
    (folder / "figure-results.json").write_text(json.dumps({"g/heavy": ["condition-0123456789.parquet"]}))
    with pytest.raises(OtodError) as refused:
        quiet(out_dir=figures, experiments_dir=folder)
    assert "g/heavy reads its committed results and" in str(refused.value)
    assert str(refused.value).endswith("otod figures --remeasure g/heavy") and "\n" not in str(refused.value)
    assert seen == [] and chunks == []


def test_a_committed_figure_never_sweeps_even_without_a_record_of_its_files(scratch, tmp_path):
    """No ``figure-results.json`` (or a stale one): the sweep that would run is refused where it would start."""
    folder, figures, seen, chunks = scratch
    with pytest.raises(OtodError, match=r"g/heavy reads its committed results and results/condition-\w+\.parquet "
                                         r"is not there .* otod figures --remeasure g/heavy$"):
        quiet(out_dir=figures, experiments_dir=folder)
    assert chunks == [] and not list((tmp_path / "results").glob("*.parquet"))


def test_committed_must_be_true_or_false(scratch):
    folder, figures, _, _ = scratch
    (folder / "g.toml").write_text('[heavy]\nmaker = "tiny"\ncommitted = "yes"\n')
    with pytest.raises(OtodError, match=r"experiments/g.toml \[heavy\]: committed = 'yes'; give true"):
        quiet(out_dir=figures, experiments_dir=folder)


def test_otod_figures_with_a_committed_file_missing_says_so_in_one_line_with_exit_code_2(tmp_path):
    """The command line, in a scratch checkout: one line on stderr naming the file and the command, exit code 2,
    before any figure runs (nothing drawn)."""
    (tmp_path / "experiments").mkdir()
    options = "\n".join(f"{k} = {json.dumps(v)}" for k, v in TINY.items())
    (tmp_path / "experiments" / "g.toml").write_text(f'[heavy]\nmaker = "condition-iterations"\ncommitted = true\n'
                                                     f'{options}\n')
    (tmp_path / "experiments" / "figure-results.json").write_text(json.dumps({"g/heavy": ["condition-x.parquet"]}))
    proc, _ = run_otod(["figures", "g", "--out", "figs"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("otod: error: g/heavy reads its committed results and ")
    assert lines[0].endswith("otod figures --remeasure g/heavy")
    assert not list((tmp_path / "figs").glob("*.png"))


def test_every_committed_figure_s_recorded_files_are_committed_with_the_code():
    """The checkout's own ``committed = true`` figures: each has its files recorded (`figure-results.json`, so the
    check before any figure and the cold benchmark know them), and every one of them is tracked by git (a file
    left out of .gitignore's exceptions would be measured again, or refused, in a fresh clone)."""
    import subprocess
    import tomllib

    root = Path(__file__).resolve().parents[2]
    recorded = json.loads((root / "experiments" / "figure-results.json").read_text())
    committed = [f"{p.stem}/{name}" for p in sorted((root / "experiments").glob("*.toml"))
                 for name, table in tomllib.loads(p.read_text()).items() if table.get("committed")]
    assert committed and all(recorded.get(figure) for figure in committed), [f for f in committed if f not in recorded]
    tracked = set(subprocess.run(["git", "ls-files", "results"], cwd=root, capture_output=True, text=True,
                                 check=True).stdout.split())
    missing = sorted({f"results/{n}" for figure in committed for n in recorded[figure]} - tracked)
    assert not missing, f"recorded but not committed: {missing}"


def test_the_seconds_docs_figures_md_gives_for_the_committed_choice_are_the_shipped_seconds_summed():
    """docs/figures.md's arithmetic for which figures are committed: the cold run's seconds
    (experiments/figure-seconds.json) summed over the committed figures, over all, and over the rest."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    seconds = json.loads((root / "experiments" / "figure-seconds.json").read_text())
    committed = {f"{p.stem}/{name}" for p in (root / "experiments").glob("*.toml")
                 for name, table in tomllib.loads(p.read_text()).items() if table.get("committed")}
    newer = committed - set(seconds)  # committed figures drawn first after that cold run, each named on the page
    page = " ".join((root / "docs" / "figures.md").read_text().split())
    assert all(f"`{f.replace('/', '_')}`" in page for f in newer), newer  # nets/x draws figures/nets_x
    committed -= newer
    ours = sum(seconds[f] for f in committed)
    assert f"together they took {ours:,.0f} s of the {sum(seconds.values()):,.0f} s" in page
    rest = sum(seconds.values()) - ours
    assert f"the other {len(seconds) - len(committed)} figures" in page
    assert f"took {rest:.0f} s of it ({rest / 60:.1f} minutes" in page
    assert f"never sweeps: {len(committed) + len(newer)} of the {len(seconds) + len(newer)}" in page
    assert f"{len(committed)} of the {len(seconds)} of that run" in page
