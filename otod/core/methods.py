"""The contract for methods, and the transformations more than one obstacle uses.

A `Method` is an optax transformation factory with what the engine needs around it: its reference step size,
the information it must read from the family (``needs``: "curvature", "kronecker", ...), its hyperparameters
as arrays, and the compiled program it shares. Methods with the same ``program`` have the same transformation
shape and differ only in arrays (gd, heavy ball and Nesterov are all `momentum` with their own β and ν), so they
run as one compiled, vmapped program. A method that needs what a family does not provide is refused with one
line (`check_admits`), never fed a placeholder.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

from otod.core.errors import OtodError
from otod.core.lazy import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
optax = lazy("optax")

Info = Mapping[str, Any]


class Method(NamedTuple):
    """A method: ``build(lr, info, options, hyper)`` returns its optax transformation; ``reference_lr(info)`` its
    reference step (``--lr theory`` uses it, ``--lr tuned`` multiplies it); ``hyperparameters(info)`` the arrays
    besides the step it fixes (momentum β, Nesterov weight ν), which ``build`` uses when ``hyper`` is None.
    ``reference`` says where the step comes from; ``standalone`` is the method in its cheapest optax form (for
    counting the FLOPs of one of its iterations). ``tuned_by_default``: its reference step is no theory (a
    scale-dependent constant), so ``--lr theory`` tunes it over the grid instead."""

    reference_lr: Callable[[Info], jax.Array]
    build: Callable[..., optax.GradientTransformation]
    reference: str
    needs: frozenset = frozenset()
    program: str | None = None
    hyperparameters: Callable[[Info], tuple] = lambda info: ()
    standalone: Callable[..., optax.GradientTransformation] | None = None
    tuned_by_default: bool = False

    def cheapest(self, lr, info: Info, options) -> optax.GradientTransformation:
        return (self.standalone or self.build)(lr, info, options)


def lookup(table: Mapping[str, Method], name: str, sweep: str) -> Method:
    """A method of ``table`` by name; an unknown one raises `OtodError` listing the known ones."""
    try:
        return table[name]
    except KeyError:
        raise OtodError(f"--method {name}: unknown method for {sweep} sweeps; choose from {', '.join(table)}, "
                        f"e.g. --method {next(iter(table))}") from None


def check_admits(provides: frozenset, method: Method, name: str, family_kind: str) -> None:
    """Refuse a method that needs information the family does not provide."""
    missing = sorted(set(method.needs) - set(provides))
    if missing:
        offered = ", ".join(sorted(provides)) or "nothing"
        hint = " (add --problem kronecker)" if "kronecker" in missing else ""
        raise OtodError(f"--method {name}: needs {', '.join(missing)}, which the {family_kind} problem does not "
                        f"provide (it offers {offered}){hint}")


def programs(table: Mapping[str, Method], names) -> list[tuple[str, ...]]:
    """Group method names into compiled programs: the members of one ``program`` together (in the given order),
    every other method alone."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(table[name].program or name, []).append(name)
    return [tuple(g) for g in groups.values()]


def precondition(direction: Callable[[jax.Array], jax.Array]) -> optax.GradientTransformation:
    """A stateless transformation g ↦ direction(g), e.g. g ↦ H⁻¹g for Newton."""

    def init(params):
        del params
        return optax.EmptyState()

    def update(updates, state, params=None):
        del params
        return jax.tree.map(direction, updates), state

    return optax.GradientTransformation(init, update)


class MomentumState(NamedTuple):
    """The running momentum m_t of `momentum`."""

    trace: optax.Updates


def momentum(decay, nesterov) -> optax.GradientTransformation:
    """optax's ``trace`` with its decay β and its Nesterov switch ν as (traced) arrays rather than Python values:
    m_t = g_t + β m_{t−1}; update = ν (g_t + β m_t) + (1 − ν) m_t.

    With β = 0 this is plain gradient descent, with ν = 0 Polyak's heavy ball, with ν = 1 Nesterov's method in
    Sutskever's form; for β ≥ 0 and ν ∈ {0, 1} it is bitwise ``optax.trace(β, nesterov=bool(ν))`` (0·a + 1·b = b
    exactly). Being arrays, β and ν can differ per lane (a tuned β axis, or several methods in one program).
    """

    def init(params):
        return MomentumState(jax.tree.map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        del params
        trace = jax.tree.map(lambda g, m: g + decay * m, updates, state.trace)
        out = jax.tree.map(lambda g, m: nesterov * (g + decay * m) + (1 - nesterov) * m, updates, trace)
        return out, MomentumState(trace)

    return optax.GradientTransformation(init, update)
