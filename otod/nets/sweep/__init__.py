"""Steps to target against batch, width, depth and data of a net, through the core: the sweep kind, the net's
options, the NQM's predicted S(B), the FLOP bill and the report.
"""
