"""FLOPs of one iteration (the whole bill) against analytic counts."""

import pytest

from otod.condition.bill import iteration_cost
from otod.condition.kronecker import KroneckerSpec
from otod.condition.quadratic import QuadraticSpec


def test_kfac_costs_gd_plus_its_two_factor_products():
    """KFAC's update A⁻¹ G B⁻¹ on an m×n matrix adds two matrix products, 2m²n + 2mn² FLOPs, to gd's iteration."""
    m, n = 6, 9
    spec = KroneckerSpec(rows=m, cols=n, perturbation=0.1)
    extra = iteration_cost(spec, "kfac", 100.0).flops - iteration_cost(spec, "gd", 100.0).flops
    assert extra == 2 * m * m * n + 2 * m * n * n


@pytest.mark.parametrize("method", ["gd", "heavy-ball", "newton"])
def test_diagonal_quadratic_iteration_is_linear_in_d(method):
    """On a diagonal quadratic every operation is element-wise or a sum: cost = c·d + c₀ exactly, with c between
    5 and 20 FLOPs per coordinate (gd: −ηg, x+u, x−x*, λz, z·λz, the sum and the gradient's products)."""
    f = {d: iteration_cost(QuadraticSpec(dim=d), method, 10.0).flops for d in (32, 64, 128)}
    per_coordinate = (f[128] - f[64]) / 64
    assert f[64] - f[32] == per_coordinate * 32
    assert 5 <= per_coordinate <= 20


def test_rotated_quadratic_iteration_is_two_matrix_vector_products():
    """With H = QΛQᵀ the loss needs Qᵀe and its gradient Q(λz): two d×d matrix–vector products, 4d² FLOPs,
    plus O(d)."""
    d = 128
    rotated = iteration_cost(QuadraticSpec(dim=d, basis="rotated"), "gd", 10.0).flops
    diagonal = iteration_cost(QuadraticSpec(dim=d), "gd", 10.0).flops
    assert rotated - diagonal == pytest.approx(4 * d * d, rel=0.02)


def test_set_up_counts_the_factorisations_each_method_needs():
    """Kronecker 6×9 (d = 54): Newton's eigendecomposition 9d³, the first-order methods' eigenvalues 4d³/3, KFAC's
    two damped inverses 2·6³ + 2·9³; on a quadratic built from its eigendecomposition nothing."""
    from otod.condition.bill import setup_flops

    spec = KroneckerSpec(rows=6, cols=9, perturbation=0.1)
    assert setup_flops(spec, "newton") == 9 * 54 ** 3
    assert setup_flops(spec, "gd") == pytest.approx(4 * 54 ** 3 / 3)
    assert setup_flops(spec, "kfac") == 2 * 6 ** 3 + 2 * 9 ** 3
    assert setup_flops(QuadraticSpec(dim=64, basis="rotated"), "newton") == 0.0
    assert setup_flops(QuadraticSpec(dim=64, basis="rotated"), "jacobi") == pytest.approx(4 * 64 ** 3 / 3 + 64 ** 2)


def test_at_zero_perturbation_the_kronecker_spectrum_costs_no_factorisation():
    """H = A ⊗ B at ε = 0: eigenvalues a_i·b_j and eigenvectors U_A ⊗ U_B are known by construction."""
    from otod.condition.bill import setup_flops

    spec = KroneckerSpec(rows=6, cols=9, perturbation=0.0)
    assert setup_flops(spec, "newton") == 0.0 and setup_flops(spec, "gd") == 0.0
    assert setup_flops(spec, "jacobi") == pytest.approx(4 * (6 ** 3 + 9 ** 3) / 3 + 2 * (36 + 81))


def test_flops_of_one_iteration_are_counted_once_then_read_back_from_disk(tmp_path, monkeypatch):
    """The second count of the same (method, shape) is a cache hit (the hit is observed) with no XLA compile, and
    gives the same number; another shape is counted afresh."""
    from otod.condition.bill import flops_per_iteration
    from otod.core.compilation_cache import count_compilations

    monkeypatch.setenv("OTOD_COMPILATION_CACHE", str(tmp_path / "xla"))
    spec = QuadraticSpec(dim=24)
    hits: list[str] = []
    loads: list[list] = [[], [], []]  # programs XLA's own cache (the suite's) gave instead of a compile
    with count_compilations(loads[0]) as first:
        counted = flops_per_iteration(spec, ("gd", "nesterov"), 10.0, on_hit=hits.append)
    with count_compilations(loads[1]) as second:
        again = flops_per_iteration(spec, ("gd", "nesterov"), 1000.0, on_hit=hits.append)
    assert len(first) + len(loads[0]) == 2 and len(second) + len(loads[1]) == 0
    assert len(hits) == 2 and again == counted
    assert (tmp_path / "xla-flops.json").exists()
    with count_compilations(loads[2]) as other:
        flops_per_iteration(QuadraticSpec(dim=25), ("gd",), 10.0, on_hit=hits.append)
    assert len(other) + len(loads[2]) == 1 and len(hits) == 2
