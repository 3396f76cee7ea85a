#!/usr/bin/env python3
"""Where a kernel's time goes, line by line: Nsight Compute's warp-stall samples by source line.

Reads the CSV that

    ncu --import REPORT.ncu-rep --page source --print-source cuda,sass --csv > SOURCE.csv

prints for a report taken with `--set full --import-source yes` (its source counters) from a
build with `-lineinfo` (CMakeLists.txt adds it), and writes, for each kernel in it, the source
lines that hold the largest shares of the kernel's stall samples: the share of its samples and
of its executed warp instructions at that line, the commonest stall reasons there, and the
line's text. A line of a header counts once for every kernel that inlines it.

    python3 gpu/bench/stall_lines.py SOURCE.csv [--top 20] [--out FILE.md]

Standard library only: it runs where the report is read, on the GPU machine or off it.
"""
import argparse
import collections
import os
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
INSTRUCTIONS = "Instructions Executed"


def kernel_name(signature):
    """The kernel's name with its template arguments: no return type, namespaces or parameters."""
    depth, end = 0, len(signature)
    for i, ch in enumerate(signature):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            end = i
            break
    name = signature[:end].strip().replace("<unnamed>::", "")
    if name.startswith("void "):
        name = name[len("void "):]
    template = name.find("<")
    head = name if template < 0 else name[:template]
    return name[head.rfind("::") + 2 if "::" in head else 0:]


class Line:
    def __init__(self, text):
        self.text = text
        self.samples = 0
        self.instructions = 0
        self.stalls = collections.Counter()


def rows_of(text):
    """The CSV's rows. ncu quotes every field but leaves quotes inside the source text as they are
    (an asm statement's "r"(x)), so a row is split at the "," between fields; a source text with
    "," in it is put back together once the header gives the number of fields."""
    width = None
    for raw in text.splitlines():
        if not (raw.startswith('"') and raw.endswith('"')):
            continue
        fields = raw[1:-1].split('","')
        if fields[0] == "Line No":
            width = len(fields)
        elif width and len(fields) > width:
            extra = len(fields) - width
            fields = [fields[0], '","'.join(fields[1:2 + extra])] + fields[2 + extra:]
        yield fields


def read(rows):
    """{kernel: {(file, line): Line}} from the rows of the CSV."""
    kernels = collections.OrderedDict()
    path = kernel = header = None
    for row in rows:
        if not row:
            continue
        if row[0] == "File Path":
            path = row[1]
            continue
        if row[0] == "Function Name":
            kernel = kernels.setdefault(kernel_name(row[1]), {})
            continue
        if row[0] == "Line No":
            header = row
            columns = {name: i for i, name in enumerate(row)}
            if SAMPLES not in columns or INSTRUCTIONS not in columns:
                raise ValueError("no %r or %r column: was the report taken with --set full?" %
                                 (SAMPLES, INSTRUCTIONS))
            stall_columns = [(i, name[len("stall_"):]) for i, name in enumerate(row)
                             if name.startswith("stall_") and "(Not Issued)" not in name]
            continue
        if header is None or kernel is None or not row[0].isdigit():
            continue  # a SASS row (its source line's row has the sums) or a preamble
        key = (os.path.basename(path), int(row[0]))
        line = kernel.setdefault(key, Line(row[1].strip()))
        line.samples += int(row[columns[SAMPLES]] or 0)
        line.instructions += int(row[columns[INSTRUCTIONS]] or 0)
        for i, reason in stall_columns:
            if row[i] not in ("", "-", "0"):
                line.stalls[reason] += int(row[i])
    return kernels


def percent(part, whole):
    return "%.1f%%" % (100.0 * part / whole) if whole else "-"


def report(kernels, top):
    out = []
    for name, lines in kernels.items():
        samples = sum(line.samples for line in lines.values())
        instructions = sum(line.instructions for line in lines.values())
        reasons = collections.Counter()
        for line in lines.values():
            reasons.update(line.stalls)
        out.append("### `%s`\n" % name)
        out.append("%d stall samples, %d warp instructions executed; stall reasons over the "
                   "kernel: %s.\n" % (samples, instructions, ", ".join(
                       "%s %s" % (r, percent(n, samples)) for r, n in reasons.most_common(6))))
        out.append("| samples | instructions | stalls there | line | source |")
        out.append("|---|---|---|---|---|")
        ranked = sorted(lines.items(), key=lambda kv: (-kv[1].samples, kv[0]))
        for (path, number), line in ranked[:top]:
            stalls = ", ".join("%s %d" % (r, n) for r, n in line.stalls.most_common(3))
            text = line.text.replace("|", "\\|")
            out.append("| %s | %s | %s | %s:%d | `%s` |" % (
                percent(line.samples, samples), percent(line.instructions, instructions), stalls,
                path, number, text))
        out.append("")
    return "\n".join(out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", help="the CSV of ncu --page source --print-source cuda,sass --csv")
    parser.add_argument("--top", type=int, default=20, help="lines a kernel (default 20)")
    parser.add_argument("--out", help="write the Markdown here (default: standard output)")
    args = parser.parse_args(argv)
    if args.top < 1:
        parser.error("--top must be at least 1")
    try:
        with open(args.csv) as f:
            kernels = read(rows_of(f.read()))
    except (OSError, ValueError) as e:
        print("stall_lines: %s: %s" % (args.csv, e), file=sys.stderr)
        return 2
    if not kernels:
        print("stall_lines: %s: no kernel in it (is it ncu's --page source CSV?)" % args.csv,
              file=sys.stderr)
        return 2
    text = report(kernels, args.top)
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.out)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
