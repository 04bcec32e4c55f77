"""A batch schedule against the best constant batch: phases through the core, their statistics, and the NQM's
predicted saving.
"""
