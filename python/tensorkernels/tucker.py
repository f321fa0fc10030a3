"""Sparse FastTucker decomposition (the core of `tk-tucker`; `tk_tucker.h`).

Model.  An order-N sparse tensor X (N = 3..10) is approximated by factor matrices A(n)
(I_n x J) and core matrices B(n) (J x R):

    x^(i_1, ..., i_N) = sum_r prod_n (A(n)[i_n] @ B(n))[r]

i.e. numpy.einsum over the rows A(n)[i_n] and the B(n).  Training minimises
sum (x - x^)^2 + lambda_a sum |A(n)|^2 + lambda_b sum |B(n)|^2 over the observed entries: by
default each factor row moves to its exact minimiser with a ridge of lambda_a per entry of the
row (ALS-WR, `tk-tucker train`'s default), or by cuFasterTucker's per-entry SGD steps
(factor_update="sgd"); the cores by a mean-gradient step (lr_b; 0, the ALS default: kept).

Indices are 0-based here, as NumPy's (the .tns files are 1-based: :func:`read_tns` and
:func:`write_tns` convert, as `tk-tucker` does).  A sparse tensor is a :class:`Coo`: its
indices (nnz x N, uint32, entry-major) and values (nnz, float32), the arrays the core reads,
used in place.  A model directory (:func:`save_model`, :func:`load_model`) is the one
`tk-tucker train --out` writes and `tk-tucker predict` reads: A1.npy..AN.npy, B1.npy..BN.npy,
manifest.txt, replaced atomically at every save.
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tensorkernels as _core
from ._arrays import array, backend_code, output, resolve_gpus

__all__ = ["Coo", "Model", "Metrics", "read_tns", "read_queries", "write_tns", "synth", "split", "init_model",
           "spectral_start", "spectral_deflate", "start_choice", "train", "train_defaults", "predict",
           "predict_dense", "evaluate", "save_model", "load_model", "MAX_ORDER", "MIN_RANK", "MAX_RANK",
           "DEFAULT_ITERATIONS", "FACTOR_UPDATES", "SPECTRAL_BELOW"]

MAX_ORDER, MIN_RANK, MAX_RANK, DEFAULT_FIBER_THRESHOLD = (int(v) for v in _core.tucker_limits())
STORAGES = {"bcsf": 0, "coo": 1}
FACTOR_UPDATES = ("als", "sgd")
#: :func:`train`'s iterations by default, `tk-tucker train`'s (TK_TUCKER_DEFAULT_ITERATIONS)
DEFAULT_ITERATIONS = int(_core.tucker_train_defaults("als")["iterations"])
# auto's lines: (entries a column of the best-sampled unfolding, entries a row of the largest mode
# per unit of rank_j)
SPECTRAL_BELOW = tuple(float(v) for v in _core.tucker_spectral_below())


def train_defaults(factor_update: str = "als") -> Dict[str, float]:
    """The settings :func:`train` takes where not given, for a factor update ("als" or "sgd"):
    lr_a, lr_b, lambda_a, lambda_b, fiber_threshold, iterations, as `tk-tucker train
    --factor-update` takes them (read from the C library: tk_tucker_options_init and
    tk_tucker_options_init_sgd).  lr_a of "als" is unused (the row solves take no rate) but
    written to the manifest, as the tool writes it."""
    if factor_update not in FACTOR_UPDATES:
        raise ValueError(f"factor_update must be 'als' or 'sgd', not {factor_update!r}")
    return dict(_core.tucker_train_defaults(factor_update))


def _indices(name: str, indices, order: Optional[int] = None) -> np.ndarray:
    """uint32 (nnz, order) C-order indices as they are; int32 ones seen as uint32 (a view: same
    bytes) once none is negative; anything else refused, never converted."""
    if isinstance(indices, np.ndarray) and indices.dtype == np.int32:
        indices = array(name, indices, (np.int32,), min_ndim=2)
        if indices.size and int(indices.min()) < 0:
            raise ValueError(f"{name}: negative index {int(indices.min())}; indices are 0-based and >= 0")
        indices = indices.view(np.uint32)
    indices = array(name, indices, (np.uint32,), min_ndim=2)
    if indices.ndim != 2 or (order is not None and indices.shape[1] != order):
        want = f"(nnz, {order})" if order is not None else "(nnz, order)"
        raise ValueError(f"{name}: expected shape {want}, got {indices.shape}")
    return indices


class Coo:
    """A sparse tensor in coordinate form: `indices` (nnz, order) uint32 (0-based), `values`
    (nnz,) float32, `dims` (one size per mode).

    The arrays are used in place: Coo(indices, values) keeps the very arrays (int32 indices are
    viewed as uint32; other dtypes, Fortran order and strided views are refused with a
    TypeError/ValueError naming the conversion, never copied).  dims defaults to the largest
    index of each mode plus one.  The core's check runs at construction: every index inside
    dims and every value finite, else ValueError with the entry's number.
    """

    __slots__ = ("indices", "values", "dims")

    def __init__(self, indices, values, dims: Optional[Sequence[int]] = None):
        values = array("values", values, (np.float32,))
        if values.ndim != 1:
            raise ValueError(f"values: expected shape (nnz,), got {values.shape}")
        indices = _indices("indices", indices)
        if indices.shape[0] != values.shape[0]:
            raise ValueError(f"indices has {indices.shape[0]} entries but values {values.shape[0]}")
        order = indices.shape[1]
        if not 2 <= order <= MAX_ORDER:
            raise ValueError(f"indices: order {order} (columns) is outside 2..{MAX_ORDER}")
        if dims is None:
            if indices.shape[0] == 0:
                raise ValueError("dims: an empty tensor needs its sizes (dims=...)")
            dims = [int(v) + 1 for v in indices.max(axis=0)]
        dims = [int(d) for d in dims]
        if len(dims) != order or any(not 1 <= d < 2 ** 32 for d in dims):
            raise ValueError(f"dims: expected {order} sizes from 1 to 2^32-1, got {dims}")
        _core.tucker_coo_check(indices, values, dims, "coo")
        self.indices: np.ndarray = indices
        self.values: np.ndarray = values
        self.dims: Tuple[int, ...] = tuple(dims)

    @property
    def order(self) -> int:
        return len(self.dims)

    @property
    def nnz(self) -> int:
        return int(self.values.shape[0])

    def __len__(self) -> int:
        return self.nnz

    def __repr__(self) -> str:
        return f"Coo(order={self.order}, dims={self.dims}, nnz={self.nnz})"

    @classmethod
    def _from_core(cls, parts) -> "Coo":
        c = cls.__new__(cls)
        c.indices, c.values, c.dims = parts[0], parts[1], tuple(int(d) for d in parts[2])
        return c


@dataclass
class Metrics:
    """Errors of a model on the entries of a Coo (double accumulation)."""

    sse: float  #: sum of squared errors
    rmse: float
    mae: float
    loss: float  #: sse + lambda_a sum |A|^2 + lambda_b sum |B|^2
    count: int  #: entries


@dataclass
class Model:
    """A FastTucker model: a[n] float32 (I_n, J), b[n] float32 (J, R), C order.

    x^(i) = sum_r prod_n (a[n][i_n] @ b[n])[r].  `manifest` holds the model directory's
    manifest.txt lines ("key = value") of a loaded or trained model; `history` the per-iteration
    metrics of :func:`train`.
    """

    a: List[np.ndarray]
    b: List[np.ndarray]
    manifest: Dict[str, str] = field(default_factory=dict)
    history: List[dict] = field(default_factory=list)

    def __post_init__(self):
        if len(self.a) != len(self.b) or not 3 <= len(self.a) <= MAX_ORDER:
            raise ValueError(f"a model of order 3..{MAX_ORDER} has one A and one B per mode, got {len(self.a)} "
                             f"and {len(self.b)}")
        for n, (a, b) in enumerate(zip(self.a, self.b), 1):
            array(f"a[{n - 1}]", a, (np.float32,), min_ndim=2)
            array(f"b[{n - 1}]", b, (np.float32,), min_ndim=2)
            j, r = self.a[0].shape[1], self.b[0].shape[1]
            if a.ndim != 2 or b.ndim != 2 or a.shape[1] != j or b.shape != (j, r):
                raise ValueError(f"mode {n}: a[{n - 1}] {a.shape} and b[{n - 1}] {b.shape} are not (I, J) and (J, R) "
                                 f"with the first mode's J={j}, R={r}")
        if not (MIN_RANK <= self.rank_j <= MAX_RANK and MIN_RANK <= self.rank_r <= MAX_RANK):
            raise ValueError(f"ranks J={self.rank_j}, R={self.rank_r}: both must be {MIN_RANK}..{MAX_RANK}")

    @property
    def order(self) -> int:
        return len(self.a)

    @property
    def dims(self) -> Tuple[int, ...]:
        return tuple(int(a.shape[0]) for a in self.a)

    @property
    def rank_j(self) -> int:
        return int(self.a[0].shape[1])

    @property
    def rank_r(self) -> int:
        return int(self.b[0].shape[1])

    def predict(self, indices, out: Optional[np.ndarray] = None) -> np.ndarray:
        """:func:`predict` of this model."""
        return predict(self, indices, out=out)


def read_tns(path: Union[str, os.PathLike], order: int = 0, dims: Optional[Sequence[int]] = None,
             cache: bool = False) -> Coo:
    """A FROSTT .tns file ("i_1 ... i_N value" lines, 1-based, '#' comments) as a Coo (0-based).

    order: 0 takes it from the first entry.  dims: sizes at least the file's largest indices
    (default: those).  cache: use and keep the binary cache PATH.tkc beside the file, as
    `tk-tucker` does (rewritten when stale).  Errors name the file and line (ValueError), or
    the file for I/O (RuntimeError).
    """
    if cache and dims is not None:
        raise ValueError("dims: not with cache=True (the cache records the file's own sizes)")
    if dims is not None and order == 0:
        order = len(dims)
    return Coo._from_core(_core.tucker_tns_read(os.fspath(path), int(order),
                                                None if dims is None else [int(d) for d in dims], False, bool(cache)))


def read_queries(path: Union[str, os.PathLike], order: int) -> Coo:
    """A query file of `tk-tucker predict`: lines of N 1-based indices, with or without a value
    (values read as 0 where absent), as a Coo."""
    return Coo._from_core(_core.tucker_tns_read(os.fspath(path), int(order), None, True, False))


def write_tns(path: Union[str, os.PathLike], coo: Coo) -> None:
    """Writes coo as .tns text (1-based, 9 significant digits), atomically (a temporary renamed)."""
    _core.tucker_tns_write(os.fspath(path), coo.indices, coo.values, list(coo.dims))


def synth(shape: Sequence[int], nnz: int, *, rank_j: int = 32, rank_r: int = 32, noise: float = 0.1,
          popularity: float = 0.5, unique: bool = True, seed: int = 0, threads: int = 0,
          return_truth: bool = False) -> Union[Coo, Tuple[Coo, Model]]:
    """`tk-tucker synth`: nnz entries of a random FastTucker model of the given shape (3..10
    modes) plus Gaussian noise of standard deviation `noise`.  Index i of a mode is drawn with
    popularity ~ rank(i)^-popularity (like users and items of rating data); unique: no index
    tuple twice (at most half of the cells).  Deterministic for (arguments, seed), whatever
    `threads`.  return_truth: also the true model, as (coo, model).
    """
    dims = [int(d) for d in shape]
    if not 3 <= len(dims) <= MAX_ORDER or any(not 1 <= d < 2 ** 32 for d in dims):
        raise ValueError(f"shape: expected 3..{MAX_ORDER} sizes from 1 to 2^32-1, got {tuple(shape)}")
    if nnz < 1:
        raise ValueError(f"nnz must be >= 1, got {nnz}")
    coo, truth = _core.tucker_synth(dims, int(nnz), int(rank_j), int(rank_r), float(noise), float(popularity),
                                    bool(unique), int(seed) & (2 ** 64 - 1), int(threads), bool(return_truth))
    coo = Coo._from_core(coo)
    return (coo, Model(list(truth[0]), list(truth[1]), {"source": "tensorkernels.tucker.synth (true model)"})) \
        if return_truth else coo


def split(coo: Coo, test_fraction: float, seed: int = 0) -> Tuple[Coo, Coo]:
    """(train, test): each entry goes to test with probability test_fraction, decided by a hash
    of (seed, its position), as `tk-tucker train --test-fraction` splits.  Both keep coo's dims."""
    if not 0 <= test_fraction <= 1:
        raise ValueError(f"test_fraction must be from 0 to 1, got {test_fraction}")
    train, test = _core.tucker_split(coo.indices, coo.values, list(coo.dims), float(test_fraction),
                                     int(seed) & (2 ** 64 - 1))
    return Coo._from_core(train), Coo._from_core(test)


