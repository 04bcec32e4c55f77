"""The engine on the condition obstacle's problems: against the one reference loop, closed forms, and its
compilation count."""

import math

import numpy as np
import pytest

from otod.condition import theory
from otod.condition.kronecker import KroneckerSpec
from otod.condition.methods import METHODS, MethodOptions
from otod.condition.quadratic import QuadraticSpec
from otod.core.compilation_cache import count_compilations
from otod.core.engine import iterations_to_target
from otod.core.reference import reference_run
from otod.core.stopping import Status, Target

from tests.conftest import KRONECKER_EXACT, KRONECKER_PERTURBED, SMALL_RANDOM, SMALL_ROTATED, TWO_POINT

FAMILIES = {"eigen": SMALL_RANDOM, "rotated": SMALL_ROTATED, "kronecker": KRONECKER_EXACT,
            "kronecker-perturbed": KRONECKER_PERTURBED}


def run(spec, method, kappas, seeds, *, lrs=None, tol=1e-6, max_iters=10_000, options=MethodOptions(), **kw):
    v = np.repeat(np.asarray(kappas, float), seeds)
    s = np.tile(np.arange(seeds), len(kappas))
    lr = np.ones_like(v) if lrs is None else np.asarray(lrs, float)
    return v, s, iterations_to_target(spec, (METHODS[method],), {"kappa": v}, s, lr, target=Target(tol),
                                      max_iters=max_iters, options=options, **kw)


def admitted(spec):
    provides = spec.family().provides
    return [m for m, method in METHODS.items() if method.needs <= provides]


CONTRACT = [(f, m) for f, spec in FAMILIES.items() for m in admitted(spec)]


def diagonal(contract):
    """One (family, method) pair per method, the families taken in turn among those that admit it: every family
    and every method is in it. The fast suite runs these; the whole cross runs with ``-m slow``."""
    families = list(dict.fromkeys(f for f, _ in contract))
    chosen, turn = set(), 0
    for method in dict.fromkeys(m for _, m in contract):
        admitting = [f for f in families if (f, method) in contract]
        family = min(admitting, key=lambda f: (families.index(f) - turn) % len(families))
        chosen.add((family, method))
        turn = families.index(family) + 1
    return chosen


FAST = diagonal(CONTRACT)


@pytest.mark.parametrize("family,method", [pytest.param(f, m, marks=() if (f, m) in FAST else pytest.mark.slow)
                                           for f, m in CONTRACT], ids=[f"{f}-{m}" for f, m in CONTRACT])
def test_every_family_and_method_equals_the_reference_loop_exactly_in_float64(x64, family, method):
    """The contract: same problems, the method's own standalone optax form in a plain Python loop, same stopping
    rule: identical iteration counts and statuses, with no tolerance."""
    spec = FAMILIES[family]
    v, s, sol = run(spec, method, [3.0, 60.0], 2, max_iters=3000)
    ref = [reference_run(spec, METHODS[method], {"kappa": k}, i, target=Target(1e-6), max_iters=3000,
                         options=MethodOptions()) for k, i in zip(v, s)]
    assert sol.iterations.tolist() == [r.iterations for r in ref]
    assert [int(x) for x in sol.status] == [int(Status[r.status.upper()]) for r in ref]


def test_kfac_is_refused_on_a_problem_without_kronecker_factors():
    from otod.condition.options import condition_sweep
    from otod.core.errors import OtodError

    with pytest.raises(OtodError, match="needs kronecker, which the quadratic problem does not provide"):
        condition_sweep((1.0, 2.0), methods=("kfac",))


def test_gd_opt_on_two_point_spectrum_equals_closed_form(x64):
    """Step 2/(L+μ) contracts both eigendirections by exactly ρ = (κ−1)/(κ+1): k = ⌈ln(1/ε)/(2 ln(1/ρ))⌉ ± 1."""
    v, _, sol = run(TWO_POINT, "gd-opt", np.geomspace(1, 1e4, 25), 2, max_iters=200_000)
    predicted = np.array([theory.iterations("gd-opt", k, 1e-6) for k in v])
    assert np.all(sol.status == Status.CONVERGED)
    assert np.max(np.abs(sol.iterations - predicted)) <= 1


@pytest.mark.parametrize("spec", [SMALL_RANDOM, SMALL_ROTATED, KRONECKER_EXACT])
def test_newton_takes_one_iteration_at_every_kappa(spec):
    _, _, sol = run(spec, "newton", np.geomspace(1, 1e4, 9), 2)
    assert sol.iterations.tolist() == [1] * 18


