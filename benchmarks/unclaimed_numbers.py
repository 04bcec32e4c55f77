"""List every number in the prose of the README, docs/*.md (but docs/cli.md, the generated CLI help) and the
figures' captions that no claim of the claims table (docs/claims.toml, `otod.claims`) covers (issue 50, "every
published number follows from its data").

A number is covered when it lies inside the printed text of some claim (matched as `otod.claims.where_printed`
matches: whitespace runs as one space). Not prose, so skipped: fenced code blocks, inline code spans, link targets
and bare URLs, HTML comments; and tokens that are names rather than quantities (digits glued to letters: fp64,
H200, conv2; dates 2026-11-27; commit hashes; issue numbers "issue 50", "#50"; section numbers). What is left is
for a reader to sort: a measurement (which needs a claim), a setting / parameter / theory constant / citation (which
does not), or a timing (which needs a date and machine).

    python benchmarks/unclaimed_numbers.py              # every unclaimed number, file by file, with its context
    python benchmarks/unclaimed_numbers.py --counts     # how many per file
    python benchmarks/unclaimed_numbers.py docs/nets.md # one file

Sorted without a reader, by general rules (never a list of numbers): settings and citations by the words around
them (`SETTINGS`: a setting's name and the list after it, "B = 1, 64 and 1024", "P = 610–19,210"; a year after "et al."; a
half-open range "[0, 1)", a domain where a CI is closed; a matrix shape "3×3"), and formula constants by their place in a formula (`formula_constant`): an operand of an
arithmetic operator whose other operand is a symbol or a number ("1 − x", "2/(L + μ)", "2(1 + β)"; not a count
over a count, "3/8"), any number inside an exponent's brackets ("10^(5/32)"), a
coefficient of a named function ("2 ln(1/ρ)"),
a bound of a chained inequality on a one-letter symbol ("0 < x < 2(1 + β)"), and a bare-number cell of a table
row that holds a formula (the method table's momentum 0). A non-integer exponent ("κ^0.898") is a fitted value and a
single bound ("P ≤ 721") may be a range of the data: both are left to a reader. ``--all`` lists them
with the reason; what is left (`Unclaimed.reason` empty) is what a reader must sort.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otod.claims import TABLE, load_table  # noqa: E402

#: The prose a claim may be printed in (`otod.claims.CORPUS`) but for the generated CLI help.
SKIPPED = ("docs/cli.md",)

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK_TARGET = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)|<https?://[^>]*>|https?://\S+")
COMMENT = re.compile(r"<!--.*?-->", re.S)
#: Tokens that are names, not quantities: dates, hashes, issue and section references.
NAMES = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b[0-9a-f]{7,40}\b|[Ii]ssues? #?\d+(?:(?:,| and| or|,? and) #?\d+)*"
                   r"|#\d+|§\s?\d+(?:\.\d+)*|\b\d+(?:\.\d+)*(?=\)? ?[A-Za-z-]*\.(?:md|toml|py|json|parquet|png)\b)")
#: A number as prose prints it: −1,234.5, 1e-6, 2.9·10⁴, 10⁷, 3×, 95%; not one glued to a letter or an identifier.
SUP = "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"
NUMBER = re.compile(rf"(?<![\w.,/{SUP}])(?<![A-Za-z]-)[−-]?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?"
                    rf"(?:[eE][+−-]?\d+)?(?:\s?[·×]\s?10[{SUP}]+)?(?![\w{SUP}]|\.\d|,\d{{3}})"
                    rf"|(?<![\w.,])10[{SUP}]+")


#: Numbers that are settings or citations by the words around them, sorted without a reader: (reason, pattern on
#: the text before the number, pattern on the text after it, pattern the number must match). Only patterns whose
#: every hit is a setting, a parameter or a citation; everything else is left for a reader.
YEAR = re.compile(r"(?:19[5-9]|20[0-2])\d")
#: The rest of a list of settings after its name ("B = 1, 64, 1024 and 65536", "σ = 0, 3, 30", "B = 1 to 16"): each
#: entry is a setting as the first is; a word between them ends the list, so "B = 64 took 5059 steps" lists 5059.
SETTING_LIST = r"(?:[−-]?\d[\d.,]*(?:·10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?(?:, |–| to |,? and |,? or ))*"
ANY = re.compile(r".*")
SETTINGS = (
    ("citation year", re.compile(r"(?:et al\.,?|[A-Z][\w'’-]+(?: & [A-Z][\w'’-]+)?,?|[A-Z]{2,}) \(?$"),
     re.compile(r"^(?:[a-z]?[),;.:]|$|\s?[—–])"), YEAR),
    ("confidence level", ANY, re.compile(r"^\s?% (?:CI|band|bootstrap|confidence|interval|percentile)"), ANY),
    ("seed count", ANY, re.compile(r"^ (?:seeds?|nested draws)\b"), ANY),
    ("setting", ANY, re.compile(r"^ (?:probes|repeats|warm-ups|heads|channels|Lanczos steps)\b"), re.compile(r"\d+")),
    ("setting", re.compile(r"\b(?:probes|seeds) × $"), ANY, re.compile(r"\d+")),  # "4 probes × 100 steps"
    # a list the words name as chosen settings: "at widths 8, 16, 32", "steps 0, 100 and 1000", "depths 2..12"
    ("setting", re.compile(r"\b(?:widths|depths|steps|batches|[Cc]heckpoints)(?: t =)? " + SETTING_LIST + "$"), ANY, ANY),
    # a ratio written N:M ("the reference ratios 1:1, 2:1 and 3:1", the two-batch estimator's "8:64") is notation
    ("ratio notation", ANY, re.compile(r"^:\d"), re.compile(r"\d+")),
    ("ratio notation", re.compile(r"(?<![\d.])\d+:$"), ANY, re.compile(r"\d+")),
    ("citation year", re.compile(r"\bet al\.,? \(?$"), ANY, YEAR),
    ("setting", re.compile(r"(?:\b(?:seeds?|lr|lr_ref|tol|target(?: loss)?|B_ref|d_in|d_out|dim|cap|ε|σ|β|κ_Φ)[ =:]*"
                           r"|\b(?:d|D|P|B|κ|n|k|L) = )" + SETTING_LIST + "$"), ANY, ANY),
    # a half-open range is a domain ("β over its stable range [0, 1)", "(0, 1]"); an interval a fit prints is closed
    ("half-open range", re.compile(r"\[$"), re.compile(r"^, [−-]?[\d.]+\)"), ANY),
    ("half-open range", re.compile(r"\[[−-]?[\d.]+, $"), re.compile(r"^\)"), ANY),
    ("half-open range", re.compile(r"(?<![\w)])\($"), re.compile(r"^, [−-]?[\d.]+\]"), ANY),
    ("half-open range", re.compile(r"(?<![\w)])\([−-]?[\d.]+, $"), re.compile(r"^\]"), ANY),
    ("matrix shape", re.compile(r"\d×$"), ANY, re.compile(r"\d+")),  # "3×3 recursions"
    ("matrix shape", ANY, re.compile(r"^×\d"), re.compile(r"\d+")),
    ("caption settings", re.compile(r"^Settings:[^.]*$|^Settings: .*?float(?:32|64)[^.]*$"), ANY, ANY),
)


def sorted_as_setting(before: str, number: str, after: str) -> str:
    """The reason a number is a setting or a citation by `SETTINGS`, or "" where a reader must sort it."""
    for reason, head, tail, shape in SETTINGS:
        if shape.fullmatch(number) and head.search(before) and tail.search(after):
            return reason
    return ""


#: Formula constants (module docstring): what a number touches inside a formula. A symbol is a letter (Latin or
#: Greek, not inside a word), a bracket, a bar or a digit; an operator is − + / ^ · * ⋅, with the same spacing on
#: both sides (a binary operator: "1 − x", "1/L"; "+0.9%" is a sign and "within +0.9%" no formula).
OPERATOR = "−+/^·⋅*"
SYMBOL_AFTER = r"[A-Za-zα-ωΑ-Ω√(\[|⌈\d]"
SYMBOL_BEFORE = r"(?:(?<![A-Za-z])[A-Za-zα-ωΑ-Ω](?:_[A-Za-z0-9]+)?|[)\]|⌉}\d²³ᵀ⁻¹⁰])"
OPERAND_AFTER = re.compile(rf"^(?:[{OPERATOR}]{SYMBOL_AFTER}| [{OPERATOR}] {SYMBOL_AFTER})")
OPERAND_BEFORE = re.compile(rf"(?:{SYMBOL_BEFORE}[{OPERATOR}]\(?|{SYMBOL_BEFORE} [{OPERATOR}] \(?)$")
#: Two bare numbers across a slash ("3/8 diverged", "2/16") are a count of a count, a measurement: "/" sorts a number
#: only against a symbol; inside an exponent's brackets ("10^(5/32)") every number is a constant.
SLASH_DIGITS = re.compile(r"^ ?/ ?\d|\d ?/ ?$")
EXPONENT = re.compile(r"\^[({][^)}\s]*$")
#: A coefficient of a named function or of a bracket: "2 ln(1/ρ)", "2(1 + β)" (glued to its bracket).
COEFFICIENT = re.compile(r"^(?: ?(?:ln|log|exp|tr|max|min|sin|cos)(?:\(| [A-Za-zα-ωΑ-Ω](?![a-z]))|\()")
#: A bound of a chained inequality on a one-letter symbol, a domain: "0 < x < 2(1 + β)", "0 ≤ β < 1". A single
#: bound ("P ≤ 721", "B_crit < 8") may state a range of the data and is left to a reader.
BOUND_AFTER = re.compile(r"^ [<>≤≥] [A-Za-zα-ωΑ-Ω](?![\w_]) [<>≤≥]")
BOUND_BEFORE = re.compile(r"(?:^|[^\w_])[<>≤≥] [A-Za-zα-ωΑ-Ω] [<>≤≥] $")
#: A non-integer exponent ("κ^0.898", "P^0.4") is a fitted value, not a constant: no operand rule sorts it.
FITTED_EXPONENT = re.compile(r"\^$")


def formula_constant(before: str, number: str, after: str, line: str = "") -> str:
    """The reason a number is a constant of a formula (module docstring), or "": an operand of an operator whose
    other side is a symbol (not a non-integer exponent), a function's or a bracket's coefficient, a bound of a
    chained inequality on a one-letter symbol, or a bare-number cell of a table row (``line``) with another cell
    that holds such a formula."""
    if number.startswith(("−", "-")) and before.endswith(("[", "(", ", ")):
        return ""  # a signed number in a list or an interval is a value, not an operand
    if FITTED_EXPONENT.search(before) and not re.fullmatch(r"\d+", number):
        return ""
    if EXPONENT.search(before):
        return "formula constant"
    slash = SLASH_DIGITS.search(after) or SLASH_DIGITS.search(before)
    if not slash and (OPERAND_AFTER.search(after) or OPERAND_BEFORE.search(before) or COEFFICIENT.search(after)):
        return "formula constant"
    if BOUND_AFTER.search(after) or BOUND_BEFORE.search(before):
        return "inequality bound"
    if line.lstrip().startswith("|") and re.search(rf"\| *{re.escape(number)} *\|", line):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if number in cells and any(c != number and has_formula(c) for c in cells):
            return "formula table"
    return ""


def has_formula(text: str) -> bool:
    """Whether ``text`` holds an operator between two symbols (`formula_constant`'s sense)."""
    return bool(re.search(rf"{SYMBOL_BEFORE} ?[{OPERATOR}] ?{SYMBOL_AFTER}", text))


@dataclass(frozen=True)
class Unclaimed:
    """One number no claim covers: the file, its line, the number as printed and the words around it."""

    file: str
    line: int
    number: str
    context: str
    reason: str = ""  # why it is a setting, citation or formula constant; "" where a reader must sort it


def corpus_files(root: Path) -> list[Path]:
    files = [root / "README.md", *sorted((root / "docs").glob("*.md")), *sorted((root / "figures").glob("*.caption.txt"))]
    return [p for p in files if p.exists() and str(p.relative_to(root)) not in SKIPPED]


def claim_pattern(text: str) -> re.Pattern:
    """A claim's text as a pattern over the raw file: its words in order, any whitespace run between them."""
    return re.compile(r"\s+".join(re.escape(w) for w in text.split()))


def masked_spans(raw: str, patterns: list[re.Pattern]) -> list[tuple[int, int]]:
    """The character spans of ``raw`` that are not prose to audit: code, links, comments, names, and every claim's
    printed text."""
    spans = []
    for rx in (FENCE, COMMENT, CODE_SPAN, LINK_TARGET, NAMES, *patterns):
        spans += [m.span() for m in rx.finditer(raw)]
    return spans


def unclaimed(path: Path, root: Path, patterns: list[re.Pattern]) -> list[Unclaimed]:
    raw = path.read_text()
    covered = bytearray(len(raw) + 1)
    for a, b in masked_spans(raw, patterns):
        covered[a:b] = b"\x01" * (b - a)
    out = []
    for m in NUMBER.finditer(raw.replace("..", "  ")):  # a range 1..12 as two numbers
        if any(covered[m.start():m.end()]):
            continue
        line = raw.count("\n", 0, m.start()) + 1
        start, end = max(0, m.start() - 60), min(len(raw), m.end() + 40)
        context = re.sub(r"\s+", " ", raw[start:m.start()] + "⟦" + m.group() + "⟧" + raw[m.end():end]).strip()
        paragraph = raw.rfind("\n\n", 0, m.start()) + 2 if "\n\n" in raw[:m.start()] else 0
        before = re.sub(r"\s+", " ", raw[paragraph:m.start()]).lstrip()
        after = re.sub(r"\s+", " ", raw[m.end():m.end() + 60])
        text = raw[raw.rfind("\n", 0, m.start()) + 1:raw.find("\n", m.end()) % (len(raw) + 1)]
        reason = sorted_as_setting(before, m.group(), after) or formula_constant(before, m.group(), after, text)
        out.append(Unclaimed(str(path.relative_to(root)), line, m.group(), context, reason))
    return out


def audit(root: Path = ROOT, only: list[str] | None = None) -> list[Unclaimed]:
    """Every unclaimed number of the corpus under ``root`` (or of the files ``only``)."""
    patterns = [claim_pattern(c.text) for c in load_table(root / TABLE)]
    files = [root / f for f in only] if only else corpus_files(root)
    return [u for p in files for u in unclaimed(p, root, patterns)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="corpus files, relative to the checkout (default: all)")
    parser.add_argument("--counts", action="store_true", help="only how many per file, sorted and left to sort")
    parser.add_argument("--all", action="store_true", help="list the numbers sorted as settings too, with why")
    parser.add_argument("--lines", action="store_true", help="each line once, its numbers left to sort in ⟦⟧")
    args = parser.parse_args(argv)
    found = audit(ROOT, args.files or None)
    if args.lines:
        by_line: dict[tuple[str, int], list[str]] = {}
        for u in found:
            if args.all or not u.reason:
                by_line.setdefault((u.file, u.line), []).append(u.number)
        for (f, n), numbers in by_line.items():
            text = (ROOT / f).read_text().splitlines()[n - 1]
            print(f"{f}:{n}: [{' | '.join(numbers)}] {text}")
        return 0
    if args.counts:
        per: dict[str, list[int]] = {}
        for u in found:
            per.setdefault(u.file, [0, 0])[bool(u.reason)] += 1
        print("  left  sorted  file")
        for f, (left, done) in sorted(per.items(), key=lambda kv: -kv[1][0]):
            print(f"{left:6d}  {done:6d}  {f}")
        print(f"{sum(v[0] for v in per.values()):6d}  {sum(v[1] for v in per.values()):6d}  in all")
        return 0
    for u in found:
        if args.all or not u.reason:
            print(f"{u.file}:{u.line}: {u.number}\t{u.context}" + (f"\t[{u.reason}]" if u.reason else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