def _check_training(coo) -> None:
    """The training entries train and spectral_start take: a Coo of order 3.. with entries."""
    if not isinstance(coo, Coo):
        raise TypeError(f"coo: expected a tensorkernels.tucker.Coo, got {type(coo).__name__}")
    if coo.order < 3:
        raise ValueError(f"coo: FastTucker needs order 3..{MAX_ORDER}, got {coo.order}")
    if coo.nnz == 0:
        raise ValueError("coo: no training entries")


def _empty_model(dims: Sequence[int], rank_j: int, rank_r: int) -> Model:
    """A model of these sizes and ranks whose values the core fills (init_model, spectral_start)."""
    return Model([np.empty((d, rank_j), np.float32) for d in dims],
                 [np.empty((rank_j, rank_r), np.float32) for _ in dims])


def init_model(dims: Sequence[int], rank_j: int = 32, rank_r: int = 32, *, seed: int = 0,
               target_mean: float = 0.0) -> Model:
    """The random start `tk-tucker train` uses: target_mean > 0 (non-negative data such as
    ratings: their mean) gives entries in [0, s) with predictions of about that mean; otherwise
    entries in [-s, s) with predictions of RMS about 0.5."""
    dims = [int(d) for d in dims]
    model = _empty_model(dims, rank_j, rank_r)
    _core.tucker_model_init(model.a, model.b, model.rank_j, model.rank_r, int(seed) & (2 ** 64 - 1),
                            float(target_mean))
    return model


