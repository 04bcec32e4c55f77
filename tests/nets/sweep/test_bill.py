"""The bill's FLOPs per iteration: XLA's count of one SGD step against the layer rule computed without XLA."""

from __future__ import annotations

import pytest

import otod.nets  # noqa: F401
from otod.nets.sweep.bill import iteration_flops, layer_rule_flops
from otod.nets.model.problem import NetSpec


@pytest.mark.parametrize("spec", [NetSpec(), NetSpec(width=32, depth=4), NetSpec(model="cnn", width=8, depth=3),
                                  NetSpec(data="teacher", loss="squared", width=64)],
                         ids=["mlp", "mlp-depth4", "cnn", "teacher"])
@pytest.mark.parametrize("batch", [8, 256])
def test_xla_counts_the_layer_rule_plus_the_elementwise_work(spec, batch):
    """The layer rule (forward 2·fan_in·fan_out, backward 1:1 first layer and 2:1 the others, update 2 per
    parameter) leaves out biases, activations, pooling and the loss, O(outputs) per layer against the products'
    O(fan_in·outputs): XLA's count lies above the rule, by less than 12% where every fan-in is ≥ 16 (the nets
    here: 2.6% for the default MLP, 9.6% for a CNN of 8 channels, whose 3×3×1 first layer has fan-in 9)."""
    rule, xla = layer_rule_flops(spec, batch), iteration_flops(spec, "sgd", batch)
    assert rule <= xla <= 1.12 * rule, (rule, xla, xla / rule)


def test_a_grids_cells_at_one_width_share_one_count(monkeypatch):
    """The step sees one minibatch of B examples, each of the training set's shape whatever its size D: two cells
    (D = 64, 256) at one width lower one program per batch (the count's spy sees 2 calls for 2 batches, not 4),
    and each cell's count is the one lowered for it alone; another width is another program."""
    import dataclasses

    from otod.cost import flops
    from otod.nets.sweep import bill

    calls = []
    real = flops.iteration_flops
    monkeypatch.setattr(flops, "iteration_flops", lambda *a: calls.append(a) or real(*a))
    monkeypatch.setattr(bill, "_SPECS", {})
    bill._counted.cache_clear()
    spec = NetSpec(data="teacher", loss="squared", width=4, examples=64, held_out_targets="64:4:0.5:0.1:interior;"
                   "256:4:0.4:0.1:interior", reference_batch=2, batch=2)
    cells = [spec, dataclasses.replace(spec, examples=256)]
    counts = {(c.examples, b): iteration_flops(c, "sgd", b) for c in cells for b in (2, 8)}
    assert len(calls) == 2
    alone = {}
    for c in cells:
        for b in (2, 8):
            bill._counted.cache_clear()
            monkeypatch.setattr(bill, "_SPECS", {})
            alone[c.examples, b] = iteration_flops(c, "sgd", b)
    assert counts == alone
    assert bill.step_key(dataclasses.replace(spec, width=8)) != bill.step_key(spec)
    bill._counted.cache_clear()
