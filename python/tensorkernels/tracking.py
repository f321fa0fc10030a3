"""Streamline tractography through a fiber ODF given as SH coefficients: MRtrix3's SD_STREAM
and iFOD1 as `tk-track` (and tckgen) run them (the core of `tk_tracking.h`;
Documentation/tracking.md).

Frames.  `sh` is a C-order (x, y, z, C) volume (as :func:`tensorkernels.io.load_sh` returns it)
and `affine` its voxel -> world RAS mm matrix (nibabel's img.affine: voxel (x, y, z) lies at
affine @ (x, y, z, 1)).  MRtrix3's SH ("tournier") is defined in world RAS, as tckgen and
`tk-track` read it.  Seed points and streamline points are world RAS mm; masks are (x, y, z)
arrays on the same grid, looked up at the voxel nearest a point.

Layout.  The core reads a volume with its first grid axis fastest; a C-order (x, y, z, C) array
has z fastest, so it is handed over as the grid (z, y, x) with the affine's columns to match:
the same voxels at the same world positions, read in place (no copy).  Mask seeds follow
`tk-track`'s rule all the same (the core's reversed_axes): seed number k is the k-th masked
voxel counted x fastest, its random point drawn x first, so one mask and rng_seed give the
tool's seeds and streamlines; with seed points the seed index is the point's number in both.
"""
from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from . import _gpu_arrays as _gpu
from . import _tensorkernels as _core
from ._arrays import array, backend_code, resolve_gpus

__all__ = ["Tracks", "track", "ALGORITHMS"]

ALGORITHMS = {"sd_stream": 0, "ifod1": 1}
BASES = {"tournier": 0, "descoteaux": 1}


class Tracks(NamedTuple):
    """Result of :func:`track`."""

    streamlines: List[np.ndarray]  #: float32 (n, 3) world RAS mm each, in seed order
    seed_index: np.ndarray  #: uint64: the seed each streamline grew from (a point's number)
    stats: Dict[str, int]  #: seeds, accepted, and why the others were rejected and streamlines ended
    options: Dict[str, float]  #: the options with their defaults resolved (step_mm, max_angle_deg, lengths)

    def to_streamlines(self):
        """The streamlines as a nibabel ArraySequence (DIPY's `Streamlines`; a copy into one
        buffer), e.g. for `nibabel.streamlines.Tractogram` or DIPY's tools."""
        from nibabel.streamlines import ArraySequence
        return ArraySequence(self.streamlines)


def _mask(name: str, m, shape) -> Optional[np.ndarray]:
    if m is None:
        return None
    if isinstance(m, np.ndarray) and m.dtype == np.bool_:
        m = m.view(np.uint8)  # same bytes (0/1): a view, not a copy
    m = array(name, m, (np.uint8,), min_ndim=3)
    if m.shape != shape:
        raise ValueError(f"{name}: expected the volume's grid {shape}, got shape {m.shape}")
    return m