def spectral_start(coo: Coo, rank_j: int = 32, rank_r: int = 32, *, dims: Optional[Sequence[int]] = None,
                   seed: int = 0, threads: int = 0) -> Model:
    """The spectral start of `tk-tucker train --init spectral` (tk_tucker_spectral_start): for
    each mode the eigenvectors of the rank_j eigenvalues of largest magnitude of X(n) X(n)^T less
    its diagonal, by subspace iteration, scaled by sqrt(I_n); the cores by alternating least
    squares over coo's entries.  Pass it to :func:`train` as `init`: where a random start learns
    nothing (sparse tensors: few entries a column of the unfoldings) ALS learns the strong
    components from it; elsewhere it can be slower than the random start, the default
    (Documentation/benchmarks.md, "A spectral start").  dims: the model's sizes, at least coo's
    (default coo's; give the larger of train's and test's, as train does).  The same model for
    any `threads`; `seed` draws the iteration's and the cores' random starts."""
    _check_training(coo)
    dims = list(coo.dims) if dims is None else [int(d) for d in dims]
    if len(dims) != coo.order or any(d < c for d, c in zip(dims, coo.dims)):
        raise ValueError(f"dims: expected {coo.order} sizes at least coo's {tuple(coo.dims)}, got {tuple(dims)}")
    model = _empty_model(dims, rank_j, rank_r)
    _core.tucker_spectral_start(coo.indices, coo.values, list(coo.dims), model.a, model.b, model.rank_j, model.rank_r,
                                int(seed) & (2 ** 64 - 1), int(threads))
    return model


