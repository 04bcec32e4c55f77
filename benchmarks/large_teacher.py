"""Wall time and peak memory of ``otod curvature`` and ``otod noise-scale --model mlp`` on a teacher–student MLP
with P ≥ 10⁶ parameters (issue 36 item 4): relu MLP 16 → 1000 → 1000 → 1 (depth 3, P = 1,019,001) on ``--examples``
generated examples, at init (``--steps 0``), the data in chunks (the default chunk, printed in the header). Each
command runs in a fresh process under ``/usr/bin/time`` (GNU time): its wall time and peak resident memory.

    PYTHONPATH=. python3 benchmarks/large_teacher.py 10000            # n = 10⁴ (about 8 + 5 min on 2 shared cores)
    PYTHONPATH=. python3 benchmarks/large_teacher.py 100000 curvature  # one command only

The curvature is the cheapest that still measures λ_max: the top eigenvalue (``--k 1``, 43 Lanczos steps: 43
Hessian-vector products over all n examples) and a 1-probe, 2-step SLQ; the noise scale estimates tr(HΣ) from 4
examples (``--trace-examples 4``: 4 HVPs over the data) and prints its standard error. Both scale as n × P per
product (one HVP ≈ 4 forward passes over the data).

Measured on the 2-core development machine shared with other jobs (load average 9-13), P = 1,019,001:
- curvature, n = 10⁴: 505 s in the measurement (8 min 31 s wall), peak 824 MiB; λ_max 661.08 (residual bound
  7.9e-5), data in chunks of the default size (about 11 s per Hessian-vector product over the 10⁴ examples);
- one float32 Hessian-vector product over n = 10⁵ examples (chunks of 4,096): 60-77 s, peak 596 MiB, so the
  curvature at n = 10⁵ (about 46 products) would take about 50 min on this machine;
- noise-scale, n = 5,000: 327 s wall, peak 1,596 MiB; tr(HΣ) from 4 examples 3.07e5 ± 2.6e5 (standard error);
  at n = 10⁴ it did not finish in 600 s. The exact tr Σ takes every per-example gradient (an 8 MB float64 vector
  each at this P): 39-43 ms per example here, vmapping 8 or 32 at a time was slower (74-78 ms per example), so
  tr Σ alone at n = 10⁵ would take about 70 min.
"""

import subprocess
import sys
import tempfile

NET = ["--data", "teacher", "--width", "1000", "--depth", "3", "--steps", "0", "--yes", "--out", "/tmp/otod-large"]
COMMANDS = {"curvature": ["curvature", *NET, "--k", "1", "--probes", "1", "--lanczos-steps", "2"],
            "noise-scale": ["noise-scale", "--model", "mlp", *NET, "--trace-examples", "4", "--pairs", "8:64",
                            "--draws", "8"]}


def run(name: str, examples: int) -> None:
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        args = ["/usr/bin/time", "-f", "%e %M", "-o", out.name, sys.executable, "-m", "otod", *COMMANDS[name],
                "--examples", str(examples)]
        proc = subprocess.run(args, capture_output=True, text=True)
        wall, peak = out.read().split()[-2:]
    print(f"{name} n = {examples:,}: {float(wall):.0f} s wall, peak {int(peak) / 1024:.0f} MiB, exit {proc.returncode}")
    print(proc.stdout[-3000:] or proc.stderr[-2000:])


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    for command in sys.argv[2:] or list(COMMANDS):
        run(command, n)
