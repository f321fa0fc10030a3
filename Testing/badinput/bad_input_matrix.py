#!/usr/bin/python3
"""The bad-input matrix: every tool against missing, unreadable, malformed, non-finite and
absurdly large inputs, bad command lines and unwritable outputs.

Each case runs in a fresh folder holding the files it needs (made here with numpy and
plain bytes), with that folder as the working directory so messages name short relative
paths.  A case passes when the tool
  - exits with the expected code (1 bad data or I/O, 2 bad command line; 0 only for the
    rows marked "exit 0", which are controls or documented per-item outcomes),
    never by a signal;
  - prints an error line ("TOOL: error: ...") that names the file or flag (`names`) and
    says what is wrong (`says`, a regular expression);
  - leaves every file it was given byte for byte unchanged (SHA-256 before and after);
  - leaves nothing new behind: no output, no temporary (only the documented .tns.tkc
    cache beside a valid .tns input, and the outputs of a control run).

    bad_input_matrix.py --bin DIR --tool teig [--tool eig ...] --doc Documentation/bad-input.md
        runs the tools' cases and fails when the committed table of outcomes in --doc
        differs from this run's (so the document stays true);
    bad_input_matrix.py --bin DIR --all --doc Documentation/bad-input.md --write-doc
        runs every tool and rewrites the document (with --tool instead of --all: only
        those tools' tables, the others kept as they are).
Tools: teig, eig, tucker-train, tucker-predict, tucker-synth, tucker-complete, pltf,
pltf-complete, fibers, fixels, track, bench.  Without numpy the run prints SKIPPED and passes.
"""
import argparse
import difflib
import hashlib
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:  # the GPU machine may lack it
    print("SKIPPED: numpy is not installed for %s" % sys.executable)
    sys.exit(0)

TOOLS = ["teig", "eig", "tucker-train", "tucker-predict", "tucker-synth", "tucker-complete", "pltf",
         "pltf-complete", "fibers", "fixels", "track", "bench"]
EXE = {"teig": "tk-teig", "eig": "tk-eig", "tucker-train": "tk-tucker", "tucker-predict": "tk-tucker",
       "tucker-synth": "tk-tucker", "tucker-complete": "tk-tucker", "pltf": "tk-pltf", "pltf-complete": "tk-pltf",
       "fibers": "tk-fibers", "fixels": "tk-fixels", "track": "tk-track", "bench": "tk-bench"}
TITLE = {"teig": "tk-teig", "eig": "tk-eig", "tucker-train": "tk-tucker train", "tucker-predict": "tk-tucker predict",
         "tucker-synth": "tk-tucker synth", "tucker-complete": "tk-tucker complete", "pltf": "tk-pltf",
         "pltf-complete": "tk-pltf complete", "fibers": "tk-fibers", "fixels": "tk-fixels", "track": "tk-track",
         "bench": "tk-bench"}

HUGE = 1 << 40  # "a header claiming 2^40 elements"
RO_DIR = "/proc"  # not writable, even by root
# What the messages must say, per kind of problem.
MISSING = r"no such file or directory|does not exist"
IS_DIR = r"is a directory|not a regular file"
EMPTY = r"empty|no entries|too short|truncated|not a|header"
TRUNCATED = r"truncated|too short|short|expected|end of|missing|bytes"
NOT_FINITE = r"nan|inf|not finite|non-finite"
# "One message style everywhere: the program, the file or flag, what was wrong, what to do."
# The rule for every row that ends in a refusal (all but exit 0 and a signal's; marked ‡ in the
# document): the message's last clause -- the text after its last "; ", or after its last ": "
# where it has no "; " -- starts with one of these verbs (after "or " or "then " at most): what
# the user can do.
WHAT_TO_DO = ("add", "build", "change", "check", "choose", "close", "convert", "copy", "correct", "create", "drop",
              "end", "extract", "fix", "free", "give", "install", "join", "lower", "make", "mark", "mask", "move",
              "pass", "put", "re-save", "read", "remove", "rename", "report", "reshape", "resample", "run", "save",
              "see", "split", "train", "try", "use", "wait", "write")


def says_what_to_do(message):
    body = message.split(": error: ", 1)[-1]
    clause = body.rsplit("; ", 1)[1] if "; " in body else body.rsplit(": ", 1)[-1]
    return re.match(r"(?:or |then )?(?:%s)\b" % "|".join(WHAT_TO_DO), clause) is not None


# A commit failing in the middle (a rename fails): every output of the call as it was.
UNDONE = r"(cannot move the new (file|folder) into place|cannot swap in the new folder).*no output of this call was changed"
TOO_LARGE = r"too large|exceeds|overflow|out of memory|bytes|beyond|above|not fit"

rng = np.random.default_rng(7)


class Case:
    def __init__(self, name, args, setup=None, code=1, names=None, says=None, allow_new=(), check=None,
                 may_change=(), varies=False, file_limit=None, removes=(), signal=None, needs_memory_limit=False,
                 fault=None, needs_bzip2=False):
        self.name = name          # the table's first column
        self.args = args          # argv after the program, relative to the case folder
        self.setup = setup        # callable(folder) making the inputs
        self.code = code          # expected exit code
        self.names = names        # what the message must name (file or flag); None for exit 0
        self.says = says          # regular expression the message must match (case-insensitive)
        self.allow_new = allow_new  # paths a run may create (controls, documented caches)
        self.check = check        # callable(folder, result) -> error text or None (extra checks)
        self.may_change = may_change  # given files a run may rewrite (a stale cache)
        self.varies = varies      # the message depends on the machine: the document check skips it
        self.file_limit = file_limit  # RLIMIT_FSIZE in bytes, SIGXFSZ ignored: writes fail as on a full disk
        self.removes = removes    # given files the run must remove (stale temporaries of killed runs)
        self.signal = signal      # sent once the run's first temporary exists; the run must die by it
        self.needs_memory_limit = needs_memory_limit  # skipped (passes) without the address-space limit
        self.fault = fault        # TK_FAULT_RENAME for the run, with tk_fault_rename preloaded (--fault-lib):
                                  # a rename of the commit fails, as on a disk error in the middle
        self.needs_bzip2 = needs_bzip2  # not run where the tools were built without libbz2 (--no-bzip2)
        self.layer = None         # "npy", "output" or "write": rows whose message must say what to do

    def needs_advice(self):
        """A refusal (see WHAT_TO_DO): every row that ends in an error, but a signal's."""
        return self.code != 0 and not self.signal


# ---- files ---------------------------------------------------------------------------

def npy_header(descr, shape):
    """The bytes of a .npy (format 1.0) header for descr and shape, data not included."""
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % s for s in shape) if len(shape) != 1 else "%d," % shape[0])
    pad = 64 - (10 + len(text) + 1) % 64
    text += " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def save(path, array):
    np.save(path, array)