def spectral_deflate(coo: Coo, model: Model, *, keep_fraction: float = 0.03, seed: int = 0,
                     threads: int = 0) -> Tuple[Model, List[int]]:
    """One deflation round of `tk-tucker train --init spectral --deflate K`
    (tk_tucker_spectral_deflate) on a trained model, typically ALS's from :func:`spectral_start`:
    each mode keeps the directions of its C(n) = A(n) B(n) (columns weighted by the other modes'
    column norms) whose singular values are above keep_fraction of the largest, takes the rest
    of its rank_j columns from the leading eigenvectors of the residual's off-diagonal Gram
    (the weak components the first start's noise hid), and the cores are fitted again.  Train
    the result again (`train(coo, ..., init=deflated)`): on sparse planted tensors ALS from it
    reaches what ALS from the spectral start alone does not (Documentation/benchmarks.md,
    "Deflation").  Returns a new model (`model` is left as it is) and each mode's count of kept
    directions.  The same model for any `threads`; `seed` draws the iteration's and the cores'
    random starts (the tool passes its --seed)."""
    _check_training(coo)
    if not isinstance(model, Model):
        raise TypeError(f"model: expected a tensorkernels.tucker.Model, got {type(model).__name__}")
    if model.order != coo.order or any(d < c for d, c in zip(model.dims, coo.dims)):
        raise ValueError(f"model: sizes {model.dims} do not cover coo's {tuple(coo.dims)} (order {coo.order})")
    if not 0.0 <= keep_fraction < 1.0:
        raise ValueError(f"keep_fraction must be in [0, 1), got {keep_fraction}")
    out = Model([a.copy() for a in model.a], [b.copy() for b in model.b])
    kept = _core.tucker_spectral_deflate(coo.indices, coo.values, list(coo.dims), out.a, out.b, out.rank_j,
                                         out.rank_r, float(keep_fraction), int(seed) & (2 ** 64 - 1), int(threads))
    return out, [int(k) for k in kept]


def _query_indices(model: Model, indices) -> np.ndarray:
    idx = indices.indices if isinstance(indices, Coo) else indices
    idx = _indices("indices", idx, model.order)
    if idx.shape[0]:
        top = idx.max(axis=0)
        for n, (i, d) in enumerate(zip(top, model.dims)):
            if i >= d:
                raise ValueError(f"indices: mode {n + 1} has index {int(i)} (0-based), beyond the model's size {d}")
    return idx


def predict(model: Model, indices, *, out: Optional[np.ndarray] = None) -> np.ndarray:
    """The model's values at `indices` ((nnz, order) uint32 or int32, 0-based; or a Coo, whose
    values are ignored): float32 (nnz,), or written into `out`.  As `tk-tucker predict`."""
    idx = _query_indices(model, indices)
    res = output("out", out, (idx.shape[0],), np.float32)
    _core.tucker_predict(model.a, model.b, model.rank_j, model.rank_r, idx, res)
    return res


def predict_dense(model: Model, *, max_cells: int = 1 << 28) -> np.ndarray:
    """The model's value at every cell of its grid: float32 of shape model.dims (Fortran order:
    the core writes the first index fastest, as ITK's images and `tk-tucker complete` do; the
    array is that memory, not a copy).  Refused above max_cells cells (default 2^28, 1 GiB)."""
    cells = 1
    for d in model.dims:
        cells *= d
    if cells > max_cells:
        raise ValueError(f"predict_dense: the grid {model.dims} has {cells} cells, more than max_cells={max_cells}; "
                         "predict the cells needed with predict(), or raise max_cells")
    res = np.empty(model.dims, dtype=np.float32, order="F")
    _core.tucker_predict_dense(model.a, model.b, model.rank_j, model.rank_r, res.T)  # res.T: C order, same memory
    return res


def evaluate(model: Model, coo: Coo, *, lambda_a: float = 0.0, lambda_b: float = 0.0) -> Metrics:
    """Errors of the model on coo's entries (RMSE, MAE, SSE; loss adds the lambda terms)."""
    if coo.order != model.order:
        raise ValueError(f"coo has order {coo.order} but the model {model.order}")
    _query_indices(model, coo.indices)
    d = _core.tucker_evaluate(model.a, model.b, model.rank_j, model.rank_r, coo.indices, coo.values,
                              list(model.dims), float(lambda_a), float(lambda_b))
    return Metrics(float(d["sse"]), float(d["rmse"]), float(d["mae"]), float(d["loss"]), int(d["count"]))


def _manifest_text(lines: Dict[str, object]) -> str:
    text = ""
    for k, v in lines.items():
        k, v = str(k), str(v)
        if not k or any(c in k for c in "=\n") or "\n" in v:
            raise ValueError(f"manifest: key {k!r} / value {v!r}: keys without '=' or newlines, values one line")
        text += f"{k} = {v}\n"
    return text


