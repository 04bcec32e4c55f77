"""The nets obstacle's figure makers: S(B), B_crit against P and the data, depth, curvature, along training, the
predictors, the batch schedule and the workloads.
"""
