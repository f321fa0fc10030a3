#!/usr/bin/env python3
"""The fenced code blocks of Markdown files, and which of them are commands to run.

Rules (Documentation/README of the docs test: Testing/docs/run_doc_commands.py):
- A block fenced ```sh (or bash, shell) holds commands: the docs test runs it.
- Every other block names what it is instead (```text for a synopsis or an output,
  ```c, ```cpp, ```cmake, ...) and is not run.  A block with no language is an error, so
  a command cannot escape the test by being left untagged.
- An sh block that cannot run here (a GPU, a Slicer build, minutes of time) carries the line
    <!-- doc-test: skip REASON -->
  right above its fence; the reason is printed with each test run.
- <!-- doc-test: check NAME --> above an sh block runs it and then the check NAME of
  run_doc_commands.py on what it wrote (e.g. that a fit learned something).

Run alone, it lists the blocks: doc_blocks.py FILE.md ...
"""
import re
import sys

COMMAND_LANGUAGES = ("sh", "bash", "shell")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<info>.*)$")
MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<kind>skip|check)\b\s*(?P<arg>.*?)\s*-->\s*$")


class DocError(Exception):
    """A Markdown file that breaks the rules above (named by file and line)."""


class Block:
    def __init__(self, path, line, language, text, skip, check):
        self.path, self.line, self.language, self.text = path, line, language, text
        self.skip, self.check = skip, check  # skip: reason or None; check: name or None

    @property
    def is_command(self):
        return self.language in COMMAND_LANGUAGES

    def where(self):
        return f"{self.path}:{self.line}"


def _dedent(lines, indent):
    # A fence inside a list item is indented; its lines are, by as much.
    return [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines]


def read_blocks(path):
    """Every fenced block of the file at path, in order."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i + 1  # 1-based line of the opening fence
        language = m.group("info").split()[0] if m.group("info").strip() else ""
        if not language:
            raise DocError(f"{path}:{start}: a code block with no language: "
                           f"tag it ```sh (a command the docs test runs) or ```text (not run)")
        marker = MARKER.match(lines[i - 1]) if i > 0 else None
        closing = m.group("fence")
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(closing):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise DocError(f"{path}:{start}: the code block is never closed")
        i += 1
        skip = check = None
        if marker:
            if language not in COMMAND_LANGUAGES:
                raise DocError(f"{path}:{start}: a doc-test marker above a ```{language} block, "
                               f"which is never run anyway")
            if not marker.group("arg"):
                raise DocError(f"{path}:{start - 1}: doc-test: {marker.group('kind')} needs "
                               f"{'a reason' if marker.group('kind') == 'skip' else 'a check name'}")
            if marker.group("kind") == "skip":
                skip = marker.group("arg")
            else:
                check = marker.group("arg")
        text = "\n".join(_dedent(body, m.group("indent"))) + "\n"
        blocks.append(Block(path, start, language, text, skip, check))
    return blocks


def main(argv):
    try:
        for path in argv[1:]:
            for b in read_blocks(path):
                state = ("skip: " + b.skip) if b.skip else ("run" if b.is_command else "not a command")
                print(f"{b.where()} ```{b.language} ({state})")
    except (DocError, OSError) as e:
        print(f"doc_blocks.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
