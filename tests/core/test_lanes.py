"""A block's lanes (`otod.core.lanes`): what the set-up computes from a seed's draws alone is found, so that it
stays one array per seed."""

import jax
import numpy as np

from otod.condition.methods import METHODS
from otod.core.dynamics import optax_dynamics
from otod.core.engine import seed_draws
from otod.core.lanes import lane_dependent

from tests.conftest import SMALL_ROTATED


def test_a_seeds_rotation_is_found_to_depend_on_the_seed_alone():
    """The set-up of a rotated quadratic reads the rotation from the seed's draws and κ from the lane: the
    rotation (in the problem and in the curvature Newton reads) is shared by the seed's lanes, the eigenvalues
    and the start are not."""
    family = SMALL_ROTATED.family()
    dynamics = optax_dynamics(family, (METHODS["newton"],), None, True)
    drawn = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype),
                         seed_draws(SMALL_ROTATED, 0, 1, np.float32))
    lane = (({"kappa": jax.ShapeDtypeStruct((), np.float32)}), jax.ShapeDtypeStruct((), np.float32),
            jax.ShapeDtypeStruct((), np.int32))

    def set_up(point, lr, m, drawn):
        return dynamics.set_up(point, drawn, lr, m)

    shape = jax.eval_shape(set_up, *lane, drawn)
    dependent = jax.tree.unflatten(jax.tree.structure(shape), lane_dependent(set_up, lane, (drawn,)))
    problem, info = dependent.constants[0], dependent.constants[1]
    assert problem["rotation"] is False and info["curvature"].hessian_eigenvectors is False
    assert problem["eigenvalues"] is True and problem["x_star"] is False
