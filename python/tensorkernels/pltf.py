"""Probabilistic Latent Tensor Factorization (Yilmaz and Cemgil's PLTF; the core of `tk-pltf`,
`tk_pltf.h`).

Models.  An expression "OUT=F1,F2,..." of one-letter indices: OUT names the observed tensor's
axes in order, each Fn one factor's axes.  "ijk=ia,ja,ka" is PARAFAC (presets: "parafac"),
"ijk=ip,jq,kr,pqr" Tucker-3 ("tucker3").  The model's reconstruction is

    X^ = sum over the latent indices (those not in OUT) of the product of the factors,

numpy.einsum("ia,ja,ka->ijk", Z1, Z2, Z3) for PARAFAC (:func:`gtm` computes it, as pairwise
contractions in the cheapest order).  :func:`fit` fits the factors to X by the multiplicative
updates of a beta-divergence (KL, Euclidean, Itakura-Saito) over the entries a mask marks
observed; unobserved entries are never read.  Everything is float64, C order.
"""
from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tensorkernels as _core
from ._arrays import array, backend_code, output

__all__ = ["Model", "Fit", "CoupledFit", "parse", "plan", "gtm", "fit", "fit_coupled", "DIVERGENCES"]

DIVERGENCES = {"is": 0, "kl": 1, "euclidean": 2}


class Model(NamedTuple):
    """A parsed model expression."""

    text: str  #: the expression, presets expanded ("ijk=ia,ja,ka")
    observed: str  #: OUT's indices, the observed tensor's axes in order ("ijk")
    factors: Tuple[str, ...]  #: each factor's indices, its axes in order (("ia", "ja", "ka"))

    @property
    def latent(self) -> str:
        """The indices not in OUT, in order of appearance."""
        seen = ""
        for f in self.factors:
            for c in f:
                if c not in self.observed and c not in seen:
                    seen += c
        return seen


class Fit(NamedTuple):
    """Result of :func:`fit`."""

    factors: List[np.ndarray]  #: float64, one per factor in the model's order, shape from its indices
    xhat: np.ndarray  #: float64 reconstruction, X's shape
    divergence: np.ndarray  #: float64 (iterations + 1,): [0] at the start, then after each iteration (NaN untracked)
    iterations: int  #: iterations run (fewer than asked when progress stopped the fit)
    final_divergence: float  #: over the observed entries, after the last iteration
    seconds: float  #: the iterations alone


class CoupledFit(NamedTuple):
    """Result of :func:`fit_coupled`."""

    factors: Dict[str, np.ndarray]  #: float64 by indices ("ia"), in the core's order (view 0's first)
    xhat: List[np.ndarray]  #: each view's reconstruction, its x's shape
    divergence: np.ndarray  #: (iterations + 1,): summed over the views; [0] at the start
    iterations: int
    final_divergence: float
    seconds: float


def parse(model: str) -> Model:
    """Parses "OUT=F1,F2,..." (spaces allowed) or a preset ("parafac", "tucker3"); ValueError
    naming the offending character and its position otherwise."""
    if not isinstance(model, str):
        raise TypeError(f"model: expected a str like 'ijk=ia,ja,ka', got {type(model).__name__}")
    text, observed, factors = _core.pltf_parse(model)
    return Model(text, observed, tuple(factors))


def _dims(dims) -> Dict[str, int]:
    """{"a": 3, "b": 4} from a dict or tk-pltf's --dims text "a=3,b=4"."""
    if dims is None:
        return {}
    if isinstance(dims, str):
        try:
            return {k.strip(): int(v) for k, v in (p.split("=") for p in dims.split(",") if p.strip())}
        except ValueError:
            raise ValueError(f"dims: expected 'a=3,b=4' or a dict, got {dims!r}") from None
    return {str(k): int(v) for k, v in dict(dims).items()}


