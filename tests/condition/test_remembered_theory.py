"""The theory columns a condition sweep's report reads, remembered across processes: the same numbers as computing
them, read back from the side cache; nothing kept when the cache is off."""

from __future__ import annotations

import json

from otod.condition import predictions, theory
from otod.core import compilation_cache


def fresh(monkeypatch, value):
    monkeypatch.setenv(compilation_cache.ENV, value)
    monkeypatch.setattr(compilation_cache, "_REMEMBERED", {})


def test_bounds_remembered_equal_computed(tmp_path, monkeypatch):
    fresh(monkeypatch, str(tmp_path / "xla"))
    cases = [("gd", 37.0), ("heavy-ball", 100.0), ("nesterov", 12.0), ("newton", 5.0), ("adam", 5.0)]
    first = [predictions.bound_iterations(m, k, 1e-6, 10**6, 0.0) for m, k in cases]
    assert first == [theory.bound_iterations(m, k, 1e-6, max_iters=10**6) for m, k in cases]
    stored = json.loads((tmp_path / "xla-bounds.json").read_text())
    assert len(stored) == len(cases)
    fresh(monkeypatch, str(tmp_path / "xla"))  # a later process: read back, not computed
    monkeypatch.setattr(theory, "bound_iterations", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    assert [predictions.bound_iterations(m, k, 1e-6, 10**6, 0.0) for m, k in cases] == first


def test_remembered_off_computes_and_keeps_nothing(tmp_path, monkeypatch):
    fresh(monkeypatch, "off")
    calls = []
    for _ in range(2):
        assert compilation_cache.remembered("x", "k", lambda: calls.append(1) or 7) == 7
    assert len(calls) == 2
    assert not list(tmp_path.iterdir())


def test_remembered_key_names_the_code(tmp_path, monkeypatch):
    fresh(monkeypatch, str(tmp_path / "xla"))
    predictions.bound_iterations("gd", 10.0, 1e-6, 10**6, 0.0)
    (key,) = json.loads((tmp_path / "xla-bounds.json").read_text())
    assert predictions.code_version() in key
