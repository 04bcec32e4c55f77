"""The settings of a curvature and of a noise-scale measurement, typed: parsed once where they enter (the command's
options, `otod.nets.api`'s arguments, a figure spec) and read by attribute after.

A results file stores its settings as a dict (the config of its metadata) whose digest names the file; `CurvatureConfig`
and `NoiseScaleConfig` write that dict (``stored_for_net``, ``stored_for_model``) key for key as the dicts they
replace did, so every file keeps its name and its metadata.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


#: `otod.nets.model.problem.NetSpec` fields added after curvature and noise-scale files were committed (issue 52's
#: held-out targets, the transformer's heads): left out of a stored config while None, so that the files of every
#: earlier run keep their names (with them, `dataclasses.asdict` renamed every file and ``otod figures`` measured the
#: curvature again).
LATER_NET_FIELDS = ("held_out_targets", "reference_batch", "heads")


def stored_net(spec) -> dict[str, Any]:
    """``spec``'s fields as a stored config holds them: all of them, but `LATER_NET_FIELDS` where None."""
    return {k: v for k, v in dataclasses.asdict(spec).items() if not (k in LATER_NET_FIELDS and v is None)}


@dataclass(frozen=True)
class CurvatureConfig:
    """A curvature measurement along one SGD run (`otod.nets.measure.curvature`): the run (``checkpoints`` at
    ``lr``, root ``seed``; float64 with ``x64``), the top ``k`` eigenvalues by Lanczos, ``probes`` × ``lanczos_steps``
    of stochastic Lanczos quadrature, κ_q at ``quantile`` and κ_δ with ``damping``; ``per_layer``: each layer's
    diagonal block's top eigenvalue beside the net's (`otod.nets.measure.curvature_layers`)."""

    checkpoints: tuple[int, ...]
    lr: float
    seed: int
    k: int
    probes: int
    lanczos_steps: int
    quantile: float
    damping: float
    x64: bool = False
    per_layer: bool = False

    @property
    def precision(self) -> str:
        return "float64" if self.x64 else "float32"

    def stored_for_net(self, spec) -> dict[str, Any]:
        """The stored config of a measurement of otod's own net ``spec`` (`otod.nets.model.problem.NetSpec`);
        ``per_layer`` appears only where asked, so that the files of other runs keep their names."""
        from otod.nets.measure.dense import is_dense

        config = {"net": stored_net(spec), "k": self.k, "probes": self.probes,
                  "lanczos_steps": self.lanczos_steps, "checkpoints": [int(c) for c in self.checkpoints],
                  "lr": self.lr, "seed": self.seed, "quantile": self.quantile, "damping": self.damping,
                  "optimizer": "sgd", "precision": self.precision,
                  "spectrum": "dense" if is_dense(spec.parameter_count) else "slq"}
        return {**config, "per_layer": True} if self.per_layer else config

    def stored_for_model(self, name: str, digest: str, batch: int, chunk: int | None) -> dict[str, Any]:
        """The stored config of a measurement of a user's model (`otod.nets.model.contract.Model`) of this name
        and digest, trained at ``batch`` over data chunks of ``chunk`` examples (None: sized from the model)."""
        config = {"model": name, "model_digest": digest, "steps": list(self.checkpoints), "lr": float(self.lr),
                  "batch": batch, "seed": int(self.seed), "k": int(self.k), "probes": int(self.probes),
                  "lanczos_steps": self.lanczos_steps, "quantile": float(self.quantile),
                  "damping": float(self.damping), "precision": self.precision, "chunk": chunk}
        return {**config, "per_layer": True} if self.per_layer else config


@dataclass(frozen=True)
class NoiseScaleConfig:
    """A noise-scale measurement along one SGD run (`otod.nets.measure.noise_scale`): the run (``checkpoints`` at
    ``lr``, root ``seed``), the two-batch estimator's ``pairs`` (B_small, B_big) with ``draws`` nested draws each,
    and tr(HΣ) from ``trace_examples`` examples (None: all, exact); a user's model trains in float64 with ``x64``."""

    checkpoints: tuple[int, ...]
    lr: float
    seed: int
    pairs: tuple[tuple[int, int], ...]
    draws: int
    trace_examples: int | None = None
    x64: bool = False

    def stored_for_net(self, spec) -> dict[str, Any]:
        """The stored config of a measurement of otod's own net ``spec``; ``trace_examples`` only where given, so
        that the default run keeps its file name."""
        config = {"spec": stored_net(spec), "steps": list(self.checkpoints), "lr": self.lr,
                  "pairs": [list(p) for p in self.pairs], "draws": self.draws, "seed": self.seed}
        return config if self.trace_examples is None else {**config, "trace_examples": self.trace_examples}

    def stored_for_model(self, name: str, digest: str, batch: int, chunk: int | None) -> dict[str, Any]:
        """The stored config of a measurement of a user's model: measured in float64, trained in float64 with
        ``x64`` (else float32)."""
        return {"model": name, "model_digest": digest, "steps": list(self.checkpoints), "lr": float(self.lr),
                "batch": batch, "seed": int(self.seed), "pairs": [list(p) for p in self.pairs],
                "draws": int(self.draws), "trace_examples": self.trace_examples, "precision": "float64",
                "training_precision": "float64" if self.x64 else "float32", "chunk": chunk}