def _sizes(m: Model, shape: Optional[Sequence[int]], dims, what: str) -> Dict[str, int]:
    """Every index's size: the observed ones from `shape` (the data's), the latent ones from dims."""
    sizes: Dict[str, int] = {}
    if shape is not None:
        if len(shape) != len(m.observed):
            raise ValueError(f"{what}: shape {tuple(shape)} has {len(shape)} axes, but model \"{m.text}\" observes "
                             f"{len(m.observed)} ({m.observed})")
        sizes.update(zip(m.observed, (int(s) for s in shape)))
    for k, v in _dims(dims).items():
        if k in sizes and sizes[k] != v:
            raise ValueError(f"dims sets observed index '{k}' to {v}, but {what} has {sizes[k]} along that axis; drop "
                             f"'{k}' from dims (the data give its size)")
        sizes[k] = v
    missing = [c for c in m.observed + m.latent if c not in sizes]
    if missing:
        raise ValueError(f"model \"{m.text}\": no size given for index '{missing[0]}'; give it in dims, e.g. "
                         f"dims={{'{missing[0]}': 10}}")
    return sizes


def _model(model: Union[str, Model]) -> Model:
    return model if isinstance(model, Model) else parse(model)


def plan(model: Union[str, Model], dims: Union[Dict[str, int], str]) -> Tuple[str, float]:
    """The contraction order chosen for the model's X^ ("(ia,ja)->aij; (aij,ka)->ijk") and its
    multiply-adds, for the sizes `dims` of every index."""
    m = _model(model)
    return tuple(_core.pltf_plan(m.text, _sizes(m, None, dims, "dims")))  # type: ignore[return-value]


def gtm(model: Union[str, Model], operands: Sequence[np.ndarray], *, dims: Union[Dict[str, int], str, None] = None,
        backend: str = "cpu", naive: bool = False, device: int = 0, out: Optional[np.ndarray] = None) -> np.ndarray:
    """Generalized tensor multiplication: the sum over the indices not in OUT of the product of
    the operands (numpy.einsum with the model's subscripts), as pairwise batched GEMMs in the
    cheapest order; the full joint tensor is never formed (naive=True: the seed's loop over it,
    for comparison).  operands: float64 C-order arrays of the factors' shapes; sizes come from
    them (dims may add the observed ones that no operand holds).  backend: "cpu" (default),
    "omp", "cuda" or "auto".  Returns float64 of OUT's shape, or writes `out`."""
    m = _model(model)
    if len(operands) != len(m.factors):
        raise ValueError(f"operands: model \"{m.text}\" has {len(m.factors)} factors, got {len(operands)} arrays")
    sizes: Dict[str, int] = {}
    ops = []
    for k, (name, op) in enumerate(zip(m.factors, operands)):
        op = array(f"operands[{k}]", op, (np.float64,), min_ndim=0)
        if op.ndim != len(name):
            raise ValueError(f"operands[{k}]: factor '{name}' has {len(name)} axes, got shape {op.shape}")
        for c, s in zip(name, op.shape):
            if sizes.setdefault(c, int(s)) != int(s):
                raise ValueError(f"operands[{k}]: index '{c}' has size {s} here but {sizes[c]} in an earlier operand")
        ops.append(op)
    for k, v in _dims(dims).items():
        if sizes.setdefault(k, v) != v:
            raise ValueError(f"dims sets '{k}' to {v}, but the operands give {sizes[k]}")
    missing = [c for c in m.observed if c not in sizes]
    if missing:
        raise ValueError(f"model \"{m.text}\": no size for observed index '{missing[0]}' (in no operand); give it "
                         "in dims")
    res = output("out", out, tuple(sizes[c] for c in m.observed), np.float64)
    _core.pltf_gtm(m.text, sizes, ops, res, backend_code(backend, device), int(bool(naive)))
    return res


ProgressCallback = Callable[[int, dict], Optional[bool]]


