"""The cost of one iteration: forward, backward and update FLOPs (XLA's count and the layer formulas) and time."""
