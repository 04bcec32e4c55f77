"""What the net report reads off a fit: a B_crit beyond the batches it was fitted on enters no rule or ratio."""

from otod.nets.report import inside


def test_a_b_crit_counts_only_inside_the_batches_of_its_fit():
    batches = [8, 16, 1024]
    assert inside(31.1, batches) and inside(8, batches) and inside(1024, batches)
    assert not inside(1651.0, batches)  # heavy-ball's predicted B_crit, fitted over B ≤ 1024
    assert not inside(4.0, batches) and not inside(float("inf"), batches) and not inside(31.1, [])
