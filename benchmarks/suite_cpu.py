"""Sum a test run's CPU seconds per test file and list the dearest tests, from the log that
``OTOD_TEST_CPU_LOG=path python3 -m pytest ...`` writes (tests/conftest.py): one "seconds<TAB>node id" line per test.

CPU seconds, not wall: on a shared 2-core machine a test's wall time depends on what else runs, its CPU time much
less, and the suite's wall at ``-n 2`` is about its CPU total over 2.

    python benchmarks/suite_cpu.py /tmp/cpu.log            # the 40 dearest files and tests
    python benchmarks/suite_cpu.py /tmp/cpu.log --top 80
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path


def per_test(log: Path) -> dict[str, float]:
    """Each test's CPU seconds (summed where a node id appears twice, e.g. a rerun)."""
    out: Counter = Counter()
    for line in log.read_text().splitlines():
        seconds, _, rest = line.partition("\t")
        if rest:
            out[rest.split("\t")[0]] += float(seconds)
    return dict(out)


def compile_parts(log: Path) -> Counter:
    """The suite's seconds of tracing, lowering and compiling (the "part=seconds" fields, where the log has them;
    in this process's threads, so a part of the CPU seconds, not added to them)."""
    out: Counter = Counter()
    for line in log.read_text().splitlines():
        for field in line.split("\t")[2:]:
            part, _, seconds = field.partition("=")
            out[part] += float(seconds)
    return out


def per_file(tests: dict[str, float]) -> Counter:
    out: Counter = Counter()
    for node, seconds in tests.items():
        out[node.split("::")[0]] += seconds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    tests = per_test(args.log)
    print(f"{len(tests)} tests, {sum(tests.values()):.0f} CPU-s in all")
    parts = compile_parts(args.log)
    if parts:
        print("of which JAX spent (wall s in the test's process): "
              + ", ".join(f"{part} {seconds:.0f}" for part, seconds in parts.items()))
    print("\nCPU-s  file")
    for name, seconds in per_file(tests).most_common(args.top):
        print(f"{seconds:6.1f}  {name}")
    print("\nCPU-s  test")
    for node, seconds in Counter(tests).most_common(args.top):
        print(f"{seconds:6.1f}  {node}")


if __name__ == "__main__":
    main()
