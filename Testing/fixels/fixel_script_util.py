"""What the tk-fixels test scripts share: running a command and failing with why."""
import subprocess
import sys


def run(cmd, expect=0):
    """cmd's result; the script fails unless it exits 0 (expect 0) or with an error code of
    1..125 (expect nonzero)."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if (expect == 0) != (r.returncode == 0) or (expect and not 1 <= r.returncode <= 125):
        sys.exit("FAILED: %s exited %d (wanted %s): %s" % (" ".join(cmd), r.returncode, expect or 0, r.stderr))
    return r


def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)