def track(sh: np.ndarray, affine: np.ndarray, *, seed_points: Optional[np.ndarray] = None,
          seed_mask: Optional[np.ndarray] = None, seeds_per_voxel: int = 1, algorithm: str = "sd_stream",
          basis: str = "tournier", legacy: bool = False, step: float = 0.0, angle: float = 0.0,
          cutoff: float = 0.1, min_length: float = 0.0, max_length: float = 0.0, power: float = 0.0,
          trials: int = 0, seed_direction: Optional[Sequence[float]] = None, unidirectional: bool = False,
          rng_seed: int = 0, mask: Optional[np.ndarray] = None, include: Sequence[np.ndarray] = (),
          exclude: Optional[np.ndarray] = None, allow_nonfinite: bool = False, chunk_seeds: int = 4096,
          select: int = 0, backend: str = "auto", threads: int = 0, device: int = 0, gpus: int = 0,
          progress: Optional[Callable[[int, int], Optional[bool]]] = None) -> Tracks:
    """Streamlines from seeds through the SH volume, with `tk-track`'s options.

    sh: float32 C-order (x, y, z, C), C = 6, 15, 28, 45, ... (lmax 2..); read in place.
    affine: 4 x 4 voxel -> world RAS mm (last row 0 0 0 1).
    seed_points: (n, 3) float64 world RAS mm (`--seeds-file`), or seed_mask: bool/uint8 (x, y, z)
        with seeds_per_voxel random points in each nonzero voxel (`--seed-mask`, `--seeds`).
    algorithm: "sd_stream" (default; deterministic) or "ifod1" (probabilistic).
    basis, legacy: the SH basis ("tournier": MRtrix3's; "descoteaux": DIPY's).
    step (mm; 0: 0.1 voxel), angle (degrees per step; 0: 60 sd_stream, 15 ifod1), cutoff (FOD
        amplitude; default 0.1), min_length / max_length (mm; 0: 5 and 100 voxels), power and
        trials (ifod1; 0: 1 and 1000), seed_direction (world RAS; default random),
        unidirectional, rng_seed (the random numbers' key: the same key, the same streamlines
        whatever the backend and threads): as `tk-track`'s --step ... --seed.
    mask (stop where it is left), include (keep streamlines that visit each), exclude (drop
        those that enter it): bool/uint8 (x, y, z).  allow_nonfinite: NaN coefficients end a
        streamline as the volume's edge would (default: refused, ValueError).
    select: with seed_points, stop once this many streamlines are kept (the first ones in seed
        order, as `tk-track --select` with --seeds-file); 0: every seed.  (`tk-track`'s rounds
        of mask seeds until K are kept are the tool's.)
    backend: "auto" (CUDA where built and usable, else "omp"), "cpu", "omp", "cuda"; device, gpus:
        the first CUDA device and how many from it on track (`--gpus`: each GPU a chunk of its
        own, the streamlines those of one GPU; 0: every visible one; cuda backend only).
        Arrays are host (NumPy) arrays: a CuPy/PyTorch GPU array is refused (TypeError).
    progress(seeds_done, seeds_total) after every chunk of chunk_seeds seeds; returning False
        stops there (the streamlines so far are returned).  The GIL is released while the
        core tracks; Ctrl-C raises KeyboardInterrupt at the next chunk.
    Returns Tracks(streamlines, seed_index, stats, options).
    """
    sh = array("sh", sh, (np.float32,), min_ndim=4)
    if sh.ndim != 4:
        raise ValueError(f"sh: expected a 4-D (x, y, z, C) volume, got shape {sh.shape}")
    lmax = int(_core.sh_lmax_for_count(sh.shape[3]))
    if lmax < 2:
        raise ValueError(f"sh: {sh.shape[3]} coefficients is no even-degree SH size of lmax >= 2 (6, 15, 28, 45, 66, "
                         "91, 120, 153)")
    _gpu.refuse("affine", affine, "tracking")
    affine = np.asarray(affine, dtype=np.float64)
    if affine.shape != (4, 4) or not np.all(np.isfinite(affine)):
        raise ValueError(f"affine: expected a finite 4 x 4 matrix, got shape {affine.shape}")
    grid = sh.shape[:3]
    if (seed_points is None) == (seed_mask is None):
        raise ValueError("give seed_points (n, 3) world mm or seed_mask (x, y, z), one of them")
    if seed_points is not None:
        seed_points = array("seed_points", seed_points, (np.float64,), min_ndim=2)
        if seed_points.ndim != 2 or seed_points.shape[1] != 3 or seed_points.shape[0] == 0:
            raise ValueError(f"seed_points: expected shape (n, 3) with n >= 1, got {seed_points.shape}")
        if not np.all(np.isfinite(seed_points)):
            raise ValueError("seed_points: a coordinate is not finite")
    seed_mask = _mask("seed_mask", seed_mask, grid)
    if seed_mask is not None and not seed_mask.any():
        raise ValueError("seed_mask: no voxel is nonzero, so there is nowhere to seed")
    if seeds_per_voxel < 1:
        raise ValueError(f"seeds_per_voxel must be >= 1, got {seeds_per_voxel}")
    if select < 0 or (select and seed_points is None):
        raise ValueError(f"select={select}: a count >= 0, with seed_points (mask seeding in rounds is tk-track's)")
    if chunk_seeds < 1:
        raise ValueError(f"chunk_seeds must be >= 1, got {chunk_seeds}")
    try:
        alg, bas = ALGORITHMS[algorithm], BASES[basis]
    except KeyError:
        raise ValueError(f"algorithm must be 'sd_stream' or 'ifod1' and basis 'tournier' or 'descoteaux', got "
                         f"{algorithm!r}, {basis!r}") from None
    s = _core.TrackingSettings()
    s.algorithm, s.lmax, s.basis, s.legacy = alg, lmax, bas, int(bool(legacy))
    s.step_mm, s.max_angle_deg, s.cutoff = float(step), float(angle), float(cutoff)
    s.min_length_mm, s.max_length_mm, s.fod_power, s.max_trials = float(min_length), float(max_length), \
        float(power), int(trials)
    s.unidirectional, s.rng_seed = int(bool(unidirectional)), int(rng_seed) & (2 ** 64 - 1)
    if seed_direction is not None:
        d = [float(v) for v in seed_direction]
        if len(d) != 3 or not np.all(np.isfinite(d)) or not any(d):
            raise ValueError(f"seed_direction: expected 3 finite numbers, not all 0, got {seed_direction!r}")
        s.seed_direction = d
    s.allow_nonfinite, s.chunk_seeds = int(bool(allow_nonfinite)), int(chunk_seeds)
    s.backend, s.threads, s.device = backend_code(backend, device), int(threads), int(device)
    s.gpus = resolve_gpus(gpus, backend, s.backend, int(device))
    # The C-order array's memory is the core's i-fastest grid (z, y, x): reverse the grid's
    # dims and the affine's first three columns (the same voxels at the same world points).
    core_affine = affine.copy()
    core_affine[:, [0, 1, 2]] = affine[:, [2, 1, 0]]
    chunks: List[tuple] = []
    kept = [0]

    def sink(num_points, seed_index, points, seeds_done, seeds_total):
        if select and kept[0] + len(num_points) >= select:  # the first ones: chunks are in seed order
            n = select - kept[0]
            chunks.append((num_points[:n], seed_index[:n], points[:int(num_points[:n].sum())]))
            kept[0] = select
            return False
        chunks.append((num_points, seed_index, points))
        kept[0] += len(num_points)
        if progress is not None:
            return progress(int(seeds_done), int(seeds_total))
        return None
    stats, options, _ = _core.tracking_track(
        sh, [grid[2], grid[1], grid[0]], [float(v) for v in core_affine.ravel()], s,
        _mask("mask", mask, grid), _mask("exclude", exclude, grid),
        [_mask(f"include[{k}]", m, grid) for k, m in enumerate(include)], seed_mask, int(seeds_per_voxel),
        seed_points, sink)
    streamlines: List[np.ndarray] = []
    for num_points, _, points in chunks:
        streamlines.extend(np.split(points, np.cumsum(num_points)[:-1].astype(np.intp)) if len(num_points) else [])
    seed_index = np.concatenate([c[1] for c in chunks]) if chunks else np.empty(0, np.uint64)
    return Tracks(streamlines, seed_index, dict(stats), dict(options))