def truncated_copy(path, array):
    """array as .npy, cut in the middle of its data."""
    save(path, array)
    size = os.path.getsize(path)
    data = open(path, "rb").read()
    write(path, data[: size - (array.nbytes // 2 or 1)])


def absurd_npy(path, descr, shape):
    """A header claiming shape (2^40 elements or more) over a few bytes of data."""
    write(path, npy_header(descr, shape) + b"\0" * 64)


def nrrd(path, array, kind_vector=False, pixel="float", data=None):
    """array (z, y, x) or (z, y, x, components) as a raw little-endian NRRD."""
    if kind_vector:
        sizes = (array.shape[3], array.shape[2], array.shape[1], array.shape[0])
        kinds = "vector domain domain domain"
    else:
        sizes = (array.shape[2], array.shape[1], array.shape[0])
        kinds = "domain domain domain"
    header = ("NRRD0004\ntype: %s\ndimension: %d\nsizes: %s\nkinds: %s\nspacings: %s\nencoding: raw\n"
              "endian: little\n\n" % (pixel, len(sizes), " ".join(map(str, sizes)), kinds,
                                      " ".join(["nan"] * (len(sizes) - 3) + ["1"] * 3)))
    dtype = {"float": "<f4", "uchar": "u1", "double": "<f8"}[pixel]
    body = array.astype(dtype).tobytes() if data is None else data
    write(path, header.encode() + body)


def mif_bytes(array):
    """array (z, y, x, components) as the bytes of a .mif (see mif)."""
    import tempfile as _t
    with _t.NamedTemporaryFile(suffix=".mif") as t:
        mif(t.name, array)
        return open(t.name, "rb").read()


def mif(path, array, datatype="Float32LE", data=None, lines=None):
    """array (z, y, x, components) as an MRtrix3 .mif, a voxel's components together
    (layout +1,+2,+3,+0); lines replaces the header's lines between the first and "file"."""
    if lines is None:
        lines = ("dim: %d,%d,%d,%d\nvox: 2,2,2,1\nlayout: +1,+2,+3,+0\ndatatype: %s\n"
                 "transform: 1,0,0,0\ntransform: 0,1,0,0\ntransform: 0,0,1,0\n"
                 % (array.shape[2], array.shape[1], array.shape[0], array.shape[3], datatype))
    head = "mrtrix image\n" + lines
    offset = len(head) + 24 + (-(len(head) + 24)) % 4
    head = (head + "file: . %d\nEND\n" % offset).encode().ljust(offset, b"\0")
    write(path, head + (array.astype("<f4").tobytes() if data is None else data))


def mih_header(array, data_file):
    """The .mih header of array (z, y, x, components) whose data (as mif writes them) are
    data_file, from its first byte."""
    return ("mrtrix image\ndim: %d,%d,%d,%d\nvox: 2,2,2,1\nlayout: +1,+2,+3,+0\ndatatype: Float32LE\n"
            "file: %s\nEND\n" % (array.shape[2], array.shape[1], array.shape[0], array.shape[3], data_file)).encode()


def nrrd_encoded(array, encoding, body):
    """array (z, y, x, components) as an attached NRRD of the encoding given, its data body."""
    sizes = (array.shape[3], array.shape[2], array.shape[1], array.shape[0])
    return (("NRRD0004\ntype: float\ndimension: 4\nsizes: %s\nkinds: vector domain domain domain\n"
             "spacings: nan 1 1 1\nencoding: %s\nendian: little\n\n" % (" ".join(map(str, sizes)), encoding)).encode()
            + body)


def nrrd_header_only(path, sizes, pixel="float", kinds=None, data=b"\0" * 64):
    kinds = kinds or " ".join(["domain"] * len(sizes))
    header = ("NRRD0004\ntype: %s\ndimension: %d\nsizes: %s\nkinds: %s\nencoding: raw\nendian: little\n\n"
              % (pixel, len(sizes), " ".join(map(str, sizes)), kinds))
    write(path, header.encode() + data)


def tns(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(" ".join(str(v) for v in r) + "\n")


def small_tns_rows(n=300, dims=(12, 10, 8)):
    seen, rows = set(), []
    while len(rows) < n:
        idx = tuple(int(rng.integers(1, d + 1)) for d in dims)
        if idx in seen:
            continue
        seen.add(idx)
        rows.append(idx + (round(float(rng.uniform(1, 5)), 3),))
    return rows


def symmetric_packed(count):
    return rng.standard_normal((count, 15)).astype(np.float32)


def files(*makers):
    """setup from (name, function(path)) pairs."""
    def setup(folder):
        for name, make in makers:
            make(os.path.join(folder, name))
    return setup


def mkdir(path):
    os.mkdir(path)


def both(*setups):
    def setup(folder):
        for s in setups:
            if s:
                s(folder)
    return setup


# ---- the tools' cases --------------------------------------------------------------------

def npy_input_cases(prefix, make_args, good_name, good, bad_dtype, bad_shape, absurd, descr):
    """The rows every .npy input gets; make_args(name) is the command line reading it."""
    return layer("npy", npy_input_rows(prefix, make_args, good_name, good, bad_dtype, bad_shape, absurd, descr))


def npy_input_rows(prefix, make_args, good_name, good, bad_dtype, bad_shape, absurd, descr):
    def nonfinite(value):
        a = good.copy()
        a.flat[a.size // 2] = value
        return lambda p: save(p, a)
    return [
        Case(prefix + "missing file", make_args("missing.npy"), names="missing.npy", says=MISSING),
        Case(prefix + "a directory", make_args("dir.npy"), files(("dir.npy", mkdir)), names="dir.npy", says=IS_DIR),
        Case(prefix + "empty file", make_args("empty.npy"), files(("empty.npy", lambda p: write(p, b""))),
             names="empty.npy", says=EMPTY),
        Case(prefix + "not a .npy file (text)", make_args("text.npy"),
             files(("text.npy", lambda p: write(p, b"1,2,3\n4,5,6\n"))), names="text.npy", says=r"not a|magic|npy"),
        Case(prefix + "truncated file", make_args("cut.npy"), files(("cut.npy", lambda p: truncated_copy(p, good))),
             names="cut.npy", says=TRUNCATED),
        Case(prefix + "wrong dtype", make_args("int.npy"), files(("int.npy", lambda p: save(p, bad_dtype))),
             names="int.npy", says=r"dtype|int32"),
        Case(prefix + "wrong shape", make_args("shape.npy"), files(("shape.npy", lambda p: save(p, bad_shape))),
             names="shape.npy", says=r"shape|axes|square"),
        Case(prefix + "NaN", make_args("nan.npy"), files(("nan.npy", nonfinite(np.nan))), names="nan.npy",
             says=NOT_FINITE),
        Case(prefix + "Inf", make_args("inf.npy"), files(("inf.npy", nonfinite(np.inf))), names="inf.npy",
             says=NOT_FINITE),
        Case(prefix + "header claiming 2^40 elements", make_args("huge.npy"),
             files(("huge.npy", lambda p: absurd_npy(p, descr, absurd))), names="huge.npy", says=TOO_LARGE),
        Case(prefix + "header whose size overflows 64 bits", make_args("overflow.npy"),
             files(("overflow.npy", lambda p: absurd_npy(p, descr, (1 << 62, 1 << 62) + tuple(absurd[2:])))),
             names="overflow.npy", says=TOO_LARGE),
    ]


def layer(name, rows):
    for r in rows:
        r.layer = name
    return rows


def output_cases(make_args, setup, flag, name="out", is_dir=False, input_name=None, input_code=2):
    """The rows of an output path: a missing folder, a read-only one, a directory, the input."""
    return layer("output", output_rows(make_args, setup, flag, name, is_dir, input_name, input_code))


def output_rows(make_args, setup, flag, name, is_dir, input_name, input_code):
    rows = [
        Case("%s in a missing folder" % flag, make_args("nodir/" + name), setup, names="nodir/" + name,
             says=r"does not exist|no such file"),
        Case("%s in a read-only folder (%s)" % (flag, RO_DIR), make_args(RO_DIR + "/" + name), setup,
             names=RO_DIR + "/" + name, says=r"cannot|not writable|permission|read-only|no such file", varies=True),
    ]
    if not is_dir:
        rows.append(Case("%s is a directory" % flag, make_args("outdir"), both(setup, files(("outdir", mkdir))),
                         names="outdir", says=IS_DIR))
    if input_name:
        rows.append(Case("%s is the input file" % flag, make_args(input_name), setup, code=input_code,
                         names=input_name, says=r"input|same file|not a .* directory|is not a directory"))
    return rows


def flag_cases(base_args, setup, unknown_at=None, missing_value=None, bad_value=None, conflict=None):
    rows = [Case("unknown flag", base_args + ["--frobnicate"], setup, code=2, names="--frobnicate", says=r"unknown")]
    if missing_value:
        rows.append(Case("flag without its value", base_args + [missing_value], setup, code=2, names=missing_value,
                         says=r"needs a value|value"))
    if bad_value:
        flag, value = bad_value
        rows.append(Case("flag with a value out of range", base_args + [flag, value], setup, code=2, names=flag,
                         says=r"expects|range|must"))
    if conflict:
        args, names, says = conflict
        rows.append(Case("conflicting flags", base_args + args, setup, code=2, names=names, says=says))
    return rows


def teig_cases():
    good = symmetric_packed(3)
    base = lambda inp: ["--order", "4", "--dim", "3", "--starts", "8", "--input", inp, "--output", "e.csv"]
    g = files(("t.npy", lambda p: save(p, good)))
    nonsym = rng.standard_normal((1, 3, 3, 3, 3))
    rows = [Case("valid input (control)", base("t.npy"), g, code=0, allow_new=("e.csv",))]
    rows += npy_input_cases("input: ", base, "t.npy", good, good.astype(np.int32), good[:, :14],
                            (HUGE // 16, 16), "<f4")
    rows += [Case("input: full tensors that are not symmetric", base("full.npy"),
                  files(("full.npy", lambda p: save(p, nonsym))), names="full.npy", says=r"not symmetric")]
    rows += flag_cases(base("t.npy"), g, missing_value="--input", bad_value=("--starts", "0"),
                       conflict=(["--impl", "unrolled", "--order", "5"], "--impl", r"unrolled"))
    rows += output_cases(lambda o: ["--order", "4", "--dim", "3", "--starts", "8", "--input", "t.npy", "--output", o],
                         g, "--output", "e.csv", input_name="t.npy")
    return rows


def eig_cases():
    good = rng.standard_normal((4, 3, 3))
    base = lambda inp: [inp, "vals.npy"]
    g = files(("m.npy", lambda p: save(p, good)))

    def nan_status(folder, r):
        values = np.load(os.path.join(folder, "vals.npy"))
        status = np.load(os.path.join(folder, "st.npy"))
        if list(status) != [0, 0, 2, 0] or not np.isnan(values[2]).all() or np.isnan(values[[0, 1, 3]]).any():
            return "expected status [0 0 2 0] and NaN values for matrix 2 only, got %s" % list(status)
        return None
    nan = good.copy()
    nan[2, 1, 1] = np.nan
    rows = [Case("valid input (control)", base("m.npy"), g, code=0, allow_new=("vals.npy",))]
    rows += [c for c in npy_input_cases("input: ", base, "m.npy", good, good.astype(np.int32), good[:, :, :2],
                                        (HUGE // 9, 3, 3), "<f8") if not re.search(r"NaN|Inf", c.name)]
    rows += [Case("input: a matrix with NaN (documented: that matrix's status is 2, its values NaN)",
                  ["nan.npy", "vals.npy", "--status", "st.npy"], files(("nan.npy", lambda p: save(p, nan))), code=0,
                  names="nan.npy", says=r"NaN or Inf", allow_new=("vals.npy", "st.npy"), check=nan_status)]
    rows += flag_cases(base("m.npy"), g, missing_value="--vectors", bad_value=("--threads", "-1"),
                       conflict=(["--status", "vals.npy"], "vals.npy", r"same file"))
    rows += output_cases(lambda o: ["m.npy", o], g, "OUTPUT", "vals.npy", input_name="m.npy")
    rows += [Case("--vectors in a missing folder", ["m.npy", "vals.npy", "--vectors", "nodir/v.npy"], g,
                  names="nodir/v.npy", says=r"does not exist|no such file")]
    return rows


def tucker_train_cases():
    rows_ok = small_tns_rows()
    g = files(("s.tns", lambda p: tns(p, rows_ok)))
    base = lambda inp: ["train", inp, "--out", "model", "--iters", "2", "--rank-j", "4", "--rank-r", "4", "--quiet"]
    cache = ("s.tns.tkc",)

    def with_row(row, at=5):
        return lambda p: tns(p, rows_ok[:at] + [row] + rows_ok[at:])

    def cut(p):
        tns(p, rows_ok)
        data = open(p, "rb").read()
        write(p, data[: data.rindex(b" ")])  # the last line loses its value

    rows = [Case("valid input (control)", base("s.tns"), g, code=0, allow_new=("model", "s.tns.tkc"))]
    rows += [
        Case("missing file", base("missing.tns"), names="missing.tns", says=MISSING),
        Case("a directory", base("dir.tns"), files(("dir.tns", mkdir)), names="dir.tns", says=IS_DIR),
        Case("empty file", base("empty.tns"), files(("empty.tns", lambda p: write(p, b""))), names="empty.tns",
             says=EMPTY),
        Case("truncated file (last value cut)", base("cut.tns"), files(("cut.tns", cut)), names="cut.tns",
             says=r"line|columns|values"),
        Case("non-numeric value", base("word.tns"), files(("word.tns", with_row((1, 2, 3, "abc")))),
             names="word.tns", says=r"word.tns:6: .*not a number"),
        Case("wrong shape (order 2)", base("two.tns"), files(("two.tns", lambda p: tns(p, [(1, 2, 1.0), (2, 1, 2.0)]))),
             names="two.tns", says=r"order"),
        Case("index 0 (the format is 1-based)", base("zero.tns"), files(("zero.tns", with_row((0, 2, 3, 1.0)))),
             names="zero.tns", says=r"zero.tns:6: .*1-based"),
        Case("NaN value", base("nan.tns"), files(("nan.tns", with_row((1, 2, 3, "nan")))), names="nan.tns",
             says=NOT_FINITE),
        Case("Inf value", base("inf.tns"), files(("inf.tns", with_row((1, 2, 3, "inf")))), names="inf.tns",
             says=NOT_FINITE),
        Case("index 2^40", base("huge.tns"), files(("huge.tns", with_row((HUGE, 2, 3, 1.0)))), names="huge.tns",
             says=r"huge.tns:6: .*larger than"),
        Case("index 4e9 (a mode of 4e9 rows)", base("wide.tns"), files(("wide.tns", with_row((4000000000, 2, 3, 1.0)))),
             names="wide.tns", says=r"GiB", varies=True),
        Case("corrupt .tkc cache beside a valid input (ignored, rebuilt)", base("s.tns"),
             both(g, files(("s.tns.tkc", lambda p: write(p, b"TKTNSC01" + b"\xff" * 200)))), code=0,
             allow_new=("model",), may_change=("s.tns.tkc",)),
        Case("--test: missing file", base("s.tns") + ["--test", "missing.tns"], g, names="missing.tns",
             says=MISSING, allow_new=cache),
        Case("--resume with --out holding other files", base("s.tns") + ["--resume"],
             both(g, files(("model", mkdir), ("model/notes.txt", lambda p: write(p, b"mine\n")))), names="model",
             says=r"not a tk-tucker model"),
        Case("--init: an unknown start", base("s.tns") + ["--init", "bogus"], g, code=2, names="--init",
             says=r"auto, random or spectral"),
        Case("--init spectral with --resume", base("s.tns") + ["--init", "spectral", "--resume"], g, code=2,
             names="--resume", says=r"--init spectral with --resume"),
        Case("--deflate with --init random", base("s.tns") + ["--init", "random", "--deflate", "1"], g, code=2,
             names="--deflate", says=r"with --init random"),
        Case("--deflate: negative rounds", base("s.tns") + ["--init", "spectral", "--deflate", "-1"], g, code=2,
             names="--deflate", says=r"-1"),
        Case("--deflate with --resume", base("s.tns") + ["--init", "spectral", "--deflate", "1", "--resume"], g,
             code=2, names="--deflate", says=r"--deflate with --resume"),
    ]
    rows += flag_cases(base("s.tns"), g, missing_value="--lr-a", bad_value=("--rank-j", "3"),
                       conflict=(["--test", "s.tns", "--test-fraction", "0.1"], "--test", r"not both"))
    rows += output_cases(lambda o: ["train", "s.tns", "--out", o, "--iters", "2", "--rank-j", "4", "--rank-r", "4",
                                    "--quiet"], g, "--out", "model", is_dir=True, input_name="s.tns", input_code=1)
    for r in rows:
        if r.code != 0 and not r.allow_new and "s.tns" in r.args:
            r.allow_new = cache  # the documented cache of a valid input
    return rows


def synth_model(folder, exe):
    subprocess.run([exe, "synth", "--shape", "12,10,8", "--nnz", "200", "--rank-j", "4", "--rank-r", "4", "--truth",
                    "model", "s.tns"], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    os.remove(os.path.join(folder, "s.tns"))


def tucker_predict_cases(exe):
    q_rows = [(i % 12 + 1, i % 10 + 1, i % 8 + 1) for i in range(20)]
    gm = lambda folder: synth_model(folder, exe)
    gq = files(("q.tns", lambda p: tns(p, q_rows)))
    g = both(gm, gq)
    base = lambda m, q: ["predict", m, q, "p.tns"]

    def model_edit(edit):
        def setup(folder):
            g(folder)
            edit(os.path.join(folder, "model"))
        return setup

    def cut_a1(m):
        p = os.path.join(m, "A1.npy")
        data = open(p, "rb").read()
        write(p, data[: len(data) - 40])

    def a1(array_fn):
        def edit(m):
            p = os.path.join(m, "A1.npy")
            save(p, array_fn(np.load(p)))
        return edit

    def nan_a1(a):
        a = a.copy()
        a[3, 1] = np.nan
        return a
    rows = [Case("valid input (control)", base("model", "q.tns"), g, code=0, allow_new=("p.tns",))]
    rows += [
        Case("model: missing folder", base("nomodel", "q.tns"), gq, names="nomodel", says=MISSING),
        Case("model: a file, not a folder", base("q.tns", "q.tns"), gq, names="q.tns",
             says=r"not a directory|manifest|not a tk-tucker model|cannot"),
        Case("model: empty manifest.txt", base("model", "q.tns"),
             model_edit(lambda m: write(os.path.join(m, "manifest.txt"), b"")), names="manifest.txt",
             says=r"manifest|missing|order|format"),
        Case("model: truncated A1.npy", base("model", "q.tns"), model_edit(cut_a1), names="A1.npy", says=TRUNCATED),
        Case("model: A1.npy of the wrong dtype", base("model", "q.tns"), model_edit(a1(lambda a: a.astype(np.float64))),
             names="A1.npy", says=r"dtype|float32"),
        Case("model: A1.npy of the wrong shape", base("model", "q.tns"), model_edit(a1(lambda a: a[:, :3].copy())),
             names="A1.npy", says=r"holds .* but the manifest says"),
        Case("model: NaN in A1.npy", base("model", "q.tns"), model_edit(a1(nan_a1)), names="A1.npy",
             says=NOT_FINITE),
        Case("model: manifest claiming 2^32-1 rows", base("model", "q.tns"),
             model_edit(lambda m: write(os.path.join(m, "manifest.txt"),
                                        open(os.path.join(m, "manifest.txt"), "rb").read().replace(
                                            b"dims = 12,10,8", b"dims = 4294967295,10,8"))),
             names="A1.npy", says=r"holds .* but the manifest says"),
        Case("queries: missing file", base("model", "missing.tns"), gm, names="missing.tns", says=MISSING),
        Case("queries: a directory", base("model", "dir.tns"), both(gm, files(("dir.tns", mkdir))), names="dir.tns",
             says=IS_DIR),
        Case("queries: empty file", base("model", "empty.tns"), both(gm, files(("empty.tns", lambda p: write(p, b"")))),
             names="empty.tns", says=EMPTY),
        Case("queries: non-numeric index", base("model", "word.tns"),
             both(gm, files(("word.tns", lambda p: tns(p, q_rows[:3] + [(1, "x", 2)])))), names="word.tns",
             says=r"word.tns:4: .*not an integer"),
        Case("queries: wrong order (4 indices)", base("model", "four.tns"),
             both(gm, files(("four.tns", lambda p: tns(p, [(1, 2, 3, 4, 1.0)])))), names="four.tns",
             says=r"order|columns|line 1"),
        Case("queries: index beyond the model", base("model", "far.tns"),
             both(gm, files(("far.tns", lambda p: tns(p, q_rows[:3] + [(13, 1, 1)])))), names="far.tns",
             says=r"beyond"),
        Case("queries: index 2^40", base("model", "huge.tns"),
             both(gm, files(("huge.tns", lambda p: tns(p, q_rows[:3] + [(HUGE, 1, 1)])))), names="huge.tns",
             says=r"huge.tns:4: .*larger than"),
        Case("missing argument", ["predict", "model", "q.tns"], g, code=2, names="predict", says=r"takes"),
        Case("unknown flag", base("model", "q.tns") + ["--frobnicate"], g, code=2, names="--frobnicate",
             says=r"unknown"),
    ]
    rows += output_cases(lambda o: ["predict", "model", "q.tns", o], g, "OUT.tns", "p.tns", input_name="q.tns")
    return rows


def tucker_synth_cases():
    base = ["synth", "--shape", "12,10,8", "--nnz", "100", "--rank-j", "4", "--rank-r", "4"]
    rows = [Case("valid command (control)", base + ["s.tns"], code=0, allow_new=("s.tns",))]
    rows += [
        Case("--nnz 2^40 in a 12x10x8 tensor", ["synth", "--shape", "12,10,8", "--nnz", str(HUGE), "s.tns"], code=2,
             names="--nnz", says=r"fit|cells"),
        Case("--nnz 2^40 in a tensor of 2^96 cells", ["synth", "--shape", "4294967295,4294967295,4294967295", "--nnz",
                                                      str(HUGE), "s.tns"], names="--nnz", says=r"GiB",
             varies=True),
        Case("--shape with a zero size", ["synth", "--shape", "12,0,8", "--nnz", "10", "s.tns"], code=2,
             names="--shape", says=r"positive"),
        Case("--shape of order 2", ["synth", "--shape", "12,10", "--nnz", "10", "s.tns"], code=2, names="--shape",
             says=r"at least 3"),
        Case("--shape not a list of numbers", ["synth", "--shape", "12,ten,8", "--nnz", "10", "s.tns"], code=2,
             names="--shape", says=r"expects"),
        Case("--truth in a missing folder", base + ["--truth", "nodir/truth", "s.tns"], names="nodir/truth",
             says=r"does not exist|no such file"),
    ]
    rows += flag_cases(base + ["s.tns"], None, missing_value="--seed", bad_value=("--rank-r", "65"),
                       conflict=(["--nnz", "1000"], "--nnz", r"fit|cells"))
    rows += output_cases(lambda o: base + [o], None, "OUT.tns", "s.tns")
    return rows


def image3(shape=(4, 5, 6)):
    return rng.uniform(1, 2, shape).astype(np.float32)


def completion_cases(base, g, img, mask, after_nan=(), extra=()):
    """The cases of both completion commands (tk-tucker complete, tk-pltf complete) on their
    image and --mask files; after_nan and extra: the command's own, in their places."""
    nan = img.copy()
    nan[mask.astype(bool)] = np.where(np.arange(mask.sum()) == 3, np.nan, img[mask.astype(bool)])
    rows = [Case("valid input (control)", base("img.nrrd"), g, code=0, allow_new=("out.nrrd",))]
    rows += [
        Case("missing file", base("missing.nrrd"), g, names="missing.nrrd", says=MISSING),
        Case("a directory", base("dir.nrrd"), both(g, files(("dir.nrrd", mkdir))), names="dir.nrrd", says=IS_DIR),
        Case("empty file", base("empty.nrrd"), both(g, files(("empty.nrrd", lambda p: write(p, b"")))),
             names="empty.nrrd", says=r"empty|cannot read|not a|unknown|format"),
        Case("not an image (text)", base("text.nrrd"), both(g, files(("text.nrrd", lambda p: write(p, b"1 2 3\n")))),
             names="text.nrrd", says=r"cannot read|not a|format|unknown"),
        Case("truncated file", base("cut.nrrd"),
             both(g, files(("cut.nrrd", lambda p: nrrd(p, img, data=img.tobytes()[:200])))), names="cut.nrrd",
             says=r"truncated|short|read|expected|bytes"),
        Case("wrong shape (2-D image)", base("flat.nrrd"),
             both(g, files(("flat.nrrd", lambda p: nrrd_header_only(p, (6, 5), data=img[0].tobytes())))),
             names="flat.nrrd", says=r"2-d|dimension|3-d"),
        Case("NaN at an observed voxel", base("nan.nrrd"), both(g, files(("nan.nrrd", lambda p: nrrd(p, nan)))),
             names="nan.nrrd", says=NOT_FINITE),
        Case("NIfTI: NaN at a voxel, no mask (ITK's reader would hand it over as an observed 0)",
             [a for a in base("holes.nii") if a not in ("--mask", "mask.nrrd")],
             files(("holes.nii", lambda p: write(p, nifti1_bytes(nan.transpose(), np.diag([2.0, 2, 2, 1]))))),
             names="holes.nii", says=r"is not finite"),
    ]
    rows += list(after_nan)
    rows += [
        Case("header claiming 2^40 voxels", base("huge.nrrd"),
             both(g, files(("huge.nrrd", lambda p: nrrd_header_only(p, (1 << 14, 1 << 13, 1 << 13))))),
             names="huge.nrrd", says=r"GiB|truncated: the header claims", varies=True),
        Case("--mask: missing file", base("img.nrrd")[:3] + ["--mask", "nomask.nrrd"], g, names="nomask.nrrd",
             says=MISSING),
        Case("--mask: of another size", base("img.nrrd")[:3] + ["--mask", "small.nrrd"],
             both(g, files(("small.nrrd", lambda p: nrrd(p, mask[:, :, :3], pixel="uchar")))), names="small.nrrd",
             says=r"size"),
    ]
    return rows + list(extra)


def tucker_complete_cases():
    img = image3()
    mask = (rng.uniform(0, 1, img.shape) > 0.3).astype(np.uint8)
    g = files(("img.nrrd", lambda p: nrrd(p, img)), ("mask.nrrd", lambda p: nrrd(p, mask, pixel="uchar")))
    base = lambda inp: ["complete", inp, "out.nrrd", "--mask", "mask.nrrd", "--iters", "2", "--rank-j", "4",
                        "--rank-r", "4", "--quiet"]
    rows = completion_cases(base, g, img, mask, extra=[
        Case("--mask: no observed voxel", base("img.nrrd")[:3] + ["--mask", "zero.nrrd"],
             both(g, files(("zero.nrrd", lambda p: nrrd(p, 0 * mask, pixel="uchar")))), names="zero.nrrd",
             says=r"no voxel as observed"),
    ])
    rows += completion_grid_cases(base, g, mask)
    rows += flag_cases(base("img.nrrd"), g, missing_value="--mask", bad_value=("--rank-j", "3"),
                       conflict=(["--keep-observed", "extra.nrrd"], "extra.nrrd", r"unexpected"))
    rows += output_cases(lambda o: ["complete", "img.nrrd", o, "--mask", "mask.nrrd", "--iters", "2", "--rank-j", "4",
                                    "--rank-r", "4", "--quiet"], g, "OUT_IMAGE", "out.nrrd", input_name="img.nrrd")
    return rows


def pltf_complete_cases():
    img = image3()
    mask = (rng.uniform(0, 1, img.shape) > 0.3).astype(np.uint8)
    g = files(("img.nrrd", lambda p: nrrd(p, img)), ("mask.nrrd", lambda p: nrrd(p, mask, pixel="uchar")))
    base = lambda inp: ["complete", inp, "out.nrrd", "--mask", "mask.nrrd", "--iters", "2", "--rank", "2", "--quiet"]
    negative = img.copy()
    negative[0, 0, 0], mask_neg = -1.0, mask.copy()
    mask_neg[0, 0, 0] = 1
    rows = completion_cases(base, g, img, mask, after_nan=[
        Case("negative value at an observed voxel", base("neg.nrrd")[:3] + ["--mask", "mneg.nrrd"],
             both(g, files(("neg.nrrd", lambda p: nrrd(p, negative)),
                           ("mneg.nrrd", lambda p: nrrd(p, mask_neg, pixel="uchar")))),
             names="neg.nrrd", says=r"negative"),
    ], extra=[
        Case("--model: malformed expression", base("img.nrrd") + ["--model", "ijk=ia,"], g, names="--model",
             says=r"model|expression|expected", code=2),
    ])
    rows += completion_grid_cases(base, g, mask)
    rows += flag_cases(base("img.nrrd"), g, missing_value="--mask", bad_value=("--rank", "0"),
                       conflict=(["--keep-observed", "extra.nrrd"], "extra.nrrd", r"unexpected"))
    rows += output_cases(lambda o: ["complete", "img.nrrd", o, "--mask", "mask.nrrd", "--iters", "2", "--rank", "2",
                                    "--quiet"], g, "OUT_IMAGE", "out.nrrd", input_name="img.nrrd")
    return rows


def pltf_cases():
    good = rng.uniform(0, 3, (4, 5, 6))
    g = files(("x.npy", lambda p: save(p, good)))
    base = lambda inp: ["--model", "parafac", "--input", inp, "--dims", "a=2", "--out", "fit", "--iters", "3", "--quiet"]
    negative = good.copy()
    negative[1, 2, 3] = -1
    rows = [Case("valid input (control)", base("x.npy"), g, code=0, allow_new=("fit",))]
    rows += npy_input_cases("input: ", base, "x.npy", good, good.astype(np.int32), good[0],
                            (1 << 14, 1 << 13, 1 << 13), "<f8")
    rows += [Case("input: a negative value (KL)", base("neg.npy"), files(("neg.npy", lambda p: save(p, negative))),
                  names="neg.npy", says=r"negative")]
    mrows = [
        ("--mask: missing file", "nomask.npy", None, MISSING),
        ("--mask: of another shape", "small.npy", good[:, :, :3] > 1, r"shape"),
        ("--mask: complex dtype", "cplx.npy", (good > 1).astype(np.complex64), r"dtype"),
        ("--mask: no observed entry", "zero.npy", np.zeros(good.shape, np.uint8), r"no observed"),
    ]
    for name, f, arr, says in mrows:
        setup = g if arr is None else both(g, files((f, (lambda a: lambda p: save(p, a))(arr))))
        rows.append(Case(name, base("x.npy") + ["--mask", f], setup, names=f, says=says))
    rows += [Case("--model malformed", ["--model", "ijk=ia,j2,ka", "--input", "x.npy", "--dims", "a=2", "--out", "fit"],
                  g, code=2, names="--model", says=r"position"),
             Case("--dims a=2^31 (factors beyond memory)", ["--model", "parafac", "--input", "x.npy", "--dims",
                                                             "a=2147483648", "--out", "fit"], g, names="--dims",
                  says=r"GiB", varies=True),
             Case("--dims missing a latent size", ["--model", "parafac", "--input", "x.npy", "--out", "fit"], g, code=2,
                  names="--dims", says=r"size|dims")]
    rows += flag_cases(base("x.npy"), g, missing_value="--out", bad_value=("--iters", "-1"),
                       conflict=(["--dims", "i=3"], "--dims", r"observed index"))
    rows += output_cases(lambda o: ["--model", "parafac", "--input", "x.npy", "--dims", "a=2", "--out", o, "--iters",
                                    "3", "--quiet"], g, "--out", "fit", is_dir=True, input_name="x.npy", input_code=1)
    return rows


def fibers_cases():
    sh = rng.standard_normal((2, 3, 3, 15)).astype(np.float32)
    sh[..., 0] = 1 + np.abs(sh[..., 0])
    g = files(("sh.nrrd", lambda p: nrrd(p, sh, kind_vector=True)))
    base = lambda inp: [inp, "peaks.nrrd", "--quiet"]
    nan = sh.copy()
    nan[1, 1, 1, 4] = np.nan

    mask_with_nan = np.ones(sh.shape[:3], np.float32)
    mask_with_nan[0, 2, 1] = np.nan  # (z, y, x): voxel (1, 2, 0)

    def nan_peaks(folder, r):
        return None if "1 voxels" in r.stderr else "expected the warning to count 1 voxel"
    rows = [Case("valid input (control)", base("sh.nrrd"), g, code=0, allow_new=("peaks.nrrd",))]
    rows += [
        Case("missing file", base("missing.nrrd"), names="missing.nrrd", says=MISSING),
        Case("a directory", base("dir.nrrd"), files(("dir.nrrd", mkdir)), names="dir.nrrd", says=IS_DIR),
        Case("empty file", base("empty.nrrd"), files(("empty.nrrd", lambda p: write(p, b""))), names="empty.nrrd",
             says=r"empty|cannot read|not a|unknown|format"),
        Case("not an image (text)", base("text.nrrd"), files(("text.nrrd", lambda p: write(p, b"1 2 3\n"))),
             names="text.nrrd", says=r"cannot read|not a|format|unknown"),
        Case("truncated file", base("cut.nrrd"),
             files(("cut.nrrd", lambda p: nrrd(p, sh, kind_vector=True, data=sh.tobytes()[:300]))), names="cut.nrrd",
             says=r"truncated|short|read|expected|bytes"),
        Case("wrong shape (14 coefficients)", base("k14.nrrd"),
             files(("k14.nrrd", lambda p: nrrd(p, sh[..., :14], kind_vector=True))), names="k14.nrrd",
             says=r"no even-degree SH size"),
        Case("a voxel with NaN (documented: that voxel's peaks are NaN)", [ "nan.nrrd", "peaks.nrrd"],
             files(("nan.nrrd", lambda p: nrrd(p, nan, kind_vector=True))), code=0, names="1 voxels",
             says=r"non-finite", allow_new=("peaks.nrrd",), check=nan_peaks),
        Case("NIfTI: a voxel with NaN (documented: that voxel's peaks are NaN)", ["nan.nii", "peaks.nrrd"],
             files(("nan.nii", lambda p: write(p, nifti1_bytes(nan.transpose(2, 1, 0, 3), np.diag([2.0, 2, 2, 1]))))),
             code=0, names="1 voxels", says=r"non-finite", allow_new=("peaks.nrrd",), check=nan_peaks),
        Case("NIfTI (gzip): a voxel with Inf (documented: that voxel's peaks are NaN)", ["inf.nii.gz", "peaks.nrrd"],
             files(("inf.nii.gz", lambda p: write(p, gz(nifti1_bytes(np.where(np.isnan(nan), np.inf, nan)
                                                                     .transpose(2, 1, 0, 3),
                                                                     np.diag([2.0, 2, 2, 1])))))),
             code=0, names="1 voxels", says=r"non-finite", allow_new=("peaks.nrrd",), check=nan_peaks),
        Case("NIfTI --mask with a NaN voxel (ITK's reader would hand it over as 0)",
             ["shn.nii", "peaks.nrrd", "--quiet", "--mask", "mnan.nii"],
             files(("shn.nii", lambda p: write(p, nifti1_bytes(sh.transpose(2, 1, 0, 3), np.diag([2.0, 2, 2, 1])))),
                   ("mnan.nii", lambda p: write(p, nifti1_bytes(mask_with_nan.transpose(2, 1, 0),
                                                                 np.diag([2.0, 2, 2, 1]))))),
             names="mnan.nii", says=r"NaN at voxel \(1, 2, 0\)"),
        Case("header claiming 2^40 voxels", base("huge.nrrd"),
             files(("huge.nrrd", lambda p: nrrd_header_only(p, (15, 1 << 14, 1 << 13, 1 << 13),
                                                            kinds="vector domain domain domain"))),
             names="huge.nrrd", says=r"GiB|truncated: the header claims", varies=True),
        Case(".mif: valid input (control)", base("sh.mif"), files(("sh.mif", lambda p: mif(p, sh))), code=0,
             allow_new=("peaks.nrrd",)),
        Case(".mif: truncated data", base("cut.mif"), files(("cut.mif", lambda p: mif(p, sh, data=sh.tobytes()[:300]))),
             names="cut.mif", says=r"truncated"),
        Case(".mif: header without END", base("noend.mif"),
             files(("noend.mif", lambda p: write(p, b"mrtrix image\ndim: 3,3,2,15\nvox: 1,1,1,1\n"))),
             names="noend.mif", says=r"malformed .mif header"),
        Case(".mif: a layout that is no permutation", base("layout.mif"),
             files(("layout.mif", lambda p: mif(p, sh, lines="dim: 3,3,2,15\nvox: 1,1,1,1\nlayout: +1,+2,+2,+0\n"
                                                              "datatype: Float32LE\n"))),
             names="layout.mif", says=r"layout"),
        Case(".mif: complex datatype", base("cplx.mif"), files(("cplx.mif", lambda p: mif(p, sh, datatype="CFloat32LE"))),
             names="cplx.mif", says=r"complex"),
        Case(".mif: more data than its header claims", base("tail.mif"),
             files(("tail.mif", lambda p: mif(p, sh, data=sh.astype("<f4").tobytes() + b"\0" * 60))), names="tail.mif",
             says=r"60 bytes after the data that the header does not account for"),
        Case(".mih: its data file short", base("short.mih"),
             files(("short.mih", lambda p: write(p, mih_header(sh, "short.dat"))),
                   ("short.dat", lambda p: write(p, sh.astype("<f4").tobytes()[:-8]))),
             names="short.mih", says=r"its data file short.dat: truncated"),
        Case(".mif: an MRtrix3 image named .nii (exit 0: read by its content)", base("sh_mif.nii"),
             files(("sh_mif.nii", lambda p: mif(p, sh))), code=0, allow_new=("peaks.nrrd",)),
        Case(".mif: a NIfTI image named .mif", base("nifti.mif"),
             files(("nifti.mif", lambda p: write(p, nifti1_bytes(sh.transpose(2, 1, 0, 3), np.diag([2.0, 2, 2, 1]))))),
             names="nifti.mif", says=r"a NIfTI image by its content.*rename it"),
        Case("--mask: missing file", base("sh.nrrd") + ["--mask", "nomask.nrrd"], g, names="nomask.nrrd",
             says=MISSING),
        Case("--mask: of another size", base("sh.nrrd") + ["--mask", "small.nrrd"],
             both(g, files(("small.nrrd", lambda p: nrrd(p, np.ones((2, 3, 2)), pixel="uchar")))), names="small.nrrd",
             says=r"size"),
    ]
    rows += fibers_read_cases(sh, g, base)
    rows += flag_cases(base("sh.nrrd"), g, missing_value="--num", bad_value=("--num", "0"),
                       conflict=(["--slice", "1"], "--slice", r"only applies"))
    rows += [Case("--threads out of range", base("sh.nrrd") + ["--threads", "-1"], g, code=2, names="--threads",
                  says=r"expects")]
    rows += output_cases(lambda o: ["sh.nrrd", o, "--quiet"], g, "OUTPUT_PEAKS", "peaks.nrrd", input_name="sh.nrrd")
    rows += [Case("OUTPUT_PEAKS of an unknown format", ["sh.nrrd", "peaks.xyz", "--quiet"], g, code=2,
                  names="peaks.xyz", says=r"unknown output format"),
             Case("--amplitudes in a missing folder", base("sh.nrrd") + ["--amplitudes", "nodir/amp.nrrd"], g,
                  names="nodir/amp.nrrd", says=r"does not exist|no such file"),
             Case("--amplitudes of an unknown format", base("sh.nrrd") + ["--amplitudes", "amp.xyz"], g, code=2,
                  names="amp.xyz", says=r"unknown output format"),
             Case("--amplitudes the same file as OUTPUT_PEAKS", base("sh.nrrd") + ["--amplitudes", "peaks.nrrd"], g,
                  code=2, names="peaks.nrrd", says=r"same file")]
    return rows


# ---- reading images: the cases ITK 5.2's readers crashed on, hung on, or read as zeros ----
# (each refused now by tools/io/image_probe.c before ITK sees the file, or by
# tools/itk/image/image_grid.cxx for masks; every row failed on the reader keyed on names)

def nifti1_bytes(array, affine=None, datatype=16, pair=False, edit=None):
    """array (x, y, z[, t]) as little-endian NIfTI-1 bytes: the 348-byte header (with an
    sform from affine, code 1, where given), 4 extension bytes unless pair, then the data
    (x fastest); edit(header bytearray) may change fields after."""
    dtype = {16: "<f4", 2: "u1"}[datatype]
    h = bytearray(348)
    struct.pack_into("<i", h, 0, 348)
    dims = list(array.shape)
    struct.pack_into("<8h", h, 40, len(dims), *(dims + [1] * (7 - len(dims))))
    struct.pack_into("<hh", h, 70, datatype, np.dtype(dtype).itemsize * 8)
    struct.pack_into("<8f", h, 76, 1, 2, 2, 2, 1, 1, 1, 1)
    struct.pack_into("<f", h, 108, 0.0 if pair else 352.0)
    struct.pack_into("<f", h, 112, 1.0)
    h[123] = 2 | 8
    if affine is not None:
        struct.pack_into("<h", h, 254, 1)
        struct.pack_into("<12f", h, 280, *np.asarray(affine, float)[:3].ravel())
    h[344:348] = b"ni1\0" if pair else b"n+1\0"
    if edit:
        edit(h)
    data = np.asarray(array, dtype).tobytes(order="F")
    return bytes(h) + (b"" if pair else b"\0" * 4) + data


def nifti2_bytes(array):
    """array (x, y, z[, t]) as little-endian NIfTI-2 float32 bytes (pixdim 2 mm, no transform
    codes), data at 544."""
    h = bytearray(540)
    struct.pack_into("<i", h, 0, 540)
    h[4:12] = b"n+2\0\r\n\032\n"
    struct.pack_into("<hh", h, 12, 16, 32)
    dims = list(array.shape)
    struct.pack_into("<8q", h, 16, len(dims), *(dims + [1] * (7 - len(dims))))
    struct.pack_into("<8d", h, 104, 1, 2, 2, 2, 1, 1, 1, 1)
    struct.pack_into("<q", h, 168, 544)
    struct.pack_into("<d", h, 176, 1.0)
    return bytes(h) + b"\0" * 4 + np.asarray(array, "<f4").tobytes(order="F")


def nan_sform(h):
    struct.pack_into("<f", h, 280, float("nan"))


def gz(data):
    import gzip
    return gzip.compress(data, mtime=0)


def mha_bytes(array, lines=None, compressed=False, local_data=None, data_file="LOCAL"):
    """array (z, y, x, components) as MetaImage: the header's records (lines replaces the
    ones between NDims and ElementDataFile), then LOCAL data (zlib-compressed where
    compressed) or local_data as given."""
    import zlib
    raw = array.astype("<f4").tobytes()
    body = zlib.compress(raw) if compressed else raw
    if lines is None:
        lines = ("BinaryData = True\nBinaryDataByteOrderMSB = False\nCompressedData = %s\n%s"
                 "TransformMatrix = 1 0 0 0 1 0 0 0 1\nOffset = 0 0 0\nElementSpacing = 2 2 2\nDimSize = %d %d %d\n"
                 "ElementNumberOfChannels = %d\nElementType = MET_FLOAT\n"
                 % ("True" if compressed else "False", "CompressedDataSize = %d\n" % len(body) if compressed else "",
                    array.shape[2], array.shape[1], array.shape[0], array.shape[3]))
    head = "ObjectType = Image\nNDims = 3\n" + lines + "ElementDataFile = %s\n" % data_file
    return head.encode() + (body if local_data is None else local_data)


def fibers_read_cases(sh, g, base):
    """tk-fibers' SH input read as an attacker would write it; then its --mask on another
    grid.  sh: (z, y, x, 15) float32; g: the control's setup (sh.nrrd); base(inp): argv."""
    xyz = sh.transpose(2, 1, 0, 3)  # NIfTI's x-fastest order
    aff = np.diag([2.0, 2.0, 2.0, 1.0])
    good = nifti1_bytes(xyz, aff)
    hdr, img = nifti1_bytes(xyz, aff, pair=True, edit=nan_sform)[:348], good[352:]
    neg = nifti1_bytes(xyz, aff, edit=lambda h: struct.pack_into("<h", h, 44, -3))
    zero = nifti1_bytes(xyz, aff, edit=lambda h: struct.pack_into("<h", h, 46, 0))
    past = nifti1_bytes(xyz, aff, edit=lambda h: struct.pack_into("<f", h, 108, 1e6))
    huge = gz(nifti1_bytes(np.zeros((1, 1, 1, 1), np.float32), aff,
                           edit=lambda h: struct.pack_into("<5h", h, 40, 4, 1000, 1000, 100, 15))[:352])
    analyze = bytearray(good)
    analyze[344:348] = b"\0\0\0\0"
    missing_slice = mha_bytes(sh, data_file="slice%03d.raw 1 2 1", local_data=b"")
    z = mha_bytes(sh, compressed=True)
    zbody_at = z.index(b"ElementDataFile = LOCAL\n") + len(b"ElementDataFile = LOCAL\n")
    corrupt = bytearray(z)
    corrupt[zbody_at + 40] ^= 0x55
    colon = mha_bytes(sh).replace(b"DimSize = ", b"DimSize : ")
    junk = mha_bytes(sh).replace(b"ElementDataFile", b"these bytes are no record\nElementDataFile")
    ndims = mha_bytes(sh).replace(b"NDims = 3\n", b"NDims : -5\n")
    dim10 = (b"NRRD0004\ntype: float\ndimension: 10\nsizes: 15 3 3 2 1 1 1 1 1 1\nencoding: raw\nendian: little\n\n"
             + sh.astype("<f4").tobytes())
    f = lambda name, data: files((name, lambda p: write(p, data)))
    rows = [
        Case("read: NIfTI named .NII whose sform holds NaN", base("nan.NII"), f("nan.NII", nifti1_bytes(
            xyz, aff, edit=nan_sform)), names="nan.NII", says=r"sform holds nan"),
        Case("read: gzip NIfTI named .NII.GZ whose sform holds NaN", base("nan.NII.GZ"),
             f("nan.NII.GZ", gz(nifti1_bytes(xyz, aff, edit=nan_sform))), names="nan.NII.GZ", says=r"sform holds nan"),
        Case("read: NIfTI pair .hdr/.img whose sform holds NaN", base("nan.hdr"),
             both(f("nan.hdr", hdr), f("nan.img", img)), names="nan.hdr", says=r"sform holds nan"),
        Case("read: ANALYZE 7.5 .hdr/.img (no NIfTI magic: orientation undefined)", base("old.hdr"),
             both(f("old.hdr", bytes(analyze[:348])), f("old.img", img)), names="old.hdr", says=r"ANALYZE.*accepted"),
        Case("read: MetaImage with ':' for '='", base("colon.mha"), f("colon.mha", colon), names="colon.mha",
             says=r"line 9: .*uses ':'"),
        Case("read: MetaImage with a junk line before ElementDataFile", base("junk.mha"), f("junk.mha", junk),
             names="junk.mha", says=r"line 12 is not a 'Key = Value' record"),
        Case("read: MetaImage 'NDims : -5'", base("ndims.mha"), f("ndims.mha", ndims), names="ndims.mha",
             says=r"line 2: 'NDims : -5'"),
        Case("read: NRRD 'dimension: 10'", base("dim10.nrrd"), f("dim10.nrrd", dim10), names="dim10.nrrd",
             says=r"dimension '10' is not from 1 to 5"),
        Case("read: .nii.gz cut mid-stream", base("cut.nii.gz"), f("cut.nii.gz", gz(good)[:-200]),
             names="cut.nii.gz", says=r"truncated"),
        Case("read: .nii.gz followed by junk", base("tail.nii.gz"), f("tail.nii.gz", gz(good) + b"junk" * 8),
             names="tail.nii.gz", says=r"follow the end of the compressed data"),
        Case("read: NIfTI vox_offset past the end", base("past.nii"), f("past.nii", past), names="past.nii",
             says=r"truncated: vox_offset 1000000 is past the end"),
        Case("read: NIfTI pair with a short .img", base("short.hdr"),
             both(f("short.hdr", nifti1_bytes(xyz, aff, pair=True)[:348]), f("short.img", img[:len(img) // 2])),
             names="short.hdr", says=r"truncated: .*short.img holds"),
        Case("read: NIfTI dim[2] = -3", base("neg.nii"), f("neg.nii", neg), names="neg.nii",
             says=r"dim\[2\] is -3"),
        Case("read: NIfTI dim[3] = 0", base("zero.nii"), f("zero.nii", zero), names="zero.nii",
             says=r"dim\[3\] is 0"),
        Case("read: a .nii.gz of %d bytes claiming 6 GB" % len(huge), base("claim.nii.gz"), f("claim.nii.gz", huge),
             names="claim.nii.gz", says=r"cannot inflate to more than .*1032:1"),
        Case("read: MetaImage with short CompressedData", base("shortz.mha"), f("shortz.mha", z[:-60]),
             names="shortz.mha", says=r"truncated"),
        Case("read: MetaImage with corrupt CompressedData", base("badz.mha"), f("badz.mha", bytes(corrupt)),
             names="badz.mha", says=r"corrupt compressed data|hold more than|hold \d+ bytes"),
        Case("read: MetaImage of numbered slice files, one missing", base("slices.mhd"),
             both(f("slices.mhd", missing_slice), f("slice001.raw", sh[0].astype("<f4").tobytes())),
             names="slices.mhd", says=r"slice file 2 of 2, slice002.raw, cannot be opened"),
    ]
    # MetaImage data split over slice files (LIST, numbered names): every file present and
    # exactly one slice, read by the tools (MetaIO reads a missing or short one as zeros)
    import zlib
    slice_files = both(f("s1.raw", sh[0].astype("<f4").tobytes()), f("s2.raw", sh[1].astype("<f4").tobytes()))
    z_slices = both(f("z1.raw", zlib.compress(sh[0].astype("<f4").tobytes())),
                    f("z2.raw", zlib.compress(sh[1].astype("<f4").tobytes())[:-6]))
    rows += [
        Case("read: MetaImage LIST of slice files (exit 0: read by the tools)", base("list.mhd"),
             both(f("list.mhd", mha_bytes(sh, data_file="LIST", local_data=b"s1.raw\ns2.raw\n")), slice_files),
             code=0, allow_new=("peaks.nrrd",)),
        Case("read: MetaImage numbered slice files s%d.raw (exit 0)", base("numbered.mhd"),
             both(f("numbered.mhd", mha_bytes(sh, data_file="s%d.raw", local_data=b"")), slice_files),
             code=0, allow_new=("peaks.nrrd",)),
        Case("read: MetaImage LIST with a short slice file", base("shortlist.mhd"),
             both(f("shortlist.mhd", mha_bytes(sh, data_file="LIST", local_data=b"s1.raw\nshort.raw\n")), slice_files,
                  f("short.raw", sh[1].astype("<f4").tobytes()[:-4])),
             names="shortlist.mhd", says=r"slice file 2 of 2, short.raw: truncated"),
        Case("read: MetaImage LIST naming fewer files than slices", base("fewlist.mhd"),
             both(f("fewlist.mhd", mha_bytes(sh, data_file="LIST", local_data=b"s1.raw\n")), slice_files),
             names="fewlist.mhd", says=r"1 file names for the 2 slice files"),
        Case("read: MetaImage numbered files 'NAME MIN MAX' (MetaIO divides by zero on it)", base("minmax.mhd"),
             both(f("minmax.mhd", mha_bytes(sh, data_file="s%d.raw 1 2", local_data=b"")), slice_files),
             names="minmax.mhd", says=r"give NAME, NAME MIN, or NAME MIN MAX STEP"),
        Case("read: MetaImage LIST of compressed slices, one cut short", base("zlist.mhd"),
             both(f("zlist.mhd", mha_bytes(sh, data_file="LIST", local_data=b"z1.raw\nz2.raw\n",
                                           lines=None).replace(b"CompressedData = False", b"CompressedData = True")),
                  z_slices), names="zlist.mhd", says=r"slice file 2 of 2, z2.raw: .*truncated|slice file 2 of 2, z2.raw: .*end"),
    ]
    # NRRD encodings the tools decode themselves (ITK 5.2's NrrdIO has no bzip2 and reads
    # ascii values through scanf): each checked whole, then read by the same code
    import bz2
    raw = sh.astype("<f4").tobytes()
    text = " ".join("%.9g" % v for v in sh.ravel()) + "\n"
    enc = lambda e, body: nrrd_encoded(sh, e, body)
    packed = bz2.compress(raw)
    corrupt_bz = bytearray(packed)
    corrupt_bz[len(packed) // 2] ^= 0x10
    mask_u8 = np.ones(sh.shape[:3], np.uint8)
    rows += [
        Case("read: NRRD ascii (exit 0: decoded by the tools)", base("a.nrrd"), f("a.nrrd", enc("ascii", text.encode())),
             code=0, allow_new=("peaks.nrrd",)),
        Case("read: NRRD hex (exit 0)", base("h.nrrd"), f("h.nrrd", enc("hex", raw.hex().encode() + b"\n")), code=0,
             allow_new=("peaks.nrrd",)),
        Case("read: NRRD bzip2 (exit 0)", base("b.nrrd"), f("b.nrrd", enc("bzip2", packed)), code=0,
             allow_new=("peaks.nrrd",), needs_bzip2=True),
        Case("read: NRRD ascii with a value that is no number", base("nonum.nrrd"),
             f("nonum.nrrd", enc("ascii", text.replace(text.split()[7], "1.2.3", 1).encode())), names="nonum.nrrd",
             says=r"value 8 of 270, '1\.2\.3' at byte \d+, is not a finite float"),
        Case("read: NRRD ascii one value short", base("few.nrrd"),
             f("few.nrrd", enc("ascii", " ".join(text.split()[:-1]).encode())), names="few.nrrd",
             says=r"truncated: NRRD ascii data of 269 values, the header claims 270"),
        Case("read: NRRD ascii with text after the values", base("more.nrrd"),
             f("more.nrrd", enc("ascii", (text + "end\n").encode())), names="more.nrrd",
             says=r"more values than the header's 270"),
        Case("--mask: NRRD ascii uchar holding 300", base("sh.nrrd") + ["--mask", "m300.nrrd"],
             both(g, f("m300.nrrd", ("NRRD0004\ntype: uchar\ndimension: 3\nsizes: 3 3 2\nencoding: ascii\n\n%s\n"
                                     % " ".join(["1"] * 17 + ["300"])).encode())), names="m300.nrrd",
             says=r"'300' at byte \d+, is not a whole number in the range of the type uchar"),
        Case("read: NRRD hex with a character that is no hex digit", base("badhex.nrrd"),
             f("badhex.nrrd", enc("hex", raw.hex()[:100].encode() + b"zz" + raw.hex()[102:].encode())),
             names="badhex.nrrd", says=r"is 'z' \(0x7a\), not a hex digit"),
        Case("read: NRRD hex one digit short", base("odd.nrrd"), f("odd.nrrd", enc("hex", raw.hex()[:-1].encode())),
             names="odd.nrrd", says=r"truncated: NRRD hex data of 2159 hex digits, the header's 1080 bytes need 2160"),
        Case("read: NRRD bzip2 cut short", base("cutbz.nrrd"), f("cutbz.nrrd", enc("bzip2", packed[:-10])),
             names="cutbz.nrrd", says=r"truncated: the bzip2 data end before their stream does", needs_bzip2=True),
        Case("read: NRRD bzip2 followed by junk", base("tailbz.nrrd"), f("tailbz.nrrd", enc("bz2", packed + b"junk")),
             names="tailbz.nrrd", says=r"4 bytes of something else follow the end of the bzip2 data", needs_bzip2=True),
        Case("read: NRRD bzip2 with a damaged byte", base("badbz.nrrd"), f("badbz.nrrd", enc("bzip2", bytes(corrupt_bz))),
             names="badbz.nrrd", says=r"bzip2 data after \d+ bytes: corrupt data", needs_bzip2=True),
    ]
    mif_gz = gz(mif_bytes(sh))
    rows += [
        Case("read: a valid NIfTI-2 (which ITK 5.2 does not read)",
             base("two.nii"), f("two.nii", nifti2_bytes(xyz)), names="two.nii", says=r"NIfTI-2 .*convert it to NIfTI-1"),
        Case("read: .mif.gz cut in its gzip trailer", base("cut.mif.gz"), f("cut.mif.gz", mif_gz[:-4]),
             names="cut.mif.gz", says=r"truncated: the compressed stream ends without its checksum"),
        Case("read: .mif.gz followed by junk", base("tail.mif.gz"), f("tail.mif.gz", mif_gz + b"junk"),
             names="tail.mif.gz", says=r"follow the end of the compressed data"),
    ]
    mask = np.ones(sh.shape[:3], np.uint8)
    geo = "space: left-posterior-superior\nspace directions: (1,0,0) (0,1,0) (0,0,1)\nspace origin: (0,0,0)\n"

    def grid_mask(name, edit):
        def make(p):
            head = ("NRRD0004\ntype: uchar\ndimension: 3\nsizes: %d %d %d\nencoding: raw\n%s\n"
                    % (mask.shape[2], mask.shape[1], mask.shape[0], edit(geo)))
            write(p, head.encode() + mask.tobytes())
        return files((name, make))

    def both_grids(folder, r):
        msg = first_message(r.stderr, r.code)
        return None if "sh.nrrd: size" in msg and "origin (" in msg else "the message does not show both grids"
    for what, edit in [("a shifted origin", lambda t: t.replace("origin: (0,0,0)", "origin: (5,0,0)")),
                       ("another orientation", lambda t: t.replace("(1,0,0) (0,1,0)", "(0,1,0) (1,0,0)")),
                       ("another spacing", lambda t: t.replace("(0,0,1)", "(0,0,2)"))]:
        name = "m_" + what.split()[-1] + ".nrrd"
        rows.append(Case("--mask: same size, %s" % what, base("sh.nrrd") + ["--mask", name],
                         both(g, grid_mask(name, edit)), names=name, says=r"on another voxel grid than sh.nrrd",
                         check=both_grids))
    return rows


def completion_grid_cases(base, g, mask):
    """A completion command's --mask with the image's size on another grid (img.nrrd's
    geometry is NRRD's default: origin 0, spacing 1, axis-aligned)."""
    geo = "space: left-posterior-superior\nspace directions: (1,0,0) (0,1,0) (0,0,1)\nspace origin: (0,0,0)\n"
    rows = []
    for what, text in [("a shifted origin", geo.replace("origin: (0,0,0)", "origin: (3,0,0)")),
                       ("another orientation", geo.replace("(1,0,0) (0,1,0)", "(0,1,0) (1,0,0)")),
                       ("another spacing", geo.replace("(0,0,1)", "(0,0,2.5)"))]:
        name = "g_" + what.split()[-1] + ".nrrd"

        def make(p, text=text):
            head = ("NRRD0004\ntype: uchar\ndimension: 3\nsizes: %d %d %d\nencoding: raw\n%s\n"
                    % (mask.shape[2], mask.shape[1], mask.shape[0], text))
            write(p, head.encode() + mask.tobytes())
        rows.append(Case("--mask: same size, %s" % what, base("img.nrrd")[:3] + ["--mask", name],
                         both(g, files((name, make))), names=name, says=r"on another voxel grid than img.nrrd"))
    return rows


# ---- tk-track: the FOD, its masks and seeds, every flag, every output format -------------

TRACK_FORMATS = (".tck", ".trk", ".trx", ".vtp", ".vtk")


def track_inputs():
    """A 6x6x6 FOD of 2 mm voxels (lmax 4, a positive first coefficient everywhere, so that
    every seed tracks a little) as NIfTI (x, y, z, coefficient), world = 2 * (i, j, k) mm;
    the setup writing it with an all-ones seed mask; and the FOD's (x, y, z, c) array."""
    sh = (rng.standard_normal((6, 6, 6, 15)) * 0.3).astype(np.float32)
    sh[..., 0] = 1 + np.abs(sh[..., 0])
    aff = np.diag([2.0, 2.0, 2.0, 1.0])
    g = files(("fod.nii", nifti_maker(sh, aff)), ("seed.nii", nifti_maker(np.ones((6, 6, 6), np.uint8), aff, 2)))
    return sh, aff, g


def nifti_maker(array, affine, datatype=16, compress=False):
    data = lambda: nifti1_bytes(array, affine, datatype)
    return (lambda p: write(p, gz(data()))) if compress else (lambda p: write(p, data()))


def text_file(text):
    return lambda p: write(p, text.encode())


def track_cases():
    sh, aff, g = track_inputs()
    base = lambda inp="fod.nii", out="out.tck": [inp, out, "--seed-mask", "seed.nii", "--quiet"]
    seeds = lambda f: ["fod.nii", "out.tck", "--seeds-file", f, "--quiet"]
    more = lambda *makers: both(g, files(*makers))
    ones = np.ones((6, 6, 6), np.uint8)
    shifted = aff.copy()
    shifted[0, 3] = 10.0
    nan, inf = sh.copy(), sh.copy()
    nan[1, 2, 3, 4] = np.nan
    inf[4, 0, 5, 0] = np.inf
    rows = [Case("valid input (control, OUTPUT %s)" % e, base(out="out" + e), g, code=0, allow_new=("out" + e,))
            for e in TRACK_FORMATS]
    rows += [
        Case("--seeds-file of 'x y z' lines (control)", seeds("s.txt"), more(("s.txt", text_file("5 5 5\n6,4,5\n"))),
             code=0, allow_new=("out.tck",)),
        Case("--seeds-file written by tckgen -output_seeds (control)", seeds("s.txt"),
             more(("s.txt", text_file("# tckgen fod.mif t.tck -output_seeds s.txt\n#Track_index,Seed_index,Pos_x,"
                                      "Pos_y,Pos_z,\n0,0,5,5,5,\n1,3,6,4,5,\n"))), code=0, allow_new=("out.tck",)),
        # the FOD
        Case("FOD: missing file", base("missing.nii"), g, names="missing.nii", says=MISSING),
        Case("FOD: a directory", base("dir.nii"), more(("dir.nii", mkdir)), names="dir.nii", says=IS_DIR),
        Case("FOD: empty file", base("empty.nii"), more(("empty.nii", lambda p: write(p, b""))), names="empty.nii",
             says=r"empty"),
        Case("FOD: not an image (text)", base("text.nii"), more(("text.nii", text_file("1 2 3\n"))), names="text.nii",
             says=r"not a|format|unknown|recogni"),
        Case("FOD: truncated NIfTI", base("cut.nii"),
             more(("cut.nii", lambda p: write(p, nifti1_bytes(sh, aff)[:2000]))), names="cut.nii", says=TRUNCATED),
        Case("FOD: no SH volume (14 volumes)", base("k14.nii"), more(("k14.nii", nifti_maker(sh[..., :14], aff))),
             names="k14.nii", says=r"no even-degree SH size"),
        Case("FOD: a 3-D scalar image, no SH volume", base("scalar.nii"),
             more(("scalar.nii", nifti_maker(sh[..., 0], aff))), names="scalar.nii", says=r"expected a 4-D image"),
        Case("FOD: NaN coefficient (NIfTI)", base("nan.nii"), more(("nan.nii", nifti_maker(nan, aff))),
             names="nan.nii", says=r"non-finite coefficient \(nan\) at voxel \(1, 2, 3\), coefficient 4"),
        Case("FOD: NaN coefficient (NIfTI, gzip)", base("nan.nii.gz"),
             more(("nan.nii.gz", nifti_maker(nan, aff, compress=True))), names="nan.nii.gz",
             says=r"non-finite coefficient \(nan\) at voxel \(1, 2, 3\)"),
        Case("FOD: infinite coefficient (NIfTI)", base("inf.nii"), more(("inf.nii", nifti_maker(inf, aff))),
             names="inf.nii", says=r"non-finite coefficient \(inf\) at voxel \(4, 0, 5\), coefficient 0"),
        # ITK's NIfTI library alone would read fod.nii's (finite) voxels under fod.nii.gz's header:
        # the NaN refused proves fod.nii.gz's voxels were read
        Case("FOD: NaN in NAME.nii.gz lying beside a good NAME.nii (the .nii.gz is read)", base("fod.nii.gz"),
             more(("fod.nii.gz", nifti_maker(nan, aff, compress=True))), names="fod.nii.gz",
             says=r"non-finite coefficient \(nan\) at voxel \(1, 2, 3\)"),
        Case("FOD: NaN coefficient (NRRD)", ["nan.nrrd", "out.tck", "--seed-mask", "m.nrrd", "--quiet"],
             files(("nan.nrrd", lambda p: nrrd(p, nan.transpose(2, 1, 0, 3), kind_vector=True)),
                   ("m.nrrd", lambda p: nrrd(p, ones, pixel="uchar"))), names="nan.nrrd",
             says=r"non-finite coefficient \(nan\) at voxel \(1, 2, 3\)"),
        # masks and regions
        Case("--seed-mask: missing file", base()[:3] + ["nomask.nii"], g, names="nomask.nii", says=MISSING),
        Case("--seed-mask: empty (no voxel set)", base()[:3] + ["zero.nii"],
             more(("zero.nii", nifti_maker(ones * 0, aff, 2))), names="zero.nii", says=r"no voxel is non-zero"),
        Case("--seed-mask: another size", base()[:3] + ["small.nii"],
             more(("small.nii", nifti_maker(ones[:5], aff, 2))), names="small.nii", says=r"on another voxel grid"),
        Case("--seed-mask: same size, a shifted origin", base()[:3] + ["moved.nii"],
             more(("moved.nii", nifti_maker(ones, shifted, 2))), names="moved.nii", says=r"on another voxel grid"),
    ]
    for flag in ("--mask", "--include", "--exclude"):
        rows.append(Case("%s: another grid (size)" % flag, base() + [flag, "small.nii"],
                         more(("small.nii", nifti_maker(ones[:5], aff, 2))), names=flag + " small.nii",
                         says=r"on another voxel grid"))
        rows.append(Case("%s: missing file" % flag, base() + [flag, "none.nii"], g, names="none.nii", says=MISSING))
    # --seeds-file
    for what, name, text, says in [
            ("empty", "empty.txt", "", r"no seed points"),
            ("garbage", "junk.txt", "hello world\n", r"'hello' is no finite number"),
            ("a NaN", "nan.txt", "5 5 nan\n", r"'nan' is no finite number"),
            ("a number beyond double", "huge.txt", "1e400 5 5\n", r"'1e400' is no finite number"),
            ("4 numbers a line", "four.txt", "5 5 5 5\n", r"4 numbers"),
            ("two layouts", "mixed.txt", "5 5 5\n0,0,5,5,5,\n", r"one layout"),
            ("tckgen -output_seeds' header only", "header.txt",
             "# tckgen fod.mif t.tck -output_seeds header.txt\n#Track_index,Seed_index,Pos_x,Pos_y,Pos_z,\n",
             r"only comment lines"),
            ("every point outside the FOD", "far.txt", "500 500 500\n-40 5 5\n", r"none of its 2 points")]:
        rows.append(Case("--seeds-file: %s" % what, seeds(name), more((name, text_file(text))), names=name, says=says))
    rows += [
        Case("--seeds-file: missing file", seeds("none.txt"), g, names="none.txt", says=MISSING),
        Case("--seeds-file: a directory", seeds("sdir"), more(("sdir", mkdir)), names="sdir", says=IS_DIR),
        Case("--seeds-file: some points outside the FOD (exit 0, one warning)", seeds("part.txt")[:-1],
             more(("part.txt", text_file("5 5 5\n500 500 500\n"))), code=0, names="part.txt",
             says=r"1 of its 2 points lie outside", allow_new=("out.tck",)),
        Case("--seed-mask and --seeds-file", base() + ["--seeds-file", "s.txt"], more(("s.txt", text_file("5 5 5\n"))),
             code=2, names="--seeds-file", says=r"both given"),
        Case("no seed option", ["fod.nii", "out.tck", "--quiet"], g, code=2, names="--seed-mask", says=r"no seeds"),
        Case("--seeds with --seeds-file", seeds("s.txt") + ["--seeds", "3"], more(("s.txt", text_file("5 5 5\n"))),
             code=2, names="--seeds", says=r"drop --seeds"),
    ]
    if os.geteuid() != 0:  # as root, permissions do not bite (not in the document)
        def unreadable(name, data):
            def make(p):
                write(p, data(p) if callable(data) else data)
                os.chmod(p, 0)
            return make
        rows += [
            Case("FOD: unreadable (mode 0000)", base("locked.nii"),
                 more(("locked.nii", unreadable("locked.nii", nifti1_bytes(sh, aff)))), names="locked.nii",
                 says=r"permission denied"),
            Case("--seed-mask: unreadable (mode 0000)", base()[:3] + ["locked.nii"],
                 more(("locked.nii", unreadable("locked.nii", nifti1_bytes(ones, aff, 2)))), names="locked.nii",
                 says=r"permission denied"),
            Case("--seeds-file: unreadable (mode 0000)", seeds("locked.txt"),
                 more(("locked.txt", unreadable("locked.txt", b"5 5 5\n"))), names="locked.txt",
                 says=r"permission denied")]
    # every numeric flag: negative, zero, NaN, huge, trailing junk
    zero_ok = {"--step", "--angle", "--cutoff", "--min-length", "--max-length", "--select", "--threads", "--seed"}
    for flag in ("--step", "--angle", "--cutoff", "--min-length", "--max-length", "--select", "--seeds", "--threads",
                 "--seed"):
        for value in ("-1", "0", "nan", "1e300", "1x"):
            if value == "0" and flag in zero_ok:
                rows.append(Case("%s 0 (the default, exit 0)" % flag, base() + [flag, value], g, code=0,
                                 allow_new=("out.tck",)))
            else:
                rows.append(Case("%s %s" % (flag, value), base() + [flag, value], g, code=2, names=flag,
                                 says=r"expects"))
    rows += [
        Case("--seed beyond 64 bits", base() + ["--seed", "18446744073709551616"], g, code=2, names="--seed",
             says=r"expects"),
        Case("--step so small that a streamline takes 2e8 steps", base() + ["--step", "1e-6"], g, code=2,
             names="--step", says=r"steps a streamline"),
        Case("--max-length of 1e9 mm (5e9 steps)", base() + ["--max-length", "1e9"], g, code=2, names="--max-length",
             says=r"steps a streamline"),
        Case("--min-length above --max-length", base() + ["--min-length", "30", "--max-length", "20"], g, code=2,
             names="--min-length", says=r"exceeds the maximum"),
        Case("--min-length above the default maximum (100 voxels)", base() + ["--min-length", "300"], g, code=2,
             names="--min-length", says=r"exceeds the maximum \(200 mm\)"),
        Case("--algorithm unknown", base() + ["--algorithm", "ifod7"], g, code=2, names="--algorithm",
             says=r"expects|one of|unknown"),
        Case("--backend cuda without a GPU", base() + ["--backend", "cuda"], g, names="--backend cuda",
             says=r"no usable CUDA GPU", varies=True),
    ]
    for value in ("1,2", "0,0,0", "a,b,c", "nan,0,0", "1,0,0x"):
        rows.append(Case("--seed-direction %s" % value, base() + ["--seed-direction", value], g, code=2,
                         names="--seed-direction", says=r"give"))
    rows += flag_cases(base(), g, missing_value="--step")
    # the outputs: every format in a missing folder and in a read-only one
    for e in TRACK_FORMATS:
        rows += output_cases(lambda o: ["fod.nii", o, "--seed-mask", "seed.nii", "--quiet"], g, "OUTPUT " + e,
                             "out" + e, is_dir=e != ".tck", input_name="fod.nii" if e == ".tck" else None)
    rows += [
        Case("OUTPUT of an unknown format", base(out="out.xyz"), g, code=2, names="out.xyz",
             says=r"unknown streamline format"),
        Case("OUTPUT without an extension", base(out="out"), g, code=2, names="out", says=r"unknown streamline format"),
        Case("OUTPUT exists (no --force)", base(), more(("out.tck", text_file("an earlier run"))), code=2,
             names="out.tck", says=r"exists"),
    ]
    return rows


def track_write_cases():
    sh, aff, g = track_inputs()
    rows = [Case("write: OUTPUT %s on a full disk" % e, ["fod.nii", "out" + e, "--seed-mask", "seed.nii", "--seeds",
                                                           "20", "--quiet"], g, names="out" + e, says=FULL,
                 file_limit=4096) for e in TRACK_FORMATS]
    stale = ".tk-tmp-%d-Ab12Cd" % dead_pid()

    def with_stale(folder):
        g(folder)
        stale_temporary(folder)
    long_run = ["fod.nii", "out.trx", "--seed-mask", "seed.nii", "--seeds", "1000000", "--quiet"]
    rows += [
        Case("write: a temporary left by a run killed with kill -9 is removed (exit 0)",
             ["fod.nii", "out.tck", "--seed-mask", "seed.nii", "--quiet"], with_stale, code=0, allow_new=("out.tck",),
             removes=(stale,)),
        Case("write: SIGTERM during the run leaves no temporary", long_run, g, signal=signal.SIGTERM),
        Case("write: SIGINT during the run leaves no temporary", long_run, g, signal=signal.SIGINT),
    ]
    return rows


# ---- tk-fixels: the FOD, its mask, the segmentation flags, the fixel directory -----------

def fixels_inputs():
    """A 4x3x3 FOD of 2 mm voxels (lmax 4, random lobes over a positive first coefficient:
    every voxel has fixels) as NRRD (z, y, x, coefficient) and NIfTI (x, y, z, coefficient)."""
    sh = (rng.standard_normal((3, 3, 4, 15)) * 0.4).astype(np.float32)
    sh[..., 0] = 1 + np.abs(sh[..., 0])
    g = files(("fod.nrrd", lambda p: nrrd(p, sh, kind_vector=True)))
    return sh, g


def fixel_dir_check(count_warning=None):
    """A check that FIXEL_DIR 'fx' holds index and directions (and, where given, that the
    warning counts count_warning voxels)."""
    def check(folder, r):
        names = sorted(os.listdir(os.path.join(folder, "fx")))
        if names[:2] != ["directions.mif", "index.mif"]:
            return "fx/ holds %s, not index.mif and directions.mif" % names
        if count_warning and "%d voxels" % count_warning not in r.stderr:
            return "expected the warning to count %d voxels" % count_warning
        return None
    return check


def fixels_cases():
    sh, g = fixels_inputs()
    base = lambda inp="fod.nrrd", out="fx": [inp, out, "--quiet"]
    more = lambda *makers: both(g, files(*makers))
    xyz = sh.transpose(2, 1, 0, 3)
    aff = np.diag([2.0, 2.0, 2.0, 1.0])
    nan, inf = sh.copy(), sh.copy()
    nan[1, 1, 2, 3] = np.nan
    inf[2, 0, 1, 0] = np.inf
    zero = np.zeros_like(sh)
    shifted = aff.copy()
    shifted[0, 3] = 6.0
    ok = dict(code=0, allow_new=("fx",), check=fixel_dir_check())
    rows = [
        Case("valid input (control)", base(), g, **ok),
        Case("valid input, NIfTI with --nii and every metric (control)",
             ["fod.nii", "fx", "--nii", "--afd", "afd.nii", "--peak-amp", "amp.nii", "--disp", "disp.nii", "--quiet"],
             files(("fod.nii", nifti_maker(xyz, aff))), code=0, allow_new=("fx",)),
        Case(".mif: valid input (control)", base("fod.mif"), files(("fod.mif", lambda p: mif(p, sh))), **ok),
        # the FOD
        Case("FOD: missing file", base("missing.nii"), names="missing.nii", says=MISSING),
        Case("FOD: a directory", base("dir.nii"), files(("dir.nii", mkdir)), names="dir.nii", says=IS_DIR),
        Case("FOD: empty file", base("empty.nii"), files(("empty.nii", lambda p: write(p, b""))), names="empty.nii",
             says=r"empty"),
        Case("FOD: not an image (text)", base("text.nii"), files(("text.nii", text_file("1 2 3\n"))),
             names="text.nii", says=r"not a|format|unknown|recogni"),
        Case("FOD: garbage bytes named .mif", base("junk.mif"),
             files(("junk.mif", lambda p: write(p, bytes(rng.integers(0, 256, 4000, dtype=np.uint8))))),
             names="junk.mif", says=r"not a|format|unknown|recogni|malformed|header"),
        Case("FOD: truncated NIfTI", base("cut.nii"), files(("cut.nii", lambda p: write(p, nifti1_bytes(xyz, aff)[:900]))),
             names="cut.nii", says=TRUNCATED),
        Case("FOD: truncated NRRD", base("cut.nrrd"),
             files(("cut.nrrd", lambda p: nrrd(p, sh, kind_vector=True, data=sh.tobytes()[:300]))), names="cut.nrrd",
             says=TRUNCATED),
        Case("FOD: .nii.gz cut mid-stream", base("cut.nii.gz"),
             files(("cut.nii.gz", lambda p: write(p, gz(nifti1_bytes(xyz, aff))[:-100]))), names="cut.nii.gz",
             says=r"truncated"),
        Case("FOD: no SH volume count (14 volumes)", base("k14.nii"), files(("k14.nii", nifti_maker(xyz[..., :14], aff))),
             names="k14.nii", says=r"no even-degree SH size"),
        Case("FOD: one volume (a 3-D scalar image)", base("scalar.nii"), files(("scalar.nii", nifti_maker(xyz[..., 0], aff))),
             names="scalar.nii", says=r"no even-degree SH size|expected a 4-D image"),
        Case("FOD: header claiming 2^40 voxels", base("huge.nrrd"),
             files(("huge.nrrd", lambda p: nrrd_header_only(p, (15, 1 << 14, 1 << 13, 1 << 13),
                                                            kinds="vector domain domain domain"))),
             names="huge.nrrd", says=r"GiB|truncated: the header claims", varies=True),
        Case("FOD: a voxel with NaN (documented: no fixels there, one warning)", ["nan.nrrd", "fx"],
             files(("nan.nrrd", lambda p: nrrd(p, nan, kind_vector=True))), code=0, names="1 voxels",
             says=r"non-finite", allow_new=("fx",), check=fixel_dir_check(1)),
        Case("FOD: NIfTI, a voxel with Inf (documented: no fixels there, one warning)", ["inf.nii", "fx"],
             files(("inf.nii", nifti_maker(inf.transpose(2, 1, 0, 3), aff))), code=0, names="1 voxels",
             says=r"non-finite", allow_new=("fx",), check=fixel_dir_check(1)),
        Case("FOD: every voxel NaN", base("allnan.nrrd"),
             files(("allnan.nrrd", lambda p: nrrd(p, zero + np.nan, kind_vector=True))), names="allnan.nrrd",
             says=r"non-finite.*no fixels at all"),
        Case("FOD: all zero (no lobe anywhere)", base("zero.nrrd"),
             files(("zero.nrrd", lambda p: nrrd(p, zero, kind_vector=True))), names="zero.nrrd",
             says=r"no fixels at all"),
        # --mask
        Case("--mask: missing file", base() + ["--mask", "nomask.nrrd"], g, names="nomask.nrrd", says=MISSING),
        Case("--mask: another size", base() + ["--mask", "small.nrrd"],
             more(("small.nrrd", lambda p: nrrd(p, np.ones((3, 3, 3)), pixel="uchar"))), names="small.nrrd",
             says=r"size|another voxel grid"),
        Case("--mask: same size, a shifted origin", ["fod.nii", "fx", "--quiet", "--mask", "moved.nii"],
             files(("fod.nii", nifti_maker(xyz, aff)),
                   ("moved.nii", nifti_maker(np.ones(xyz.shape[:3], np.uint8), shifted, 2))),
             names="moved.nii", says=r"on another voxel grid"),
        Case("--mask: every voxel zero", base() + ["--mask", "none.nrrd"],
             more(("none.nrrd", lambda p: nrrd(p, np.zeros(sh.shape[:3]), pixel="uchar"))), names="--mask none.nrrd",
             says=r"no fixels at all"),
    ]
    # the segmentation flags: out of range, not a number, trailing junk
    for flag, values in (("--maxnum", ("-1", "0", "65", "1.5", "x")), ("--fmls-peak-value", ("-1", "nan", "inf", "1x")),
                         ("--fmls-integral", ("-0.5", "nan")), ("--fmls-lobe-merge-ratio", ("-0.1", "1.5", "nan")),
                         ("--threads", ("-1", "x"))):
        for value in values:
            rows.append(Case("%s %s" % (flag, value), base() + [flag, value], g, code=2, names=flag, says=r"expects"))
    rows += [
        Case("--basis unknown", base() + ["--basis", "mrtrix"], g, code=2, names="--basis", says=r"expects|one of"),
        Case("--directions of no set (2562)", base() + ["--directions", "2562"], g, code=2, names="--directions",
             says=r"expects|one of"),
        Case("--directions 5121 (exit 0: the denser set)", base() + ["--directions", "5121"], g, **ok),
        Case("--backend unknown", base() + ["--backend", "gpu"], g, code=2, names="--backend", says=r"expects|one of"),
        Case("--backend cuda without a GPU", base() + ["--backend", "cuda"], g, names="--backend cuda",
             says=r"no usable CUDA GPU", varies=True),
        Case("FOD and FIXEL_DIR missing", ["--quiet"], code=2, names="FIXEL_DIR", says=r"required"),
        Case("a third positional argument", base() + ["extra"], g, code=2, names="extra", says=r"once|unexpected"),
    ]
    rows += flag_cases(base(), g, missing_value="--afd")
    # the metric names: file names inside FIXEL_DIR, .mif or .nii, each once
    for flag in ("--afd", "--peak-amp", "--disp", "--lobes"):
        rows += [
            Case("%s as a path with a folder" % flag, base() + [flag, "sub/m.mif"], g, code=2, names=flag + " sub/m.mif",
                 says=r"file name inside FIXEL_DIR"),
            Case("%s as an absolute path" % flag, base() + [flag, "/tmp/m.mif"], g, code=2, names=flag + " /tmp/m.mif",
                 says=r"file name inside FIXEL_DIR"),
            Case("%s of another format (.txt)" % flag, base() + [flag, "m.txt"], g, code=2, names=flag + " m.txt",
                 says=r"ending in .mif or .nii"),
        ]
    rows += [
        Case("--afd named index.mif (the index's name)", base() + ["--afd", "index.mif"], g, code=2, names="index.mif",
             says=r"written twice"),
        Case("--afd and --disp with one name", base() + ["--afd", "m.mif", "--disp", "m.mif"], g, code=2,
             names="m.mif", says=r"written twice"),
        Case("--lobes named directions.mif (the directions' name)", base() + ["--lobes", "directions.mif"], g, code=2,
             names="directions.mif", says=r"written twice"),
        Case("--count-map of an unknown format", base() + ["--count-map", "count.xyz"], g, code=2,
             names="count.xyz", says=r"unknown output format"),
        Case("--count-map in a missing folder", base() + ["--count-map", "nodir/count.nii"], g,
             names="nodir/count.nii", says=r"does not exist|no such file"),
        Case("--afd-map the same file as --count-map", base() + ["--count-map", "m.nii", "--afd-map", "m.nii"], g,
             code=2, names="m.nii", says=r"same file"),
        Case("--afd-map is FIXEL_DIR's index", base() + ["--afd-map", "fx/index.mif"], g, code=2,
             names="fx/index.mif", says=r"inside|same file|another output"),
        Case("--vtp without .vtp", base() + ["--vtp", "fixels.vtk"], g, code=2, names="--vtp", says=r"\.vtp"),
    ]
    # FIXEL_DIR
    rows += output_cases(lambda o: ["fod.nrrd", o, "--quiet"], g, "FIXEL_DIR", "fx", is_dir=True,
                         input_name="fod.nrrd", input_code=1)
    rows += [
        Case("FIXEL_DIR exists, a fixel directory (no --force)", base(),
             more(("fx", mkdir), ("fx/index.mif", text_file("an earlier run"))), code=2, names="fx",
             says=r"exists already.*--force"),
        Case("FIXEL_DIR exists, a folder of other files (no --force)", base(),
             more(("fx", mkdir), ("fx/notes.txt", text_file("a user's notes"))), code=2, names="fx",
             says=r"exists already.*--force"),
        Case("FIXEL_DIR is a file", base(out="fx.mif"), more(("fx.mif", text_file("a file"))),
             names="fx.mif", says=r"not a directory|is a file|exists"),
        Case("FIXEL_DIR is a file (--force)", base(out="fx.mif") + ["--force"], more(("fx.mif", text_file("a file"))),
             names="fx.mif", says=r"not a directory|is a file"),
        Case("FIXEL_DIR empty (exit 0: filled)", base(), more(("fx", mkdir)), **ok),
    ]
    if os.geteuid() != 0:  # as root, permissions do not bite (not in the document)
        def unreadable(data):
            def make(p):
                write(p, data)
                os.chmod(p, 0)
            return make
        rows += [
            Case("FOD: unreadable (mode 0000)", base("locked.nii"),
                 files(("locked.nii", unreadable(nifti1_bytes(xyz, aff)))), names="locked.nii", says=r"permission denied"),
            Case("--mask: unreadable (mode 0000)", ["fod.nii", "fx", "--quiet", "--mask", "locked.nii"],
                 files(("fod.nii", nifti_maker(xyz, aff)),
                       ("locked.nii", unreadable(nifti1_bytes(np.ones(xyz.shape[:3], np.uint8), aff, 2)))),
                 names="locked.nii", says=r"permission denied")]
    return rows


def fixels_write_cases():
    sh, g = fixels_inputs()
    big = (rng.standard_normal((40, 40, 40, 45)) * 0.3).astype(np.float32)
    big[..., 0] = 1 + np.abs(big[..., 0])
    gbig = files(("big.nrrd", lambda p: nrrd(p, big, kind_vector=True)))
    stale = ".tk-tmp-%d-Ab12Cd" % dead_pid()

    def with_stale(folder):
        g(folder)
        stale_temporary(folder)

    def earlier(folder):
        g(folder)
        os.mkdir(os.path.join(folder, "fx"))
        write(os.path.join(folder, "fx", "index.mif"), b"the index of an earlier run")
        write(os.path.join(folder, "fx", "notes.txt"), b"a user's notes")
        write(os.path.join(folder, "count.nii"), b"the count map of an earlier run")

    def kept(folder, r):
        names = sorted(os.listdir(os.path.join(folder, "fx")))
        if names != ["afd.mif", "directions.mif", "index.mif", "notes.txt"]:
            return "fx/ holds %s, not the new fixels and the user's notes" % names
        return None
    long_run = ["big.nrrd", "fx", "--fmls-no-thresholds", "--threads", "1", "--quiet"]
    return [
        Case("write: FIXEL_DIR on a full disk", ["fod.nrrd", "fx", "--afd", "afd.mif", "--quiet"], g,
             names="fx/", says=FULL, file_limit=1024),
        Case("write: --force replaces a fixel directory, keeping a user's file (exit 0)",
             ["fod.nrrd", "fx", "--afd", "afd.mif", "--quiet", "--force"], earlier, code=0, may_change=("fx/index.mif",),
             allow_new=("fx/afd.mif", "fx/directions.mif"), check=kept),
        Case("write: --count-map failing to go in place after FIXEL_DIR did puts the earlier FIXEL_DIR back",
             ["fod.nrrd", "fx", "--count-map", "count.nii", "--quiet", "--force"], earlier, names="count.nii",
             says=UNDONE, fault="count.nii"),
        Case("write: a temporary left by a run killed with kill -9 is removed (exit 0)", ["fod.nrrd", "fx", "--quiet"],
             with_stale, code=0, allow_new=("fx",), removes=(stale,)),
        Case("write: SIGTERM during the run leaves no temporary", long_run, gbig, signal=signal.SIGTERM),
        Case("write: SIGINT during the run leaves no temporary", long_run, gbig, signal=signal.SIGINT),
    ]


def bench_cases():
    sh = rng.standard_normal((10, 15)).astype(np.float32)
    g = files(("sh.npy", lambda p: save(p, sh)))
    fib = lambda inp: ["fibers", "--voxels", "20", "--accuracy-voxels", "5", "--repeat", "1", "--sh2peaks", "off",
                       "--backends", "cpu", "--input", inp]
    eig = ["eig", "--matrices", "20", "--sizes", "3", "--backends", "cpu"]
    rows = [Case("valid command (control)", eig + ["--json", "r.json"], code=0, allow_new=("r.json",))]
    rows += [
        Case("unknown suite", ["frobnicate"], code=2, names="frobnicate", says=r"unknown suite"),
        Case("unknown flag", eig + ["--frobnicate"], code=2, names="--frobnicate", says=r"unknown"),
        Case("flag without its value", eig + ["--json"], code=2, names="--json", says=r"value"),
        Case("flag with a value out of range", ["eig", "--matrices", "0"], code=2, names="--matrices",
             says=r"expects"),
        Case("--backends with an unknown backend", ["eig", "--backends", "cpu,gpu"], code=2, names="gpu",
             says=r"expects"),
        Case("tucker --init spectral without --to-accuracy", ["tucker", "--init", "spectral"], code=2,
             names="--init spectral", says=r"without --to-accuracy"),
        Case("tucker --deflate with --init random", ["tucker", "--to-accuracy", "--init", "random", "--deflate", "2"],
             code=2, names="--deflate", says=r"with --init random"),
        Case("tucker --round-iters without --to-accuracy", ["tucker", "--round-iters", "5"], code=2,
             names="--round-iters", says=r"without --to-accuracy"),
    ]
    rows += output_cases(lambda o: eig + ["--json", o], None, "--json", "r.json")
    fibers_rows = npy_input_cases("fibers --input: ", fib, "sh.npy", sh, sh.astype(np.int32), sh[:, :14],
                                  (HUGE // 15, 15), "<f4")
    rows += [r for r in fibers_rows if not re.search(r"NaN|Inf", r.name)]
    rows += [Case("fibers --input: NaN", fib("nan.npy"),
                  files(("nan.npy", lambda p: save(p, np.where(np.arange(sh.size).reshape(sh.shape) == 20, np.nan, sh)))),
                  names="nan.npy", says=NOT_FINITE)]
    return rows


# ---- writing: outputs a user can trust -------------------------------------------------------
# Each row below failed before the outputs went through one output set (tk_output_set.h):
# full disks that still renamed a short file and exited 0, outputs that overwrote inputs or
# one another, model folders emptied through a link or stripped of a user's files, one
# output of a call left in place after another failed, temporaries left by killed runs and
# by SIGTERM, and unclear or missing messages.

FULL = r"only \d+ of \d+ bytes|too large|space|disk"


def dead_pid():
    """A process ID no process has: PIDs stay below pid_max."""
    with open("/proc/sys/kernel/pid_max") as f:
        return int(f.read())


def stale_temporary(folder):
    """What a run killed with kill -9 while saving left: a temporary folder with a part-written file."""
    t = os.path.join(folder, ".tk-tmp-%d-Ab12Cd" % dead_pid())
    os.mkdir(t)
    write(os.path.join(t, "xhat.npy"), b"\x93NUMPY" + b"\0" * 80000)
    return os.path.basename(t)


def model_check(folder, link=None):
    """After a run that replaced model/: a whole model there, and the link (if any) still a link."""
    m = os.path.join(folder, "model")
    if not os.path.isfile(os.path.join(m, "manifest.txt")) or not os.path.isfile(os.path.join(m, "A1.npy")):
        return "model/ no longer holds a model: %s" % sorted(os.listdir(m))
    if link and not os.path.islink(os.path.join(folder, link)):
        return "%s is no longer a link" % link
    return None


def fibers_write_cases():
    sh = rng.standard_normal((2, 3, 3, 15)).astype(np.float32)
    sh[..., 0] = 1 + np.abs(sh[..., 0])
    g = files(("sh.nrrd", lambda p: nrrd(p, sh, kind_vector=True)))
    big = rng.standard_normal((8, 8, 8, 15)).astype(np.float32)
    big[..., 0] = 1 + np.abs(big[..., 0])
    one = np.zeros((8, 8, 8), np.uint8)
    one[4, 4, 4] = 1
    gb = files(("big.nrrd", lambda p: nrrd(p, big, kind_vector=True)), ("m.nrrd", lambda p: nrrd(p, one, pixel="uchar")),
               ("peaks.nii.gz", lambda p: write(p, b"the peaks of an earlier run")))
    return [
        Case("write: OUTPUT_PEAKS .mha on a full disk", ["sh.nrrd", "peaks.mha", "--quiet"], g, names="peaks.mha",
             says=FULL, file_limit=512),
        Case("write: OUTPUT_PEAKS .mhd on a full disk (its data file peaks.raw)", ["sh.nrrd", "peaks.mhd", "--quiet"], g,
             names="peaks.raw", says=FULL, file_limit=512),
        Case("write: a failed --amplitudes keeps the earlier OUTPUT_PEAKS", ["big.nrrd", "peaks.nii.gz", "--mask",
                                                                            "m.nrrd", "--amplitudes", "amp.mha",
                                                                            "--quiet", "--force"], gb,
             names="amp.mha", says=FULL, file_limit=4096),
        Case("write: --amplitudes failing to go in place after OUTPUT_PEAKS did puts the earlier OUTPUT_PEAKS back",
             ["big.nrrd", "peaks.nii.gz", "--mask", "m.nrrd", "--amplitudes", "amp.mha", "--quiet", "--force"], gb,
             names="amp.mha", says=UNDONE, fault="amp.mha"),
        Case("write: the header peaks.mhd failing to go in place after its data file puts the earlier peaks.raw back",
             ["sh.nrrd", "peaks.mhd", "--quiet", "--force"],
             both(g, files(("peaks.mhd", lambda p: write(p, b"ElementDataFile = peaks.raw\n")),
                           ("peaks.raw", lambda p: write(p, b"the data of an earlier run")))),
             names="peaks.mhd", says=UNDONE, fault="peaks.mhd"),
    ]


def tucker_predict_write_cases(exe):
    q_rows = [(i % 12 + 1, i % 10 + 1, i % 8 + 1) for i in range(20)]
    g = both(lambda folder: synth_model(folder, exe), files(("q.tns", lambda p: tns(p, q_rows))))

    def crlf(folder):
        g(folder)
        m = os.path.join(folder, "model", "manifest.txt")
        write(m, open(m, "rb").read().replace(b"\n", b"\r\n"))

    def link(folder):
        g(folder)
        os.symlink("model", os.path.join(folder, "lnk"))
    return [
        Case("write: OUT.tns is a file of the model (model/A1.npy)", ["predict", "model", "q.tns", "model/A1.npy"], g,
             code=2, names="model/A1.npy", says=r"inside the input folder"),
        Case("write: OUT.tns in the model through a link (lnk/A1.npy)", ["predict", "model", "q.tns", "lnk/A1.npy"],
             link, code=2, names="lnk/A1.npy", says=r"inside the input folder"),
        Case("model: manifest.txt with CRLF line ends (exit 0: read as written)", ["predict", "model", "q.tns",
                                                                                    "p.tns"], crlf, code=0,
             allow_new=("p.tns",)),
    ]


def tucker_train_write_cases(exe):
    rows_ok = small_tns_rows()
    base = ["train", "s.tns", "--out", "model", "--iters", "2", "--rank-j", "4", "--rank-r", "4", "--quiet"]

    def checkpoint(iteration, key=b"iteration"):
        def setup(folder):
            tns(os.path.join(folder, "s.tns"), rows_ok)
            subprocess.run([exe] + base, cwd=folder, check=True, stdout=subprocess.DEVNULL)
            m = os.path.join(folder, "model", "manifest.txt")
            text = re.sub(key + rb" = \d+", key + b" = " + iteration, open(m, "rb").read())
            write(m, text)
        return setup
    return [
        Case("--resume from a checkpoint with iteration -5", base + ["--resume"], checkpoint(b"-5"),
             names="manifest.txt", says=r"iteration '-5'", allow_new=("s.tns.tkc",)),
        Case("--resume from a checkpoint with deflate 'many'", base + ["--resume"], checkpoint(b"many", b"deflate"),
             names="manifest.txt", says=r"deflate 'many' is not a whole number", allow_new=("s.tns.tkc",)),
        Case("--resume from a checkpoint with round_iters 0", base + ["--resume"], checkpoint(b"0", b"round_iters"),
             names="manifest.txt", says=r"round_iters '0' is not a whole number from 1", allow_new=("s.tns.tkc",)),
        Case("write: an existing model without --force or --resume (kept)", base, checkpoint(b"2"), code=2,
             names="model", says=r"exists already.*--force", allow_new=("s.tns.tkc",)),
    ]


def tucker_synth_write_cases(exe):
    base = ["synth", "--shape", "12,10,8", "--nnz", "100", "--rank-j", "4", "--rank-r", "4"]
    model_files = tuple("model/%s%d.npy" % (m, k) for m in "AB" for k in (1, 2, 3)) + ("model/manifest.txt",)

    def model(extra=None):
        def setup(folder):
            synth_model(folder, exe)
            if extra:
                extra(folder)
        return setup
    return [
        Case("write: --truth through a link to a model folder (exit 0: the folder it names is replaced)",
             base + ["--force", "--truth", "lnk", "s.tns"], model(lambda f: os.symlink("model", os.path.join(f, "lnk"))), code=0,
             allow_new=("s.tns",), may_change=model_files, check=lambda f, r: model_check(f, "lnk")),
        Case("write: --truth keeps a user's file in the model folder (exit 0)", base + ["--force", "--truth", "model",
                                                                                            "s.tns"],
             model(lambda f: write(os.path.join(f, "model", "notes.txt"), b"my notes\n")), code=0,
             allow_new=("s.tns",), may_change=model_files, check=lambda f, r: model_check(f)),
        Case("write: a full disk at OUT.tns keeps the earlier --truth model", base + ["--seed", "5", "--force", "--truth",
                                                                                     "model", "s.tns"],
             model(), names="s.tns", says=FULL, file_limit=1500),
        Case("write: the --truth model failing to swap in after OUT.tns went in place puts the earlier OUT.tns back",
             base + ["--seed", "5", "--force", "--truth", "model", "s.tns"],
             model(lambda f: (write(os.path.join(f, "model", "notes.txt"), b"my notes\n"),
                              write(os.path.join(f, "s.tns"), b"1 1 1 1.0\n"))),
             names="model", says=UNDONE, fault="model"),
    ]


def pltf_write_cases():
    good = rng.uniform(0, 3, (4, 5, 6))
    g = files(("x.npy", lambda p: save(p, good)))
    base = ["--model", "parafac", "--input", "x.npy", "--dims", "a=2", "--out", "fit", "--iters", "3", "--quiet"]

    def fit_input(folder):
        os.mkdir(os.path.join(folder, "fit"))
        save(os.path.join(folder, "fit", "xhat.npy"), good)

    def with_stale(folder):
        g(folder)
        stale_temporary(folder)

    def earlier_fit(folder):
        os.mkdir(os.path.join(folder, "fit"))
        for name in ("ia", "ja", "ka", "xhat"):
            write(os.path.join(folder, "fit", name + ".npy"), b"an earlier " + name.encode())
    stale = ".tk-tmp-%d-Ab12Cd" % dead_pid()
    long_run = ["--model", "parafac", "--input", "x.npy", "--dims", "a=2", "--out", "fit", "--iters", "100000000",
                "--print-every", "100000000", "--quiet"]
    return [
        Case("write: --input fit/xhat.npy with --out fit", ["--model", "parafac", "--input", "fit/xhat.npy", "--dims",
                                                            "a=2", "--out", "fit", "--iters", "3", "--quiet"],
             fit_input, code=2, names="fit/xhat.npy", says=r"is the input"),
        Case("write: --model naming one factor twice (ia.npy written twice)",
             ["--model", "ijk=ia,ja,ka,ia", "--input", "x.npy", "--dims", "a=2", "--out", "fit", "--iters", "3",
              "--quiet"], g, code=2, names="--model", says=r"repeats"),
        Case("write: a full disk at xhat.npy leaves no factor in --out", base, g, names="xhat.npy", says=FULL,
             file_limit=700),
        Case("write: xhat.npy failing to go in place after the factors did puts the earlier fit back", base + ["--force"],
             both(g, earlier_fit), names="xhat.npy", says=UNDONE, fault="xhat.npy"),
        Case("write: xhat.npy failing to go in place after the factors did leaves no --out folder", base, g,
             names="xhat.npy", says=UNDONE, fault="xhat.npy"),
        Case("write: a temporary left by a run killed with kill -9 is removed (exit 0)", base, with_stale, code=0,
             allow_new=("fit",), removes=(stale,)),
        Case("write: SIGTERM during the run leaves no temporary", long_run, g, signal=signal.SIGTERM),
        Case("write: SIGINT during the run leaves no temporary", long_run, g, signal=signal.SIGINT),
    ]


def bench_message_cases():
    return [
        Case("fibers: a phantom beyond memory (it exited 1 with no message)",
             ["fibers", "--inputs", "phantom", "--voxels", "100000000", "--lmax", "12", "--repeat", "1", "--sh2peaks",
              "off", "--tk-fibers", "off", "--backends", "cpu"], names="--voxels", says=r"out of memory",
             needs_memory_limit=True),
    ]


def eig_write_cases():
    good = rng.standard_normal((4, 3, 3))

    def linked(folder):
        save(os.path.join(folder, "m.npy"), good)
        write(os.path.join(folder, "vals.npy"), b"an earlier result")
        os.link(os.path.join(folder, "vals.npy"), os.path.join(folder, "v.npy"))
    def earlier(folder):
        save(os.path.join(folder, "m.npy"), good)
        write(os.path.join(folder, "vals.npy"), b"an earlier result")
    return [
        Case("write: --vectors a hard link to OUTPUT (one file, two outputs)", ["m.npy", "vals.npy", "--vectors",
                                                                                "v.npy"], linked, code=2,
             names="v.npy", says=r"same file"),
        Case("write: an existing OUTPUT without --force (kept: outputs are replaced only with --force)",
             ["m.npy", "vals.npy"], earlier, code=2, names="vals.npy", says=r"exists already.*--force"),
        Case("write: --vectors failing to go in place after OUTPUT did puts the earlier OUTPUT back",
             ["m.npy", "vals.npy", "--vectors", "v.npy", "--force"], earlier, names="v.npy", says=UNDONE, fault="v.npy"),
    ]


def tucker_complete_write_cases():
    img = image3()
    g = files(("img.nrrd", lambda p: nrrd(p, img)))
    base = ["--iters", "2", "--rank-j", "4", "--rank-r", "4", "--quiet"]

    def pair(folder, r):
        data = os.path.join(folder, "out.img")
        return None if os.path.getsize(data) == img.nbytes else "out.img holds %d bytes, not %d" % (
            os.path.getsize(data), img.nbytes)
    return [
        Case("write: OUT_IMAGE .hdr writes its data file out.img (exit 0)", ["complete", "img.nrrd", "out.hdr"] + base,
             g, code=0, allow_new=("out.hdr", "out.img"), check=pair),
    ]


def write_cases(tool, exe):
    """The rows above for tool (none for the others)."""
    makers = {"fibers": fibers_write_cases, "fixels": fixels_write_cases, "track": track_write_cases, "tucker-predict": lambda: tucker_predict_write_cases(exe),
              "tucker-train": lambda: tucker_train_write_cases(exe), "tucker-synth": lambda: tucker_synth_write_cases(exe),
              "pltf": pltf_write_cases, "bench": bench_message_cases,
              "tucker-complete": tucker_complete_write_cases, "eig": eig_write_cases}
    return makers[tool]() if tool in makers else []


# ---- running -----------------------------------------------------------------------------

def snapshot(folder):
    out = {}
    for root, dirs, names in os.walk(folder):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), folder) + "/"] = "dir"
        for n in names:
            p = os.path.join(root, n)
            try:
                with open(p, "rb") as f:
                    out[os.path.relpath(p, folder)] = hashlib.sha256(f.read()).hexdigest()
            except PermissionError:  # an unreadable input's row (not as root): its size and mode stand in
                st = os.stat(p)
                out[os.path.relpath(p, folder)] = "unreadable %d bytes, mode %o" % (st.st_size, st.st_mode)
    return out


def limit_memory():
    # A tool that believed an absurd header would ask for terabytes: let the allocation
    # fail (and be reported) instead of the machine's OOM killer picking a process.
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))


def limits(memory_limit, file_limit):
    """preexec_fn for a run: the address-space limit and, for a full disk, RLIMIT_FSIZE with
    SIGXFSZ ignored (so write(2) fails with EFBIG, as on a full disk, instead of killing)."""
    if not memory_limit and file_limit is None:
        return None

    def preexec():
        if memory_limit:
            limit_memory()
        if file_limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
    return preexec


def temporaries(folder):
    return [os.path.join(root, n) for root, dirs, names in os.walk(folder) for n in dirs + names
            if n.startswith(".tk-tmp-") or ".tmp" in n]


def run_until_signal(exe, case, folder, env, preexec):
    """Start the run, wait (up to 20 s) until its first temporary exists, send case.signal,
    and collect it.  Returns (Result, problem or None)."""
    p = subprocess.Popen([exe] + case.args, cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, preexec_fn=preexec)
    late = None
    deadline = time.time() + 20
    while p.poll() is None and not temporaries(folder):
        if time.time() > deadline:
            late = "no temporary within 20 s: its outputs were not registered before the work"
            break
        time.sleep(0.005)
    if p.poll() is None:
        p.send_signal(case.signal)
    else:
        late = late or "the run ended (exit %d) before the signal" % p.returncode
    out, err = p.communicate(timeout=300)
    return Result(p.returncode, out.decode(errors="replace"), err.decode(errors="replace")), late


class Result:
    def __init__(self, code, stdout, stderr):
        self.code, self.stdout, self.stderr = code, stdout, stderr


def first_message(stderr, code):
    lines = [l for l in stderr.splitlines() if l.strip()]
    if code != 0:
        errors = [l for l in lines if ": error: " in l]
        return errors[0] if errors else (lines[0] if lines else "")
    # exit 0: the documented warning, not the CPU-fallback notice (which depends on the machine)
    warnings = [l for l in lines if ": warning: " in l and "no usable CUDA GPU" not in l]
    return warnings[0] if warnings else ""


fault_lib = None  # --fault-lib: Testing/fault/fault_rename.c built as a library


def run_case(tool, exe, case, folder, memory_limit):
    os.makedirs(folder)
    if case.setup:
        case.setup(folder)
    before = snapshot(folder)
    env = dict(os.environ, LC_ALL="C")
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1"
    if case.fault:
        env["LD_PRELOAD"] = fault_lib
        env["TK_FAULT_RENAME"] = case.fault
        env["ASAN_OPTIONS"] += ":verify_asan_link_order=0"  # the preloaded library comes before ASan's
    problems = []
    if case.needs_memory_limit and not memory_limit:
        return Result(case.code, "", ""), "", []  # the case needs the 8 GiB limit (not under the sanitizers)
    if case.fault and not fault_lib:
        return Result(case.code, "", ""), "", []  # the case needs --fault-lib
    preexec = limits(memory_limit, case.file_limit)
    try:
        if case.signal:
            r, late = run_until_signal(exe, case, folder, env, preexec)
            if late:
                problems.append(late)
        else:
            p = subprocess.run([exe] + case.args, cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=300, env=env, preexec_fn=preexec,
                               restore_signals=case.file_limit is None)
            r = Result(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))
    except subprocess.TimeoutExpired:
        r = Result(None, "", "timed out after 300 s")
    msg = first_message(r.stderr, r.code or 0)
    if r.code is None:
        problems.append("timed out")
    elif case.signal and r.code != -case.signal:
        problems.append("exit %d, expected to end by signal %d" % (r.code, case.signal))
    elif r.code < 0 and not case.signal:
        problems.append("killed by signal %d" % -r.code)
    elif r.code != case.code and not case.signal:
        problems.append("exit code %d, expected %d" % (r.code, case.code))
    if (case.code != 0 or case.names) and not case.signal:
        if not msg:
            problems.append("no %s message on stderr" % ("error" if case.code else "warning"))
        else:
            if case.names and case.names not in msg:
                problems.append("the message does not name %r" % case.names)
            if case.says and not re.search(case.says, msg, re.I):
                problems.append("the message does not say what is wrong (/%s/)" % case.says)
            if case.needs_advice() and not says_what_to_do(msg):
                problems.append("the message does not end with what to do (WHAT_TO_DO)")
    after = snapshot(folder)
    for path, digest in before.items():
        if path in case.may_change and path in after:
            continue
        if any(path == g or path.startswith(g.rstrip("/") + "/") for g in case.removes):
            if path in after:
                problems.append("not removed: %s" % path)
            continue
        if after.get(path) != digest:
            problems.append("input %s %s" % (path, "was removed" if path not in after else "was changed"))
    allowed = tuple(case.allow_new)
    for path in after:
        if path not in before and not any(path == a or path.startswith(a + "/") or path == a + "/" for a in allowed):
            problems.append("left behind: %s" % path)
    if case.check and not problems:
        extra = case.check(folder, r)
        if extra:
            problems.append(extra)
    return r, msg, problems


def md_cell(text):
    return "`%s`" % text.replace("`", "'").replace("|", "\\|") if text else ""


def comparable(section):
    """A section without the messages of † rows (they name this machine's memory, or the
    system's reason, which differs between root and other users)."""
    return [l.rsplit(" | ", 1)[0] if " † | " in l else l for l in section.splitlines()]


def tool_section(tool, outcomes):
    lines = ["<!-- begin %s -->" % tool, "## %s" % TITLE[tool], "",
             "| case | command | exit | message |", "| --- | --- | ---: | --- |"]
    for case, r, msg in outcomes:
        exit_text = "signal" if r.code is not None and r.code < 0 else str(r.code)
        command = " ".join([EXE[tool]] + [a if a and " " not in a else "'%s'" % a for a in case.args])
        name = case.name.replace("|", "\\|") + (" ‡" if case.needs_advice() else "") + (" †" if case.varies else "")
        lines.append("| %s | %s | %s | %s |" % (name, md_cell(command), exit_text, md_cell(msg)))
    lines.append("<!-- end %s -->" % tool)
    return "\n".join(lines) + "\n"


DOC_HEAD = """# Bad input: what each tool does

Generated by `Testing/badinput/bad_input_matrix.py --write-doc` (CMake target `bad_input_doc`);
the CTests `tk_bad_input_<tool>` run the same cases and fail when this table is out of date.

Every case runs in a fresh folder (the command's relative paths are inside it). A row passes
when the tool exits with the code shown (1: bad data or I/O, 2: bad command line; never a
signal), prints the message shown (`TOOL: error: ...`: it names the file or flag and says what
is wrong), leaves its input files byte for byte unchanged and leaves no output or temporary
behind (a valid `.tns` input may gain its documented `.tns.tkc` cache). The `exit 0` rows are
controls (the same command with good input) and two documented per-item outcomes: `tk-eig`
marks a matrix holding NaN or Inf in `--status` and `tk-fibers` gives a voxel with non-finite
coefficients NaN peaks, each with one warning, as LAPACK-style batch tools and `sh2peaks` do,
so that one bad voxel does not stop a whole volume (NIfTI included: ITK's NIfTI library reads
a non-finite value as 0, and the tools put it back). `tk-track`, whose streamlines would end
silently at such a voxel, refuses it instead, naming the voxel; it warns once about seed
points outside the FOD and tracks the others.

The "read-only folder" rows write under `/proc`, where no one may create files, root
included. When the tests do not run as root they also try a folder of mode 0555 (those rows
are not in this table: as root, permissions do not bite). Rows marked † have a message that
depends on the machine (its memory, or the system's reason, which differs between root,
shown here, and other users); the check compares everything else in them. Runs have an
8 GiB address-space limit (not under the sanitizers), so a tool that believed an absurd
header would fail to allocate rather than wake the OOM killer; every absurd-size row below
is refused from the header or the flags, before any large allocation.

Rows marked ‡ end in a refusal (every row but those of exit 0 and a signal's), and their
messages end with what to do. The rule the tests apply (`WHAT_TO_DO` in the script; the CTest
`tk_bad_input_advice` checks this document by it): the message's last clause -- the text after
its last "; ", or after its last ": " where it has none -- starts with one of the verbs
%s (after "or " or "then " at most).

The rows named "write: ..." check the outputs themselves: a full disk (a file-size limit,
`RLIMIT_FSIZE`, with `SIGXFSZ` ignored, so that writes fail as on a full disk) must be an
error naming the file, with no output left and earlier files as they were; an output may not
be an input, a file inside an input model folder or another output of the same call; a model
folder reached through a link, or holding a file of the user's, is replaced with the link and
that file kept; a temporary folder left by a run killed with `kill -9` is removed by the next
run; a run sent SIGTERM or SIGINT (once its outputs' temporaries exist) ends by that
signal ("signal" in the exit column) and leaves nothing behind; and a run in which one output
fails to go in place after others of the same call did ("failing to go in place": that rename
made to fail with EIO by the test library `Testing/fault/fault_rename.c`, preloaded) puts every
earlier output back, so that each holds exactly its old content or is absent.
"""


def extra_readonly_cases(tool, rows):
    """As a user that permissions bind, the output rows again in a folder of mode 0555."""
    out = []
    for c in rows:
        if "read-only folder" not in c.name:
            continue
        args = [a.replace(RO_DIR + "/", "ro/") for a in c.args]

        def setup(folder, base=c.setup):
            if base:
                base(folder)
            os.mkdir(os.path.join(folder, "ro"), 0o555)
        out.append(Case(c.name.replace(RO_DIR, "mode 0555"), args, setup, code=c.code,
                        names=c.names.replace(RO_DIR + "/", "ro/"), says=r"permission|not writable|cannot"))
        out[-1].layer = c.layer
    return out


def check_advice(doc):
    """The rows of doc marked ‡ whose message does not end with what to do."""
    bad, rows = [], 0
    for line in open(doc, encoding="utf-8"):
        if not line.startswith("| "):
            continue
        cells = re.split(r"(?<!\\) \| ", line.rstrip("\n").strip("|").strip())
        if len(cells) != 4 or "‡" not in cells[0]:
            continue
        rows += 1
        message = cells[3].strip().strip("`").replace("\\|", "|")
        if not says_what_to_do(message):
            bad.append("%s: %s" % (cells[0], message))
    for b in bad:
        print("no what-to-do: " + b)
    print("%d rows marked \u2021, %d without what to do" % (rows, len(bad)))
    return 1 if bad or rows == 0 else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the folder of the built tools")
    ap.add_argument("--tool", action="append", choices=TOOLS, default=[])
    ap.add_argument("--all", action="store_true", help="every tool")
    ap.add_argument("--doc", help="Documentation/bad-input.md: checked against (or, with --write-doc, rewritten)")
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument("--no-memory-limit", action="store_true", help="for sanitizer builds (ASan reserves terabytes)")
    ap.add_argument("--no-bzip2", action="store_true", help="the tools were built without libbz2: its rows are not run")
    ap.add_argument("--fault-lib", help="libtk_fault_rename.so, for the rows that make a commit fail in the middle")
    ap.add_argument("--check-advice", action="store_true",
                    help="only check --doc: every row marked ‡ ends with what to do (WHAT_TO_DO); runs no tool")
    ap.add_argument("--scratch", help="keep the case folders here")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    if a.check_advice:
        return check_advice(a.doc)
    tools = TOOLS if a.all else a.tool
    if not tools:
        ap.error("give --tool or --all")
    global fault_lib
    fault_lib = os.path.abspath(a.fault_lib) if a.fault_lib else None
    scratch = a.scratch or tempfile.mkdtemp(prefix="tk_bad_input_")
    makers = {"teig": teig_cases, "eig": eig_cases, "tucker-train": tucker_train_cases,
              "tucker-predict": lambda: tucker_predict_cases(os.path.abspath(os.path.join(a.bin, "tk-tucker"))),
              "tucker-synth": tucker_synth_cases, "tucker-complete": tucker_complete_cases, "pltf": pltf_cases,
              "pltf-complete": pltf_complete_cases,
              "fibers": fibers_cases, "fixels": fixels_cases, "track": track_cases, "bench": bench_cases}
    sections, failures, total = {}, [], 0
    skipped = set()  # names of the cases not run here
    for tool in tools:
        exe = os.path.abspath(os.path.join(a.bin, EXE[tool]))
        if not os.access(exe, os.X_OK):
            print("%s: %s was not built" % (tool, exe))
            failures.append(tool)
            continue
        global rng
        rng = np.random.default_rng(7)  # each tool's files the same whichever tools run
        rows = makers[tool]() + layer("write", write_cases(tool, exe))
        if os.geteuid() != 0:
            rows += extra_readonly_cases(tool, rows)
        outcomes = []
        for n, case in enumerate(rows):
            folder = os.path.join(scratch, tool, "%02d" % n)
            if case.needs_bzip2 and a.no_bzip2:
                skipped.add(case.name)  # the build refuses bzip2 NRRD, saying so; its documented row is not compared
                continue
            r, msg, problems = run_case(tool, exe, case, folder, not a.no_memory_limit)
            total += 1
            if (case.needs_memory_limit and a.no_memory_limit) or (case.fault and not fault_lib):
                skipped.add(case.name)  # not run here: its documented row is not compared
            elif "mode 0555" not in case.name and "mode 0000" not in case.name:
                outcomes.append((case, r, msg))
            status = "ok  " if not problems else "FAIL"
            if problems or a.verbose:
                print("%s %s: %s\n     %s %s\n     exit %s; %s" % (status, TITLE[tool], case.name, EXE[tool],
                                                                   " ".join(case.args), r.code, msg))
                for p in problems:
                    print("     - " + p)
                if problems and r.stderr.strip():
                    print("     stderr: " + r.stderr.strip().replace("\n", "\n             "))
            if problems:
                failures.append("%s: %s" % (TITLE[tool], case.name))
        sections[tool] = tool_section(tool, outcomes)
    if not a.scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    doc_ok = True
    if a.doc and a.write_doc:
        if not fault_lib:
            print("--write-doc needs --fault-lib (the rows that make a commit fail in the middle)")
            return 1
        if set(tools) != set(TOOLS):
            # only these tools' sections, the others' as committed (no rebuild of every tool for
            # one tool's rows); a missing section goes in at its place in TOOLS' order
            committed = open(a.doc).read() if os.path.exists(a.doc) else ""
            old = {t: m.group(0) for t in TOOLS for m in
                   [re.search(r"<!-- begin %s -->\n.*?<!-- end %s -->\n" % (re.escape(t), re.escape(t)), committed,
                              re.S)] if m}
            missing = [t for t in TOOLS if t not in sections and t not in old]
            if missing:
                print("--write-doc without --all: %s has no section for %s; run --all" % (a.doc, ", ".join(missing)))
                return 1
            sections = dict(old, **sections)
        with open(a.doc, "w") as f:
            f.write(DOC_HEAD.replace("%s", ", ".join(WHAT_TO_DO)) + "".join("\n" + sections[t] for t in TOOLS))
        print("wrote %s" % a.doc)
    elif a.doc:
        committed = open(a.doc).read() if os.path.exists(a.doc) else ""
        for tool in sections:
            m = re.search(r"<!-- begin %s -->\n.*?<!-- end %s -->\n" % (re.escape(tool), re.escape(tool)), committed,
                          re.S)
            committed_rows = m.group(0) if m else ""
            if skipped:  # rows of cases this run could not make (no memory limit under sanitizers, no libbz2)
                committed_rows = "".join(line for line in committed_rows.splitlines(True)
                                         if not any(re.match(r"\| %s( ‡)?( †)? \| " % re.escape(name), line)
                                                    for name in skipped))
            if not m or comparable(committed_rows) != comparable(sections[tool]):
                doc_ok = False
                print("%s: the table in %s is out of date (regenerate: cmake --build BUILD --target bad_input_doc):"
                      % (TITLE[tool], a.doc))
                sys.stdout.writelines(difflib.unified_diff((m.group(0) if m else "").splitlines(True),
                                                           sections[tool].splitlines(True), "committed", "this run"))
    print("%d cases, %d failed%s" % (total, len(failures), "" if doc_ok else "; the document is out of date"))
    for f in failures:
        print("  failed: " + f)
    return 0 if not failures and doc_ok else 1


if __name__ == "__main__":
    sys.exit(main())
