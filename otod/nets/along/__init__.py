"""The critical batch along training: S(B) sweeps branched at checkpoints of each seed's reference run (at steps
or at loss levels), and the cheap predictors of B_crit there with their ablation.
"""
