"""The claims table: every number the README, ``docs/`` and the figures' captions state from a measurement, with
the results file it comes from and how it is read (issue 50, "claims with a source").

The table (``docs/claims.toml``) holds one ``[[claim]]`` per printed statement::

    [[claim]]
    id = "nets.steps_vs_batch.b_crit"
    text = "B_crit 29.8 [23.1, 35.1]"          # exactly as printed (whitespace runs count as one space)
    source = ["results/net-a0f950906e.parquet"]  # committed results, relative to the checkout
    reader = "critical_batch"                    # a function of `otod.claim_readers.READERS`
    args = { width = 32 }                         # its arguments
    format = "B_crit {b_crit:.1f} [{lo:.1f}, {hi:.1f}]"

A reader recomputes named values from the records through the same analysis the figures use (`otod.core.pipeline`
and the obstacles' fits); ``format`` turns them into text (`render`), which must equal ``text``, and ``text`` must
appear in the README, a ``docs/**/*.md`` page or a ``figures/*.caption.txt``. So a results file that changes, a
sentence edited by hand, or a caption drawn from other data each fail `check` by the claim's id.

A claim whose reader replays work (a batch schedule's phases, read back through `otod.nets.schedule`) is marked
``slow = true`` and checked by the slow test alone.

A number that cannot be re-read from a results file (a wall time) is a ``kind = "timing"`` claim with ``date``
and ``machine``: its text must appear and must show its date, so that no timing stands undated.
"""

from __future__ import annotations

import dataclasses
import math
import re
import string
import tomllib
from pathlib import Path
from typing import Any, Callable, Collection

#: Where the table lives, relative to the checkout.
TABLE = Path("docs") / "claims.toml"
#: The text a claim may be printed in: (folder, glob) relative to the checkout.
CORPUS = ((".", "README.md"), ("docs", "**/*.md"), ("figures", "*.caption.txt"))
KINDS = ("measured", "timing")
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclasses.dataclass(frozen=True)
class Claim:
    """One printed statement and where its numbers come from (module docstring)."""

    id: str
    text: str
    obstacle: str
    kind: str = "measured"
    source: tuple[str, ...] = ()
    reader: str = ""
    args: tuple[tuple[str, Any], ...] = ()
    format: str = ""
    date: str = ""
    machine: str = ""
    note: str = ""
    slow: bool = False

    @property
    def arguments(self) -> dict[str, Any]:
        return dict(self.args)


def _frozen(value: Any) -> Any:
    """A TOML value made hashable (lists as tuples, tables as sorted item tuples), so a reader's call can be
    cached by its arguments."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


def claim_of(entry: dict) -> Claim:
    """One table entry as a `Claim`; a missing or unknown key raises ValueError naming the claim."""
    known = {f.name for f in dataclasses.fields(Claim)}
    name = entry.get("id", "?")
    unknown = set(entry) - known
    if unknown:
        raise ValueError(f"claim {name}: unknown keys {sorted(unknown)}")
    for key in ("id", "text", "obstacle"):
        if not entry.get(key):
            raise ValueError(f"claim {name}: no {key}")
    kind = entry.get("kind", "measured")
    if kind not in KINDS:
        raise ValueError(f"claim {name}: kind {kind!r} is not one of {KINDS}")
    needs = ("date", "machine") if kind == "timing" else ("source", "reader", "format")
    for key in needs:
        if not entry.get(key):
            raise ValueError(f"claim {name}: a {kind} claim needs {key}")
    args = entry.get("args", {})
    return Claim(**{**entry, "source": tuple(entry.get("source", ())),
                    "args": tuple(sorted((k, _frozen(v)) for k, v in args.items()))})


def load_table(path: Path) -> list[Claim]:
    """Every claim of the table at ``path``; ids must be unique."""
    claims = [claim_of(e) for e in tomllib.loads(Path(path).read_text()).get("claim", [])]
    seen: set[str] = set()
    for c in claims:
        if c.id in seen:
            raise ValueError(f"claim {c.id}: id used twice")
        seen.add(c.id)
    return claims


class ClaimFormatter(string.Formatter):
    """`str.format` with three more endings of a format spec, for numbers as the prose prints them:
    ``M`` the spec then a true minus sign (−0.14); ``S`` scientific with a mathematical exponent, the spec's
    precision as significant digits (``.2S``: 2.9·10⁴; from 10⁻³ up to 10⁴ the plain ``g`` form); ``C`` a whole
    number with thousands commas (6,887); ``R`` rounded to the precision's significant digits, then so (``.3R``:
    3,008 as 3,010); ``N`` the word "none" for 0, else the spec;
    ``Z`` "< 0" for a negative value (a bootstrap end below zero), else the spec; ``L`` rounded down to the
    precision's decimals (a lower bound, "at least 4.7×" of 4.77)."""

    def format_field(self, value: Any, spec: str) -> str:
        if spec.endswith("M"):
            return self.format_field(value, spec[:-1]).replace("-", "−")
        if spec.endswith("S"):
            digits = int(spec[1:-1] or 3) if spec.startswith(".") else 3
            return scientific(float(value), digits)
        if spec.endswith("C"):
            return f"{int(round(float(value))):,}"
        if spec.endswith("L"):
            decimals = int(spec[1:-1] or 0) if spec.startswith(".") else 0
            return f"{math.floor(float(value) * 10 ** decimals) / 10 ** decimals:.{decimals}f}"
        if spec.endswith("Z"):
            return "< 0" if value < 0 else self.format_field(value, spec[:-1])
        if spec.endswith("N"):
            return "none" if value == 0 else self.format_field(value, spec[:-1])
        if spec.endswith("R"):
            digits = int(spec[1:-1] or 3) if spec.startswith(".") else 3
            return f"{int(round(float(f'{float(value):.{digits}g}'))):,}"
        return super().format_field(value, spec)


