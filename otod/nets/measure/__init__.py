"""What is measured on a net: its curvature (Lanczos, SLQ and its error, the dense spectrum, per layer), its
gradient noise scales, the training runs to the checkpoints they are read at, and the NQM built from a net's
measured spectrum and noise (the bridge).
"""
