#!/usr/bin/python3
"""Every command's --help, parser and --xml name the same options (one table makes all three).

    option_tables.py --bin BUILD/bin --command "tk-tucker train"

The parser's set is the hidden `--list-options` (the command's table, one "--name ROLE" a
line: ROLE is xml for an option in the Slicer description, cli for one that is not, meta for
--help, --version, --xml); the help's set is every "  --name" / "  -x, --name" line of
--help; the XML's set is every <longflag> of --xml.  They must agree: help == parser, and,
where the command has --xml, the XML holds exactly the options the table gives a Slicer
description (an option Slicer cannot use, such as tk-fibers' --png, says so in the table).
Every command has the standard options, and --version prints "TOOL TensorKernels X.Y.Z".
"""
import argparse
import os
import re
import subprocess
import sys


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit("FAILED: %s exited %d: %s" % (" ".join(argv), r.returncode, r.stderr.strip()))
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="the folder of the built tools")
    ap.add_argument("--command", required=True, help='the tool and its subcommand, e.g. "tk-tucker train"')
    a = ap.parse_args()
    words = a.command.split()
    exe = [os.path.join(a.bin, words[0])] + words[1:]

    table = {}
    for line in run(exe + ["--list-options"]).splitlines():
        name, role = line.split()
        table[name] = role
    helped = set(re.findall(r"^  (?:-\w, )?(--[a-z][a-z0-9-]*)", run(exe + ["--help"]), re.M))
    problems = []
    if helped != set(table):
        problems.append("--help lists %s; the parser takes %s" % (sorted(helped - set(table)) or "nothing more",
                                                                    sorted(set(table) - helped) or "nothing more"))
    for standard in ("--backend", "--device", "--threads", "--quiet", "--force", "--version", "--help"):
        if standard not in table:
            problems.append("the standard option %s is missing" % standard)
    if "--xml" in table:
        described = set(re.findall(r"<longflag>(--[a-z][a-z0-9-]*)</longflag>", run(exe + ["--xml"])))
        options = {n for n, role in table.items() if role == "xml"}
        if described != options:
            problems.append("--xml describes %s; the table's Slicer options are %s" % (sorted(described), sorted(options)))
    version = run(exe + ["--version"]).strip()
    if not re.fullmatch(r"%s TensorKernels \d+\.\d+\.\d+\S*" % re.escape(words[0]), version):
        problems.append("--version printed %r" % version)
    for p in problems:
        print("FAILED: %s: %s" % (a.command, p))
    if not problems:
        print("%s: %d options agree in --help, the parser%s" % (a.command, len(table),
                                                                 " and --xml" if "--xml" in table else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
