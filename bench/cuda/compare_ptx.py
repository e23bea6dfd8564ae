#!/usr/bin/env python3
"""Compares the PTX of two compilers' artifacts entry by entry.

    compare_ptx.py OLD NEW [--same OLDFILE:OLDENTRY=NEWFILE:NEWENTRY ...]

OLD and NEW are folders of .ptx files (make_artifacts.sh's output, or a
lit test's Output folder, searched recursively) or two .ptx files. For
every file both hold (by path relative to the folder): each entry of the
old file must be in the new one with the same text (the function from
`.visible .entry NAME(` to its closing brace), and what precedes the first
entry (the module header: .version, .target, globals) must be the same,
the numbering of labels by function (which changes with an entry's place
in the module, and nothing else) normalized;
entries only the new file has are listed (alternatives added). `--same`
asks that two differently named entries have the same body (their names
replaced by a placeholder), e.g. a dynamic-Sq artifact's Sq = 1 entry
against the static decode artifact's. Prints one line per file and exits
1 when any old entry changed or a --same pair differs.
"""
import argparse
import os
import re
import sys

ENTRY = re.compile(r"^\.visible \.entry ([A-Za-z0-9_$]+)\(", re.M)
# Names that number the functions of the module (a function's basic-block
# labels, $L__BB<function>_<block>, and its local depot), and the header's
# "// .globl <first entry>" comment: normalized, since an entry's place in
# the module changes them and nothing else.
NUMBERED = [(re.compile(r"\$L__BB\d+_"), "$L__BB_"),
            (re.compile(r"__local_depot\d+"), "__local_depot"),
            (re.compile(r"^\s*// \.globl.*$", re.M), "")]


def normalize(text):
    for pattern, to in NUMBERED:
        text = pattern.sub(to, text)
    return text


def entries(text):
    """(header, {name: text}) of a PTX module."""
    found = list(ENTRY.finditer(text))
    header = text[:found[0].start()] if found else text
    out = {}
    for m in found:
        # The function ends at the first line that is a lone "}".
        end = text.find("\n}\n", m.start())
        end = len(text) if end < 0 else end + 3
        out[m.group(1)] = text[m.start():end]
    return header, out


def ptx_files(root):
    if os.path.isfile(root):
        return {os.path.basename(root): root}
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(".ptx"):
                p = os.path.join(d, n)
                files[os.path.relpath(p, root)] = p
    return files


def body(text, name):
    return text.replace(name, "@ENTRY@")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--same", action="append", default=[],
                    metavar="OLDFILE:OLDENTRY=NEWFILE:NEWENTRY")
    args = ap.parse_args()
    old, new = ptx_files(args.old), ptx_files(args.new)
    bad = 0
    for rel in sorted(old):
        if rel not in new:
            print(f"{rel}: only in {args.old}")
            continue
        oh, oe = entries(normalize(open(old[rel]).read()))
        nh, ne = entries(normalize(open(new[rel]).read()))
        changed = [n for n in oe if ne.get(n) != oe[n]]
        added = [n for n in ne if n not in oe]
        status = "same" if not changed and oh == nh else "CHANGED"
        bad += status != "same"
        line = f"{rel}: {status}: {len(oe) - len(changed)}/{len(oe)} entries identical"
        if oh != nh:
            line += ", module header differs"
        if changed:
            line += ", changed: " + ", ".join(changed)
        if added:
            line += ", added: " + ", ".join(added)
        print(line)
    for pair in args.same:
        a, b = pair.split("=")
        (fa, ea), (fb, eb) = a.rsplit(":", 1), b.rsplit(":", 1)
        ta = entries(normalize(open(old.get(fa, fa)).read()))[1].get(ea)
        tb = entries(normalize(open(new.get(fb, fb)).read()))[1].get(eb)
        same = ta is not None and tb is not None and body(ta, ea) == body(tb, eb)
        bad += not same
        print(f"{pair}: {'same body' if same else 'DIFFERENT'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