def fit(x: np.ndarray, model: Union[str, Model], *, dims: Union[Dict[str, int], str, None] = None,
        mask: Optional[np.ndarray] = None, divergence: str = "kl", iterations: int = 100, seed: int = 0,
        init: Optional[Sequence[np.ndarray]] = None, backend: str = "auto", threads: int = 0, device: int = 0,
        progress: Optional[ProgressCallback] = None, track_divergence: bool = True,
        naive_gtm: bool = False) -> Fit:
    """Fits the model's factors to x, as `tk-pltf` does.

    x: float64, C order, OUT's axes (float32 data: x.astype(numpy.float64), a copy).  dims: the
    latent indices' sizes ({"a": 5} or "a=5").  mask: bool/uint8 of x's shape, nonzero =
    observed; unobserved entries are never read (they may hold NaN).  divergence: "kl" (X >= 0;
    the seed's), "euclidean", "is" (Itakura-Saito, X > 0).  iterations: each updates every
    factor once.  seed: the random non-negative start at the data's scale, unless `init` gives
    the start (arrays of the factors' shapes, finite and >= 0; not modified).
    backend: "auto" (CUDA where built and usable, else "omp"), "cpu", "omp", "cuda".

    progress(iteration, {"iteration", "divergence"}) is called at the start (0) and after every
    iteration; returning False stops the fit there.  With track_divergence=False the divergence
    is computed at the end only (faster), and progress is called then only.  The GIL is released
    while the core runs; Ctrl-C raises KeyboardInterrupt at the next tracked iteration.
    Returns Fit(factors, xhat, divergence, iterations, final_divergence, seconds); ValueError
    with the core's message for bad data (a negative entry for KL, ...) or models.
    """
    m = _model(model)
    x = array("x", x, (np.float64,), min_ndim=0)
    sizes = _sizes(m, x.shape, dims, "x")
    if mask is not None:
        if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
            mask = mask.view(np.uint8)  # same bytes (0/1): a view, not a copy
        mask = array("mask", mask, (np.uint8,), min_ndim=0)
        if mask.shape != x.shape:
            raise ValueError(f"mask: shape {mask.shape} differs from x's {x.shape}")
    try:
        code = DIVERGENCES[divergence]
    except KeyError:
        raise ValueError(f"divergence must be 'kl', 'euclidean' or 'is', not {divergence!r}") from None
    if not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"iterations must be a whole number >= 0, got {iterations!r}")
    shapes = [tuple(sizes[c] for c in f) for f in m.factors]
    factors = [np.empty(s, np.float64) for s in shapes]
    if init is not None:
        if len(init) != len(shapes):
            raise ValueError(f"init: model \"{m.text}\" has {len(shapes)} factors, got {len(init)} arrays")
        for k, (z, start) in enumerate(zip(factors, init)):
            start = array(f"init[{k}]", start, (np.float64,), min_ndim=0)
            if start.shape != z.shape:
                raise ValueError(f"init[{k}]: factor '{m.factors[k]}' has shape {z.shape}, got {start.shape}")
            z[...] = start  # the start is copied into the result's arrays: init is not modified
    xhat = np.empty(x.shape, np.float64)
    div = np.full(iterations + 1, np.nan)
    hook = None
    if progress is not None:
        def hook(it, d):
            return progress(it, {"iteration": it, "divergence": d})
    done, final, iterate_ms, _ = _core.pltf_fit(
        m.text, sizes, x, mask, factors, xhat, div, code, backend_code(backend, device), iterations,
        int(seed) & (2 ** 64 - 1), int(init is not None), int(bool(naive_gtm)), int(bool(track_divergence)),
        int(threads), int(device), hook)
    return Fit(factors, xhat, div[:done + 1] if track_divergence else div, int(done), float(final),
               iterate_ms / 1e3)


def _mask_of(name: str, mask, shape) -> Optional[np.ndarray]:
    if mask is None:
        return None
    if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
        mask = mask.view(np.uint8)  # same bytes (0/1): a view, not a copy
    mask = array(name, mask, (np.uint8,), min_ndim=0)
    if mask.shape != shape:
        raise ValueError(f"{name}: shape {mask.shape} differs from its x's {shape}")
    return mask