def _manifest_dict(text: str) -> Dict[str, str]:
    keys = [line.split("=", 1)[0].strip() for line in text.splitlines() if "=" in line]
    found = {k: _core.tucker_manifest_get(text, k) for k in keys}
    return {k: v for k, v in found.items() if v is not None}


def save_model(directory: Union[str, os.PathLike], model: Model, manifest: Optional[Dict[str, object]] = None) -> None:
    """Writes the model directory `tk-tucker` reads: A1.npy..AN.npy, B1.npy..BN.npy and
    manifest.txt (format, order, dims, ranks, then `manifest`'s "key = value" lines).  Built
    beside and swapped in with one rename: a reader sees the old model or the new one.  An
    existing directory is replaced only if it holds a manifest.txt (a model)."""
    _core.tucker_model_save(os.fspath(directory), model.a, model.b, model.rank_j, model.rank_r,
                            _manifest_text(manifest or {}))


def load_model(directory: Union[str, os.PathLike]) -> Model:
    """A model directory written by :func:`save_model` or `tk-tucker train`; every file checked
    (ValueError naming it)."""
    a, b, _, _, text = _core.tucker_model_load(os.fspath(directory))
    return Model(list(a), list(b), _manifest_dict(text))


ProgressCallback = Callable[[int, dict], Optional[bool]]


def _sequential_mean(values: np.ndarray, chunk: int = 1 << 20) -> float:
    """The mean as tk-tucker train sums it (in double, entry after entry; numpy.mean's pairwise
    sum may differ in the last bit, and so would the start), a chunk at a time."""
    total = 0.0
    for lo in range(0, values.shape[0], chunk):
        part = values[lo:lo + chunk].astype(np.float64)
        part[0] += total
        total = float(np.add.accumulate(part)[-1])  # accumulate runs left to right
    return total / values.shape[0]


def _train_entries(coo: Coo) -> str:
    """The manifest's train_entries: the training entries' count and fingerprint, as tk-tucker
    writes them (tk_tucker_coo_fingerprint), whatever file (or none) the entries came from."""
    fp = int(_core.tucker_coo_fingerprint(coo.indices, coo.values, list(coo.dims)))
    return f"{coo.values.shape[0]}:{fp:016x}"


def _settings(seed, factor_update, lr_a, lr_b, lambda_a, lambda_b, fiber_threshold, double, test_fraction,
              train_entries) -> Dict[str, str]:
    # The manifest lines tk-tucker writes (tools/tk_tucker.c settings_text), with %.17g values;
    # als_ridge = per_entry marks a ridge of lambda_a per entry of a row (ALS-WR), which row
    # solves before it did not have (a flat lambda_a): their checkpoints are not continued.
    settings = {"seed": str(seed), "lr_a": f"{lr_a:.17g}", "lr_b": f"{lr_b:.17g}", "lambda_a": f"{lambda_a:.17g}",
                "lambda_b": f"{lambda_b:.17g}", "fiber_threshold": str(fiber_threshold),
                "precision": "double" if double else "float", "test_fraction": f"{test_fraction:.17g}",
                "train_entries": train_entries, "factor_update": factor_update}
    if factor_update == "als":
        settings["als_ridge"] = "per_entry"
    return settings


INITS = ("auto", "random", "spectral")


def start_choice(coo: Coo, rank_j: int = 32) -> Dict[str, object]:
    """The default start's rule (`init="auto"`, `tk-tucker train --init auto`,
    tk_tucker_prefers_spectral): a dict of column_entries (entries a column of coo's
    best-sampled unfolding) and column_mode, row_entries (entries a row of its largest mode)
    and row_mode (modes 0-based), and spectral: whether the default start at factor rank rank_j
    (with the row solves) is the spectral start with one deflation round, i.e. fewer than
    SPECTRAL_BELOW[0] entries a column or SPECTRAL_BELOW[1] x rank_j a row, where random starts
    were seen to fail on planted tensors (Documentation/benchmarks.md, "The default start")."""
    _check_training(coo)
    col, col_mode, row, row_mode, spectral = _core.tucker_start_choice(coo.indices, coo.values, list(coo.dims),
                                                                       int(rank_j))
    return {"column_entries": float(col), "column_mode": int(col_mode), "row_entries": float(row),
            "row_mode": int(row_mode), "spectral": bool(spectral)}


