"""Time the full FLOP table (4 Epoch networks × 5 batches × 2 optimizers), compile included.

Target: under a minute on 2 CPU cores. Run: python benchmarks/bench_cost.py
"""

import time

from otod.cost import flops as F
from otod.cost import models as M

if __name__ == "__main__":
    start = time.perf_counter()
    rows = F.flops_table([M.network(n) for n in ("linearnet", "onenet", "convnet", "deeperconvnet")],
                         [1, 4, 16, 64, 256], ["sgd", "adam"])
    print(f"{len(rows)} rows in {time.perf_counter() - start:.1f} s (compile included)")
