#!/usr/bin/env python3
"""Doxygen INPUT_FILTER for TensorKernels' headers, which use plain comments: each comment
that precedes a declaration says what it is, so it is made a Doxygen comment.

- the opening /* ... */ block of a header becomes its \\file description;
- a /* comment starting a line becomes /** (documents what follows);
- a /* comment after code on the same line becomes /**< (documents that member);
- // comments starting a line become /// (the C++ headers);
- section rules (/* ---- name ---- */) stay plain comments.
Lines are kept one for one, so Doxygen's line numbers match the sources."""
import re
import sys


def main(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    state = "start"  # start: before the opening block; opening: inside it; body: after
    for line in lines:
        stripped = line.lstrip()
        if state == "start" and stripped.startswith("/*") and not stripped.startswith("/**"):
            line = line.replace("/*", "/**", 1)
            state = "opening"
        elif state == "start" and stripped:
            state = "body"
        elif stripped.startswith(("/* --", "// --")):
            pass  # a section rule, not a description
        elif state != "opening" and (stripped.startswith("/* ") or stripped == "/*"):
            line = line.replace("/*", "/**", 1)
        elif state != "opening" and stripped.startswith("// "):
            line = line.replace("//", "///", 1)
        elif state != "opening":
            line = re.sub(r"([;,{]\s*)/\* ", r"\1/**< ", line, count=1)
            line = re.sub(r"([;,{]\s*)// ", r"\1///< ", line, count=1)
        if state == "opening" and "*/" in line:
            line = line.replace("*/", "\\file */", 1)  # no name: the file being read
            state = "body"
        out.append(line)
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