def scientific(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits as a·10ⁿ (10ⁿ alone where a is 1); plain in [1e-3, 1e4)."""
    if value == 0 or not math.isfinite(value) or 1e-3 <= abs(value) < 1e4:
        return f"{value:.{digits}g}"
    exponent = math.floor(math.log10(abs(value)))
    mantissa = float(f"{value / 10 ** exponent:.{digits - 1}f}")
    if abs(mantissa) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    power = "10" + str(exponent).translate(SUPERSCRIPT)
    head = f"{mantissa:.{digits}g}"
    return power if head == "1" else f"{head}·{power}"


def render(claim: Claim, values: dict[str, Any]) -> str:
    """The claim's text as its values print (``format`` over the reader's named values)."""
    return ClaimFormatter().format(claim.format, **values)


def normalised(text: str) -> str:
    """Whitespace runs as one space: a sentence reads the same however its lines wrap."""
    return re.sub(r"\s+", " ", text).strip()


def corpus(root: Path) -> dict[str, str]:
    """Every file a claim may be printed in (`CORPUS`), by path relative to ``root``, its text normalised."""
    out = {}
    for folder, pattern in CORPUS:
        base = root / folder
        if base.is_dir():
            for p in sorted(base.glob(pattern)):
                out[str(p.relative_to(root))] = normalised(p.read_text())
    return out


def where_printed(text: str, texts: dict[str, str]) -> list[str]:
    """The files of ``texts`` that hold ``text`` (normalised)."""
    wanted = normalised(text)
    return [name for name, body in texts.items() if wanted in body]


Reader = Callable[..., dict[str, Any]]


def read(claim: Claim, root: Path, readers: dict[str, Reader]) -> dict[str, Any]:
    """The claim's values, from its reader on its sources (paths under ``root``)."""
    if claim.reader not in readers:
        raise ValueError(f"claim {claim.id}: unknown reader {claim.reader!r}")
    missing = [s for s in claim.source if not (root / s).exists()]
    if missing:
        raise ValueError(f"claim {claim.id}: source {missing[0]} is not in the checkout")
    return readers[claim.reader](*(str(root / s) for s in claim.source), **claim.arguments)


def problems_of(claim: Claim, root: Path, texts: dict[str, str], readers: dict[str, Reader]) -> list[str]:
    """What is wrong with one claim: its re-read text differs from the table's (a drift), its text is printed
    nowhere, or a timing's text does not show its date. Empty when it holds."""
    out = []
    if claim.kind == "timing":
        if claim.date not in claim.text:
            out.append(f"{claim.id}: the timing's text does not show its date {claim.date}")
    else:
        try:
            got = render(claim, read(claim, root, readers))
        except Exception as e:  # a source that cannot be read is that claim's failure, reported by its id
            out.append(f"{claim.id}: cannot be re-read ({type(e).__name__}: {e})")
        else:
            if normalised(got) != normalised(claim.text):
                out.append(f"{claim.id}: drift: the results read {got!r}, the table says {claim.text!r}")
    if not where_printed(claim.text, texts):
        out.append(f"{claim.id}: {claim.text!r} is printed in no README, docs page or caption")
    return out


def check(root: Path, table: Path | None = None, readers: dict[str, Reader] | None = None,
          slow: bool | None = None, sources: Collection[str] | None = None) -> list[str]:
    """Every problem of every claim of the table (default ``root/docs/claims.toml``) against the results and text
    under ``root``; empty when every claim holds. ``slow``: only the claims marked slow (True: their readers
    replay work, e.g. a batch schedule's starts, tens of seconds each) or only the others (False); None: all.
    ``sources``: only the claims that read one of these results files (paths as the table names them), e.g. the
    claims a re-run file must still satisfy."""
    if readers is None:
        from otod.claim_readers import READERS

        readers = READERS
    claims = [c for c in load_table(root / TABLE if table is None else table)
              if (slow is None or c.slow == slow) and (sources is None or set(c.source) & set(sources))]
    texts = corpus(root)
    return [p for c in claims for p in problems_of(c, root, texts, readers)]