def fit_coupled(views: Sequence[tuple], *, dims: Union[Dict[str, int], str, None] = None, divergence: str = "kl",
                iterations: int = 100, seed: int = 0, init: Optional[Dict[str, np.ndarray]] = None,
                backend: str = "auto", threads: int = 0, device: int = 0,
                progress: Optional[ProgressCallback] = None, track_divergence: bool = True) -> CoupledFit:
    """Coupled factorization (generalized coupled tensor factorization): several observed
    tensors, each with its model, sharing the factors whose index strings are equal ("ia" in
    "ij=ia,ja" and "ik=ia,ka" is one factor), each updated from every view that holds it:

        Z <- Z * (sum_v D_v(M_v X_v X^_v^(b-2)) / sum_v D_v(M_v X^_v^(b-1)))^g,

    which never increases the summed divergence (tk_pltf.h).  views: (x, model) or
    (x, model, mask) tuples, at most 8; x float64 C order, mask as in :func:`fit`.  A letter
    has one size in every view: the observed ones come from the x's, the latent ones from
    dims.  init: {indices: start array} for every distinct factor (not modified).  Other
    arguments as :func:`fit`; progress gets the summed divergence.
    Returns CoupledFit(factors by indices, xhat per view, divergence, iterations, ...).
    """
    if not isinstance(views, (list, tuple)) or not views:
        raise ValueError("views: give a list of (x, model) or (x, model, mask) tuples")
    xs, masks, models, sizes_v = [], [], [], []
    letters: Dict[str, int] = {}
    for v, view in enumerate(views):
        if not isinstance(view, tuple) or len(view) not in (2, 3):
            raise ValueError(f"views[{v}]: expected (x, model) or (x, model, mask), got {type(view).__name__}")
        m = _model(view[1])
        x = array(f"views[{v}] x", view[0], (np.float64,), min_ndim=0)
        masks.append(_mask_of(f"views[{v}] mask", view[2] if len(view) == 3 else None, x.shape))
        own = _sizes(m, x.shape, {k: d for k, d in _dims(dims).items() if k in m.observed + m.latent},
                     f"views[{v}] x")
        for k, d in own.items():
            if letters.setdefault(k, d) != d:
                raise ValueError(f"views[{v}]: index '{k}' has size {d} here but {letters[k]} in an earlier view")
        xs.append(x)
        models.append(m.text)
        sizes_v.append(own)
    try:
        code = DIVERGENCES[divergence]
    except KeyError:
        raise ValueError(f"divergence must be 'kl', 'euclidean' or 'is', not {divergence!r}") from None
    if not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"iterations must be a whole number >= 0, got {iterations!r}")
    names = list(_core.pltf_coupled_factors(models, sizes_v, xs))
    factors = {n: np.empty(tuple(letters[c] for c in n), np.float64) for n in names}
    if init is not None:
        if set(init) != set(names):
            raise ValueError(f"init: expected the factors {names}, got {sorted(init)}")
        for n in names:
            start = array(f"init[{n!r}]", init[n], (np.float64,), min_ndim=0)
            if start.shape != factors[n].shape:
                raise ValueError(f"init[{n!r}]: expected shape {factors[n].shape}, got {start.shape}")
            factors[n][...] = start
    xhat = [np.empty(x.shape, np.float64) for x in xs]
    div = np.full(iterations + 1, np.nan)
    hook = None
    if progress is not None:
        def hook(it, d):
            return progress(it, {"iteration": it, "divergence": d})
    done, final, iterate_ms, _ = _core.pltf_fit_coupled(
        models, sizes_v, xs, masks, xhat, [factors[n] for n in names], div, code, backend_code(backend, device),
        iterations, int(seed) & (2 ** 64 - 1), int(init is not None), int(bool(track_divergence)), int(threads),
        int(device), hook)
    return CoupledFit(factors, xhat, div[:done + 1] if track_divergence else div, int(done), float(final),
                      iterate_ms / 1e3)