@pytest.mark.slow  # 10 s of KFAC compiles
def test_kfac_is_exact_on_kronecker_and_slows_as_perturbation_grows():
    """ε = 0: (A⊗B)⁻¹ is H⁻¹, one iteration. ε > 0: KFAC's preconditioned Hessian has eigenvalues in [1, 1+ε],
    so step 1 contracts the error by ≤ ε per iteration: at most ⌈ln(1/tol)/(2 ln(1/ε))⌉ + 1 iterations."""
    counts = []
    for eps in (0.0, 0.05, 0.3, 0.8):
        _, _, sol = run(KroneckerSpec(rows=4, cols=5, perturbation=eps), "kfac", [10.0, 100.0, 1000.0], 2)
        assert np.all(sol.status == Status.CONVERGED)
        counts.append(int(np.max(sol.iterations)))
        if eps:
            assert counts[-1] <= math.ceil(math.log(1e6) / (2 * math.log(1 / eps))) + 1
    assert counts[0] == 1
    assert counts == sorted(counts) and counts[-1] > counts[1] > counts[0]


@pytest.mark.parametrize("method", ["gd", pytest.param("heavy-ball", marks=pytest.mark.slow),
                                    pytest.param("nesterov", marks=pytest.mark.slow), "newton"])
def test_eigen_and_rotated_bases_agree(x64, method):
    """A rotation changes nothing for rotation-equivariant methods: same counts up to rounding (±1). At κ = 2 and
    300, 2 seeds: the lanes of the contract's runs (2 points × 2 seeds, float64; κ, tol and the cap are traced), so
    eigen gd and rotated newton reuse its programs."""
    _, _, eig = run(SMALL_RANDOM, method, [2.0, 300.0], 2, tol=1e-8, max_iters=20_000)
    _, _, rot = run(SMALL_ROTATED, method, [2.0, 300.0], 2, tol=1e-8, max_iters=20_000)
    assert np.max(np.abs(eig.iterations - rot.iterations)) <= 1


def test_one_compilation_per_program_whatever_the_number_of_sweep_values():
    counts = []
    for n in (10, 100):
        spec = QuadraticSpec(dim=8 + n % 7)  # a fresh spec each time, so neither run hits the other's cache
        loads: list = []
        with count_compilations(loads) as compiles:
            run(spec, "gd", np.linspace(1, 50, n), 4, tol=1e-4)
        counts.append(len(compiles) + len(loads))  # compiled, or loaded from the suite's compilation cache
    assert counts == [1, 1]


def test_diverging_learning_rate_marks_lanes_diverged_and_others_finish():
    """GD diverges for steps > 2/L: multipliers 2.5 and 10 of 1/L diverge, 1 converges, 1e-4 is censored."""
    _, _, sol = run(SMALL_RANDOM, "gd", [50.0] * 4, 1, lrs=[1.0, 2.5, 10.0, 1e-4], max_iters=2000)
    assert sol.status.tolist() == [Status.CONVERGED, Status.DIVERGED, Status.DIVERGED, Status.CENSORED]
    assert int(sol.iterations[3]) == 2000


def test_kfac_damping_option_reaches_the_transformation():
    """Damping λ makes the step (A+λ)⁻¹A ≠ I: with λ = 1 (μ = 1) KFAC needs more than one iteration."""
    _, _, sol = run(KRONECKER_EXACT, "kfac", [10.0], 1, options=MethodOptions(damping=1.0))
    assert int(sol.iterations[0]) > 1


def test_ladder_records_every_rung_and_equals_separate_runs(x64):
    """One run with the ladder 1e-2 … 1e-8 gives, at each rung, the count a separate run to that tol gives. Adam
    (its loss is not monotone) on the eigen problem, 2 points × 2 seeds in float64: each separate run is the
    contract's eigen-adam program (tol and the cap are traced), only the ladder's is compiled here."""
    ladder = (1e-2, 1e-4, 1e-6, 1e-8)
    v = np.repeat([3.0, 40.0], 2)
    s = np.tile(np.arange(2), 2)
    sol = iterations_to_target(SMALL_RANDOM, (METHODS["adam"],), {"kappa": v}, s, np.ones(4),
                               target=Target(1e-8, ladder=ladder), max_iters=5000, options=MethodOptions())
    assert np.all(sol.status == Status.CONVERGED)  # every rung reached
    for j, tol in enumerate(ladder):
        alone = iterations_to_target(SMALL_RANDOM, (METHODS["adam"],), {"kappa": v}, s, np.ones(4),
                                     target=Target(tol), max_iters=5000, options=MethodOptions())
        assert sol.hits[:, j].tolist() == alone.iterations.tolist()


def test_check_every_rounds_counts_up_to_its_multiple(x64):
    """gd's loss falls monotonically, so checking every 7 iterations stops at the first multiple of 7 at or past
    the exact count: ⌈k/7⌉·7."""
    _, _, exact = run(SMALL_RANDOM, "gd", [5.0, 50.0], 2)
    v = np.repeat([5.0, 50.0], 2)
    coarse = iterations_to_target(SMALL_RANDOM, (METHODS["gd"],), {"kappa": v}, np.tile(np.arange(2), 2),
                                  np.ones(4), target=Target(1e-6, check_every=7), options=MethodOptions())
    assert coarse.iterations.tolist() == [int(math.ceil(k / 7) * 7) for k in exact.iterations]
