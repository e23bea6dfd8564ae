"""Checks that the generated references cover every registered attn pass and
pipeline: each pass flag has a section (### `-flag`) in a pass reference
(mlir-tblgen -gen-pass-doc), each pipeline a section in the pipeline
reference (attn-doc-gen) with a row for each of its options.

usage: check_references.py HELP PIPELINES_MD PASSES_DIR
  HELP          the output of `attn-opt --help` (its Passes and Pass
                Pipelines sections list what is registered)
  PIPELINES_MD  the pipeline reference
  PASSES_DIR    the folder of pass references (*.md)
"""
import glob
import os
import re
import sys

def is_attn(flag):
    return flag.startswith("attn-") or flag.startswith("convert-attn-")


def registered(help_text):
    """(passes, {pipeline: [options]}) of attn, from `--help`."""
    passes, pipelines = [], {}
    section, current = None, None
    for line in help_text.splitlines():
        stripped = line.strip()
        if stripped in ("Passes:", "Pass Pipelines:"):
            section = stripped
            continue
        if section is None:
            continue
        indent = len(line) - len(line.lstrip(" "))
        if stripped and indent < 4:
            section = None  # past the list of passes and pipelines
            continue
        m = re.match(r"--([A-Za-z0-9._-]+)", stripped)
        if not m:
            continue
        if indent == 6:
            current = m.group(1) if is_attn(m.group(1)) else None
            if current and section == "Passes:":
                passes.append(current)
            elif current:
                pipelines[current] = []
        elif indent == 8 and current and section == "Pass Pipelines:":
            pipelines[current].append(m.group(1))
    return passes, pipelines


def sections(markdown):
    """{flag: text of its section} of a generated reference."""
    out, current = {}, None
    for line in markdown.splitlines():
        m = re.match(r"### `-([A-Za-z0-9._-]+)`", line)
        if m:
            current = m.group(1)
            out[current] = ""
        elif current:
            out[current] += line + "\n"
    return out


def main():
    help_file, pipelines_md, passes_dir = sys.argv[1:4]
    passes, pipelines = registered(open(help_file).read())
    pass_docs = {}
    files = sorted(glob.glob(os.path.join(passes_dir, "*.md")))
    for f in files:
        pass_docs.update(sections(open(f).read()))
    pipeline_docs = sections(open(pipelines_md).read())

    errors = []
    if len(passes) < 10 or len(pipelines) < 3:
        errors.append("found only %d attn passes and %d pipelines in --help"
                      % (len(passes), len(pipelines)))
    # Every attn pass is declared in ODS (a Passes.td with add_mlir_doc).
    for flag in passes:
        if flag not in pass_docs:
            errors.append("pass %s has no section in %s/*.md (declare it in "
                          "a Passes.td with add_mlir_doc)" % (flag, passes_dir))
    for name, options in sorted(pipelines.items()):
        if name not in pipeline_docs:
            errors.append("pipeline %s has no section in %s"
                          % (name, pipelines_md))
            continue
        for option in options:
            if "| `%s` |" % option not in pipeline_docs[name]:
                errors.append("pipeline %s: option %s is not documented"
                              % (name, option))
    for e in errors:
        print("error: " + e)
    if errors:
        return 1
    print("documented: %d passes, %d pipelines "
          "(%d options), from %d pass references"
          % (len(passes), len(pipelines),
             sum(len(o) for o in pipelines.values()), len(files)))
    for name in sorted(passes) + sorted(pipelines):
        print("flag: " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
