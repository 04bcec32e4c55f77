"""otod: measurements of why training takes so many sequential iterations.

The name is the initials of the three Obstacles TO Decreasing serial complexity: nonlinearity, conditioning and
gradient noise; beside them otod measures the cost of one iteration.
"""

__version__ = "0.1.0"
