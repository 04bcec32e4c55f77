"""The claims table (docs/claims.toml, `otod.claims`): every claim re-read from the committed results prints the
text the README, docs or captions show, and the check fails by the claim's id when a results file, the text or
the table drifts (issue 50, "claims with a source")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from otod.claims import TABLE, check, load_table, normalised, scientific

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def claims():
    return load_table(ROOT / TABLE)


def test_every_claim_is_re_read_from_the_committed_results_and_printed(claims):
    """Each claim's reader, run on its committed results file, formats to the table's text, which the README, a
    docs page or a caption prints; each timing shows its date. No drift: the list of problems is empty."""
    assert claims, "the claims table is empty"
    assert check(ROOT, slow=False) == []


@pytest.mark.slow
def test_every_slow_claim_is_re_read_too():
    """The claims whose readers replay work (a batch schedule's phases: tens of seconds each) hold as well."""
    assert check(ROOT, slow=True) == []


def test_every_source_is_committed(claims):
    """A claim's results must travel with the checkout: each source is a file git tracks (.gitignore's exceptions
    in results/, the figure seconds that experiments/ keeps, or the theory module under otod/ that computes a theory
    value the text prints as computed)."""
    import subprocess

    tracked = set(subprocess.run(["git", "ls-files", "results", "experiments", "otod"], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.split())
    sources = {s for c in claims for s in c.source}
    assert sorted(sources - tracked) == []


def scratch_checkout(tmp_path: Path, perturbed: str | None = None) -> Path:
    """A copy of the table, the texts and the results under ``tmp_path`` (results and experiments/ linked, but
    ``perturbed``, which is copied so that it can be rewritten)."""
    for rel in ("README.md", str(TABLE)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    for folder, pattern in (("docs", "**/*.md"), ("figures", "*.caption.txt")):
        for p in (ROOT / folder).glob(pattern):
            target = tmp_path / p.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, target)
    (tmp_path / "experiments").symlink_to(ROOT / "experiments")
    (tmp_path / "results").mkdir()
    for p in (ROOT / "results").iterdir():
        if p.name == perturbed:
            shutil.copy(p, tmp_path / "results" / p.name)
        else:
            (tmp_path / "results" / p.name).symlink_to(p)
    return tmp_path


KFAC_FILE = "depth-e5bcb7a60e.parquet"  # experiments/depth.toml [depth_methods], gd and kfac


def test_a_changed_record_is_reported_as_that_claims_drift(tmp_path):
    """Rewrite the depth_methods results (a valid file, checksums recomputed) with kfac's converged lanes at depth 1
    taking 3 iterations instead of 2: the check of that file's claims names depth.methods.kfac_medians, reading
    "kfac needs 3 iterations", while its gd claims still hold."""
    import otod
    from otod.core.results import save

    root = scratch_checkout(tmp_path, perturbed=KFAC_FILE)
    path = root / "results" / KFAC_FILE
    results = otod.load(path)
    records = [dict(r) for r in results.records]
    changed = 0
    for r in records:
        if r["method"] == "kfac" and r["depth"] == 1.0 and r["status"] == "converged":
            assert r["iterations"] == 2  # the committed count the claim prints
            r["iterations"], changed = 3, changed + 1
    assert changed >= 8
    meta = {k: v for k, v in results.meta.items() if k not in ("chunks", "meta_sha256", "record_count")}
    save(path, meta, records)
    problems = check(root, slow=False, sources=[f"results/{KFAC_FILE}"])
    assert any(p.startswith("depth.methods.kfac_medians: drift") and "kfac needs 3 iterations at depth 1" in p
               for p in problems), problems
    drifted = {p.split(":")[0] for p in problems}
    held = {c.id for c in load_table(root / TABLE) if f"results/{KFAC_FILE}" in c.source} - drifted
    assert {"depth.methods.gd_law", "depth.methods.gd_medians"} <= held  # gd's lanes in the same file are unchanged


def test_the_check_can_be_narrowed_to_the_claims_of_some_files():
    """``sources`` keeps exactly the claims that read one of the named files (the perturbation tests above check
    only those: every other claim reads an unchanged file, which the first test checks)."""
    from otod.claim_readers import READERS

    seen = []

    def spy(name):
        def reader(*paths, **kwargs):
            seen.append(name)
            return READERS[name](*paths, **kwargs)
        return reader

    assert check(ROOT, readers={name: spy(name) for name in READERS}, slow=False,
                 sources=[f"results/{KFAC_FILE}"]) == []
    touching = [c for c in load_table(ROOT / TABLE) if f"results/{KFAC_FILE}" in c.source and not c.slow
                and c.kind == "measured"]
    assert touching and sorted(seen) == sorted(c.reader for c in touching)


def test_a_damaged_results_file_is_reported_by_each_claim_that_reads_it(tmp_path):
    """A results file whose bytes changed (its checksums no longer match) cannot be re-read: every claim that
    reads it is reported, by id."""
    root = scratch_checkout(tmp_path, perturbed=KFAC_FILE)
    path = root / "results" / KFAC_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    problems = check(root, slow=False, sources=[f"results/{KFAC_FILE}"])
    touching = {c.id for c in load_table(root / TABLE) if f"results/{KFAC_FILE}" in c.source}
    assert {p.split(":")[0] for p in problems if "cannot be re-read" in p} == touching


def test_a_sentence_edited_by_hand_is_reported(tmp_path, claims):
    """A number changed in the text (not in the results) leaves its claim printed nowhere: reported by id."""
    root = scratch_checkout(tmp_path)
    claim = next(c for c in claims if c.id == "depth.methods.kfac_medians")
    for p in [root / "README.md", *root.glob("docs/**/*.md")]:
        text = p.read_text()
        p.write_text(normalised(text).replace(claim.text, claim.text.replace("23.5", "22.5")))
    assert f"{claim.id}: {claim.text!r} is printed in no README, docs page or caption" in check(
        root, slow=False, sources=claim.source)


def test_a_timing_must_show_its_date(tmp_path):
    """A timing claim whose text does not carry its date is refused; one that does, and is printed, holds."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("It took 91 s on 2 cores (2026-11-27, AMD EPYC).")
    table = tmp_path / "claims.toml"
    entry = ('[[claim]]\nid = "t"\nobstacle = "noise"\nkind = "timing"\ntext = "{}"\ndate = "2026-11-27"\n'
             'machine = "AMD EPYC, 2 cores"\n')
    table.write_text(entry.format("took 91 s on 2 cores (2026-11-27, AMD EPYC)"))
    assert check(tmp_path, table) == []
    table.write_text(entry.format("It took 91 s"))
    assert check(tmp_path, table) == ["t: the timing's text does not show its date 2026-11-27"]


@pytest.mark.parametrize("value, digits, text", [(29020.0, 2, "2.9·10⁴"), (62750.0, 2, "6.3·10⁴"),
                                                 (1e7, 2, "10⁷"), (888.2, 3, "888"), (2e-6, 1, "2·10⁻⁶")])
def test_scientific_prints_as_the_prose_does(value, digits, text):
    assert scientific(value, digits) == text
