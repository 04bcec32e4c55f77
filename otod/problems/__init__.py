"""Test problems, each a *family*: a frozen spec (static shape options) that builds one problem per sweep value
and seed inside the compiled program.

A family is a `ProblemFamily` of pure functions, so the engine vmaps over problems the way optax composes
transformations: ``draws(rng) -> dict`` (the random numbers of one seed, drawn once in NumPy so the compiled
program holds no random-number generator), ``make(value, drawn) -> problem`` (a pytree of arrays), ``loss(problem, x) -> f(x) − f*``, and
``curvature(problem) -> Curvature`` (what the second-order methods may use).
"""

from otod.problems.base import Curvature, ProblemFamily, family
from otod.problems.kronecker import KroneckerSpec
from otod.problems.quadratic import BASES, SPECTRA, STARTS, QuadraticSpec, eigenvalues

__all__ = ["BASES", "SPECTRA", "STARTS", "Curvature", "KroneckerSpec", "ProblemFamily", "QuadraticSpec",
           "eigenvalues", "family"]
