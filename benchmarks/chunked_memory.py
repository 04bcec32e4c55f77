"""Peak memory of one Hessian-vector product of a model's mean loss over n = 20,000 examples, in one call against
chunks (`otod.nets.model.chunked.chunked_mean`): a tanh MLP 64 → 512 → 512 → 1 (P = 33,280), float64, each chunk size in
a fresh process (peak resident memory, ru_maxrss).

    PYTHONPATH=. python3 benchmarks/chunked_memory.py            # chunks 20000 (one call), 2000, 500
"""

import resource
import subprocess
import sys
import time


def one(chunk: int) -> None:
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    from otod.nets.model.chunked import chunked_mean

    jax.config.update("jax_enable_x64", True)
    n, d, w = 20000, 64, 512
    key = jax.random.PRNGKey(0)
    x, y = jax.random.normal(key, (n, d)), jax.random.normal(key, (n,))
    params = {"w1": jax.random.normal(key, (d, w)) / 8, "w2": jnp.eye(w) / 20, "w3": jax.random.normal(key, (w,)) / 20}

    def loss(p, batch):
        xb, yb = batch
        return jnp.mean((jnp.tanh(jnp.tanh(xb @ p["w1"]) @ p["w2"]) @ p["w3"] - yb) ** 2)

    f = chunked_mean(loss, chunk)
    flat, unflatten = ravel_pytree(params)
    grad = jax.grad(lambda v: f(unflatten(v), x, y))
    hvp = jax.jit(lambda v, u: jax.jvp(grad, (v,), (u,))[1])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    out = hvp(flat, flat).block_until_ready()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"chunk {chunk:>6}: peak {peak:.0f} MiB (before the product {before:.0f} MiB), {time.perf_counter() - start:.1f} s "
          f"with its compile, |Hv| {float(jnp.linalg.norm(out)):.12g}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        one(int(sys.argv[1]))
    else:
        for chunk in (20000, 2000, 500):
            subprocess.run([sys.executable, __file__, str(chunk)], check=True)