def _resumed_rounds(directory: str, manifest: Dict[str, str], start: int) -> Tuple[int, int]:
    """A checkpoint's deflation rounds and how many of them ran by iteration `start`, counted
    with its own phase (round_iters, or its iterations in all / (rounds + 1)), as tk-tucker
    train resumes them: the same call resumed gives the model of a run never interrupted."""
    def whole(key, default):
        v = manifest.get(key)
        if v is None:
            return default
        if not v.isdigit():
            raise ValueError(f"resume: {directory}/manifest.txt: {key} '{v}' is not a whole number (the checkpoint is "
                             "damaged); fix that line, or train without resume")
        return int(v)
    rounds = whole("deflate", 0)
    phase = whole("round_iters", 0) or max(whole("iters", 0) // (rounds + 1), 1)
    return rounds, min(rounds, (start - 1) // phase if start >= 1 else 0)


def _resume_from(directory: str, dims, rank_j, rank_r, settings) -> Tuple[Optional[Model], int]:
    if not os.path.exists(os.path.join(directory, "manifest.txt")):
        return None, 0
    model = load_model(directory)
    # The factor updates first, as tk-tucker checks them: a checkpoint without a factor_update
    # line (before ALS) was trained by SGD; one of row solves without als_ridge had the flat
    # ridge of an older tk-tucker, whose objective is not this one's.
    want, have = settings["factor_update"], model.manifest.get("factor_update", "sgd")
    if want != have:
        raise ValueError(f"resume: the factor updates are {want} here but {have} in the checkpoint in {directory}; "
                         f"pass factor_update={have!r}, or train without resume")
    if have == "als" and "als_ridge" not in model.manifest:
        raise ValueError(f"resume: the checkpoint in {directory} was trained by row solves with the flat ridge of an "
                         "older tk-tucker or tensorkernels (no als_ridge line), this one's ridge is per entry; train "
                         "without resume")
    # The data: the training entries where the checkpoint names them (this package's and
    # tk-tucker's since train_entries; a split's fraction is then implied), else the split's
    # fraction alone (an older tk-tucker's checkpoint, whose file size a Coo cannot check).
    data_keys = ("train_entries",) if "train_entries" in model.manifest else ("test_fraction",)
    for key, want in settings.items():
        if key == "factor_update" or (key in ("train_entries", "test_fraction") and key not in data_keys):
            continue
        have = model.manifest.get(key)
        if have != want:
            raise ValueError(f"resume: {key} is {want} here but {have} in the checkpoint in {directory}; train with "
                             "the checkpoint's settings, or without resume")
    if model.dims != tuple(dims) or model.rank_j != rank_j or model.rank_r != rank_r:
        raise ValueError(f"resume: the checkpoint in {directory} has dims {model.dims}, J={model.rank_j}, "
                         f"R={model.rank_r}, but this run {tuple(dims)}, J={rank_j}, R={rank_r}")
    it = model.manifest.get("iteration", "0")
    if not it.isdigit():
        raise ValueError(f"resume: {directory}/manifest.txt: iteration {it!r} is not a whole number >= 0 (the "
                         "checkpoint is damaged)")
    return model, int(it)


def train(coo: Coo, *, rank_j: int = 32, rank_r: int = 32, iterations: int = DEFAULT_ITERATIONS,
          factor_update: str = "als", lr_a: Optional[float] = None, lr_b: Optional[float] = None,
          lambda_a: Optional[float] = None, lambda_b: Optional[float] = None,
          fiber_threshold: int = DEFAULT_FIBER_THRESHOLD, storage: str = "bcsf", double: bool = False,
          seed: int = 0, test: Optional[Coo] = None, init: Union[None, str, Model] = None,
          deflate: Optional[int] = None, backend: str = "auto",
          threads: int = 0, device: int = 0, gpus: int = 0, progress: Optional[ProgressCallback] = None,
          checkpoint_dir: Optional[Union[str, os.PathLike]] = None, checkpoint_every: int = 0,
          resume: bool = False) -> Model:
    """Fits a FastTucker model to coo's entries as `tk-tucker train` does, with the same
    defaults: the same settings and seed give the same model bit for bit (cpu, omp), and a
    checkpoint of either resumes in the other.

    rank_j, rank_r: factor and core ranks (4..64).  iterations: passes, each one factor update
    of every mode then one core update (default 40, `tk-tucker train`'s).
    factor_update: "als" (the default): each factor row moves to its exact minimiser with the
    rest fixed, a ridge of lambda_a per entry of the row (ALS-WR; the core is balanced first);
    no factor rate, so lr_a is refused (ValueError).  "sgd": the seed's per-entry SGD steps of
    size lr_a (stable while lr_a |v|^2 < 2: lower it for values of larger magnitude, e.g. 0.005
    for ratings 1..5).  lr_b: core step (scales the mean gradient; 0 keeps the core as it
    starts).  lambda_a, lambda_b: regularization.  Where not given (None) lr_a, lr_b, lambda_a
    and lambda_b are the C library's defaults of the chosen update (:func:`train_defaults`):
    "als" lr_b 0, lambda_a 3e-4 per entry; "sgd" lr_a 0.05, lr_b 1, lambda_a 0.001; lambda_b
    0.001 for both.  fiber_threshold: B-CSF sub-slice size.  storage: "bcsf" or "coo" (cpu
    only).  double: cpu/omp in double (the reference path).
    init: the start, as `tk-tucker train --init`: "random" (:func:`init_model` seeded by `seed`,
    at the data's mean when no value is negative), "spectral" (:func:`spectral_start` with
    `seed` and `threads`), "auto" or None (the default): spectral with one deflation round
    where the best-sampled unfolding has fewer than 8 entries a column or the largest mode
    fewer than 32 x rank_j a row (:func:`start_choice`) and factor_update is "als", else
    random; or a Model to start from (not modified).  deflate: after `iterations` from a
    spectral start, this many rounds of {:func:`spectral_deflate`, `iterations` more}, so
    iterations x (deflate + 1) in all (default: 1 where "auto" chose spectral, else 0; given with
    "auto" it makes the start spectral; refused with "random", a Model and resume).
    seed: the random start's, the spectral start's and the rounds'.  test: held-out entries,
    evaluated every iteration.
    backend: "auto" (CUDA where built and usable, else "omp"; "omp" with double), "cpu", "omp",
    "cuda"; with the same seed, cpu and omp give the same model bit for bit for any `threads`.
    device, gpus: the first CUDA device and how many from it on train together (`tk-tucker train
    --gpus`, NCCL; 0: every visible one; cuda backend only).

    progress(iteration, metrics) is called after every iteration with a dict: iteration,
    train_rmse, train_loss, test_rmse, test_mae (NaN without test), factor_s, core_s; returning
    False stops training there (the model so far is returned and checkpointed).
    checkpoint_dir: the model directory (`tk-tucker`'s format) saved every `checkpoint_every`
    iterations (0: at the end only) and at the end, replaced atomically.  resume: continue from
    the checkpoint in checkpoint_dir (same settings and factor update, checked; a checkpoint
    without a factor_update line, from before ALS, resumes with factor_update="sgd"; one of row
    solves with the older flat ridge, no als_ridge line, is refused) after its iteration.

    The GIL is released during every update; Ctrl-C raises KeyboardInterrupt between updates
    (the last checkpoint stays whole).  Returns the model, its `history` the metrics of every
    iteration run.  Raises ValueError when the model diverges (non-finite RMSE: lower lr_a/lr_b).
    """
    if factor_update not in FACTOR_UPDATES:
        raise ValueError(f"factor_update must be 'als' or 'sgd', not {factor_update!r}")
    if factor_update == "als" and lr_a is not None:
        raise ValueError("lr_a: exact row solves (factor_update='als', the default) take no factor rate; drop lr_a, "
                         "or pass factor_update='sgd'")
    # None: the C library's default of this update, as tk-tucker train takes it
    defaults = train_defaults(factor_update)
    lr_a, lr_b, lambda_a, lambda_b = (defaults[k] if v is None else float(v) for k, v in
                                      (("lr_a", lr_a), ("lr_b", lr_b), ("lambda_a", lambda_a), ("lambda_b", lambda_b)))
    _check_training(coo)
    if test is not None and (not isinstance(test, Coo) or test.order != coo.order):
        raise ValueError("test: expected a Coo of the training tensor's order")
    if not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations must be a whole number >= 1, got {iterations!r}")
    if checkpoint_every < 0:
        raise ValueError(f"checkpoint_every must be >= 0, got {checkpoint_every}")
    if resume and checkpoint_dir is None:
        raise ValueError("resume needs checkpoint_dir (the model directory to continue)")
    if deflate is not None:
        if not isinstance(deflate, int) or deflate < 0:
            raise ValueError(f"deflate must be a whole number >= 0, got {deflate!r}")
        if resume:
            raise ValueError("deflate with resume: the rounds run in one training from the spectral start; drop "
                             "deflate (a resumed run continues the checkpoint's schedule, its rounds included), or "
                             "drop resume")
        if init is not None and not (isinstance(init, str) and init in ("auto", "spectral")):
            raise ValueError("deflate: the deflation rounds continue a spectral start; pass init='spectral' or "
                             "'auto' (or none), or drop deflate")
    if isinstance(init, str) and init not in INITS:
        raise ValueError(f"init must be 'auto', 'random', 'spectral' or a Model, not {init!r}")
    if init is not None and not isinstance(init, (str, Model)):
        raise TypeError(f"init: expected 'auto', 'random', 'spectral' or a tensorkernels.tucker.Model, got "
                        f"{type(init).__name__}")
    try:
        storage_code = STORAGES[storage]
    except KeyError:
        raise ValueError(f"storage must be 'bcsf' or 'coo', not {storage!r}") from None
    if double and backend == "cuda":
        raise ValueError("double with backend 'cuda': cuda computes in float; use 'cpu' or 'omp', or drop double")
    code = backend_code("omp" if double and backend == "auto" else backend, device)
    dims = [max(a, b) for a, b in zip(coo.dims, test.dims if test is not None else coo.dims)]
    settings = _settings(int(seed), factor_update, lr_a, lr_b, lambda_a, lambda_b, int(fiber_threshold),
                         bool(double), 0.0, _train_entries(coo))
    ckpt = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
    start_model, start = (_resume_from(ckpt, dims, rank_j, rank_r, settings) if resume else (None, 0))
    rounds, done, start_line = 0, 0, None
    if start_model is not None:  # resumed: the checkpoint's schedule goes on (tk-tucker train's resume_schedule)
        rounds, done = _resumed_rounds(ckpt, start_model.manifest, start)
        start_line = start_model.manifest.get("init", "random")
    else:
        if isinstance(init, Model):
            start_model, start_line = init, "model"
            if list(init.dims) != dims or init.rank_j != rank_j or init.rank_r != rank_r:
                raise ValueError(f"init: the model has dims {init.dims}, J={init.rank_j}, R={init.rank_r}, but the "
                                 f"data need dims {tuple(dims)}, J={rank_j}, R={rank_r}")
        else:
            picked = init is None or init == "auto"
            kind = init
            if picked:  # sgd: the seed's start for the seed's algorithm (the rule was measured with ALS)
                thin = factor_update == "als" and start_choice(coo, rank_j)["spectral"]
                kind = "spectral" if deflate is not None or thin else "random"
            # rounds: as given, else the one round auto adds to its spectral start
            rounds = deflate if deflate is not None else int(picked and kind == "spectral")
            start_line = kind
            if kind == "spectral":
                start_model = spectral_start(coo, rank_j, rank_r, dims=dims, seed=seed, threads=threads)
            else:
                lo = float(coo.values.min())
                start_model = init_model(dims, rank_j, rank_r, seed=seed,
                                         target_mean=_sequential_mean(coo.values) if lo >= 0 else 0.0)
    total = iterations * (rounds + 1)
    model = Model([np.empty_like(a) for a in start_model.a], [np.empty_like(b) for b in start_model.b])
    gpu_count = resolve_gpus(gpus, backend, code, int(device))
    if gpus == 0:  # "every visible GPU" as far as this build reaches, as tk-tucker's default (no NCCL: one)
        gpu_count = min(gpu_count, int(_core.tucker_max_devices()))

    def solver_from(m: Model):
        return _core.TuckerSolver(coo.indices, coo.values, list(coo.dims), m.a, m.b, rank_j, rank_r, code,
                                  storage_code, int(bool(double)), factor_update, float(lr_a), float(lr_b),
                                  float(lambda_a), float(lambda_b), int(fiber_threshold), int(threads), int(device),
                                  gpu_count)

    solver = solver_from(start_model)
    names = {0: "cpu", 1: "omp", 2: "cuda"}
    try:
        solver.model(model.a, model.b)  # the start, should no iteration run (resumed at the end)
        for it in range(start + 1, total + 1):
            if rounds and it > 1 and (it - 1) % iterations == 0 and (it - 1) // iterations > done:
                # a deflation round on the model after the last iteration, then ALS again from
                # the round's model with a new solver, as tk-tucker train does
                solver.close()
                deflated, _ = spectral_deflate(coo, model, seed=seed, threads=threads)
                solver = solver_from(deflated)
            solver.update_factors()
            solver.update_core()
            solver.model(model.a, model.b)
            tr = evaluate(model, coo, lambda_a=lambda_a, lambda_b=lambda_b)
            te = evaluate(model, test) if test is not None and test.nnz else None
            if not math.isfinite(tr.rmse):
                raise ValueError(f"tucker.train: iteration {it}: the model diverged (train RMSE {tr.rmse}): lower "
                                 + ("lr_a / lr_b" if factor_update == "sgd" else "lr_b"))
            factor_ms, core_ms, _ = solver.timing()
            metrics = {"iteration": it, "train_rmse": tr.rmse, "train_loss": tr.loss,
                       "test_rmse": te.rmse if te else math.nan, "test_mae": te.mae if te else math.nan,
                       "factor_s": factor_ms / 1e3, "core_s": core_ms / 1e3}
            model.history.append(metrics)
            stop = progress is not None and progress(it, dict(metrics)) is False
            if ckpt is not None and ((checkpoint_every and it % checkpoint_every == 0) or it == total or stop):
                record = {"init": start_line, "deflate": str(rounds), "round_iters": str(iterations)}
                model.manifest = {"iteration": str(it), "iters": str(total), "backend": names[code],
                                  "train": "(tensorkernels.tucker.train)", "test": "", **record, **settings,
                                  "train_rmse": f"{tr.rmse:.9g}",
                                  "test_rmse": f"{te.rmse:.9g}" if te else "nan",
                                  "test_mae": f"{te.mae:.9g}" if te else "nan"}
                save_model(ckpt, model, model.manifest)
            if stop:
                break
    finally:
        solver.close()
    # As tk-tucker train: a model no better on held-out entries than their training mean has
    # learnt nothing usable (too few entries a row for the ranks); say so.
    if test is not None and test.nnz and model.history:
        last = model.history[-1]["test_rmse"]
        base = _mean_baseline_rmse(coo, test)
        if not last < base:
            warnings.warn(f"tucker.train: the test RMSE after iteration {model.history[-1]['iteration']}, {last:.6g}, "
                          f"is not below {base:.6g}, that of predicting the training entries' mean for every test "
                          f"entry: at J = {rank_j}, R = {rank_r} the model predicts held-out entries no better than a "
                          "constant (too few entries a row for the ranks, or data no model of these ranks explains); "
                          "try lower rank_j / rank_r" + ("" if start_line in ("spectral", "model") else
                          ", or, on a sparse tensor (a few entries a column of its unfoldings), init='spectral' "
                          "with deflate=1 (Documentation/python.md)"),
                          RuntimeWarning, stacklevel=2)
    return model


def _mean_baseline_rmse(train: Coo, test: Coo) -> float:
    """The held-out RMSE of predicting the training entries' mean for every test entry."""
    mean = _sequential_mean(train.values)
    return float(np.sqrt(np.mean((test.values.astype(np.float64) - mean) ** 2)))
