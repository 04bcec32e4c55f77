"""XLA cost counting: normalisation of cost_analysis() forms and counts of known programs."""

import jax
import jax.numpy as jnp

from otod.core.xla import Cost, compiled_cost, has_while_loop, normalise_cost_analysis


def test_normalise_dict_list_none_and_missing_keys():
    # Theory: a dict, a list of one dict and a list of two dicts are the same counters (summed); absent keys = 0.
    d = {"flops": 10.0, "bytes accessed": 4.0}
    assert normalise_cost_analysis(d) == Cost(10.0, 0.0, 4.0)
    assert normalise_cost_analysis([d]) == Cost(10.0, 0.0, 4.0)
    assert normalise_cost_analysis([d, {"transcendentals": 3.0}]) == Cost(10.0, 3.0, 4.0)
    assert normalise_cost_analysis(None) == Cost(0.0, 0.0, 0.0)
    assert normalise_cost_analysis([{}]) == Cost(0.0, 0.0, 0.0)


def test_matmul_flops_exact_from_abstract_shapes():
    # Theory: (m×k)@(k×n) costs 2·m·k·n FLOPs, no transcendentals; exact (tolerance 0).
    m, k, n = 8, 32, 16
    a = jax.ShapeDtypeStruct((m, k), jnp.float32)
    b = jax.ShapeDtypeStruct((k, n), jnp.float32)
    cost = compiled_cost(jnp.matmul, a, b)
    assert cost.flops == 2 * m * k * n
    assert cost.transcendentals == 0
    assert cost.bytes_accessed > 0


def test_transcendentals_counted_apart():
    # Theory: tanh of an n-vector is n transcendentals, and they are not in `flops`.
    n = 100
    cost = compiled_cost(jnp.tanh, jax.ShapeDtypeStruct((n,), jnp.float32))
    assert cost.transcendentals == n
    assert cost.flops < n


def test_kwargs_and_cost_arithmetic():
    x = jax.ShapeDtypeStruct((4, 4), jnp.float32)
    cost = compiled_cost(lambda a, b: a @ b, x, b=x)
    assert cost.flops == 2 * 4 * 4 * 4
    assert (cost - cost) == Cost(0.0, 0.0, 0.0)
    assert (cost + cost).flops == 2 * cost.flops


def test_loop_trap_detected():
    # XLA counts a while-loop body once: a 10-step fori_loop of a matmul reports one matmul's FLOPs, not 10.
    x = jax.ShapeDtypeStruct((16, 16), jnp.float32)

    def looped(a):
        return jax.lax.fori_loop(0, 10, lambda i, acc: acc @ a, a)

    one = compiled_cost(lambda a: a @ a, x).flops
    assert has_while_loop(looped, x)
    assert not has_while_loop(lambda a: a @ a, x)
    assert compiled_cost(looped, x).flops < 2 * one  # the trap is real: not 10x
