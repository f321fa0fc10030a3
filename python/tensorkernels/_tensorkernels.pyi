# Type stubs of the extension (python/src/*.cpp): private, called by tensorkernels/*.py, which
# check every argument first.  Arrays are C-contiguous host arrays of the stated dtypes; a
# mismatch raises TypeError (no conversion is made).
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

def core_version() -> str: ...
def has_cuda() -> bool: ...
def cuda_usable(device: int = 0) -> Tuple[bool, str]: ...
def sym_num_unique(order: int, dim: int) -> int: ...
def sshopm_has_unrolled(order: int, dim: int) -> bool: ...
def stability_name(s: int) -> str: ...
def sshopm_solve(tensors: NDArray[np.floating], starts: Optional[NDArray[np.floating]],
                 eigenvalues: NDArray[np.floating], eigenvectors: NDArray[np.floating],
                 iterations: NDArray[np.int32], converged: NDArray[np.uint8], order: int, dim: int, impl: int,
                 adaptive: int, shift: float, tol: float, max_iter: int, num_starts: int, seed: int, backend: int,
                 threads: int, device: int) -> None: ...
def sshopm_distinct(tensors: NDArray[np.floating], eigenvalues: NDArray[np.floating],
                    eigenvectors: NDArray[np.floating], iterations: NDArray[np.int32],
                    converged: NDArray[np.uint8], order: int, dim: int, num_starts: int, merge_tol: float
                    ) -> Tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.int8],
                               NDArray[np.int32]]: ...
def fibers_peaks(sh: NDArray[np.float32], mask: Optional[NDArray[np.uint8]], directions: NDArray[np.float32],
                 amplitudes: NDArray[np.float32], lmax: int, basis: int, legacy: int, num_peaks: int,
                 threshold: float, relative_threshold: float, min_separation_deg: float, backend: int,
                 threads: int, device: int) -> int: ...
def sh_guess_basis(sh: NDArray[np.float32], lmax: int, basis: int, legacy: int) -> dict: ...
def sh_num_coeffs(lmax: int) -> int: ...
def sh_lmax_for_count(n: int) -> int: ...
def eig_solve(a: NDArray[np.floating], values: NDArray[np.floating], vectors: Optional[NDArray[np.floating]],
              status: NDArray[np.int8], n: int, balance: int, max_iter: int, backend: int, threads: int,
              device: int) -> int: ...
def eig_max_n() -> int: ...
# tucker (bind_tucker.cpp): indices uint32 (nnz, order), values float32 (nnz,), model arrays
# float32 A(n) (I_n, J) and B(n) (J, R); (indices, values, dims) tuples of what the core allocates.
def tucker_limits() -> Tuple[int, int, int, int]: ...  # max order, min rank, max rank, default fiber threshold
def tucker_tns_read(path: str, order: int, dims: Optional[List[int]], queries: bool, cached: bool
                    ) -> Tuple[NDArray[np.uint32], NDArray[np.float32], List[int]]: ...
def tucker_tns_write(path: str, indices: NDArray[np.uint32], values: NDArray[np.float32], dims: List[int]) -> None: ...
def tucker_coo_check(indices: NDArray[np.uint32], values: NDArray[np.float32], dims: List[int], name: str) -> None: ...
def tucker_split(indices: NDArray[np.uint32], values: NDArray[np.float32], dims: List[int], test_fraction: float,
                 seed: int) -> Tuple[Tuple[NDArray[np.uint32], NDArray[np.float32], List[int]],
                                     Tuple[NDArray[np.uint32], NDArray[np.float32], List[int]]]: ...
def tucker_synth(dims: List[int], nnz: int, rank_j: int, rank_r: int, noise: float, popularity: float, unique: bool,
                 seed: int, threads: int, truth: bool
                 ) -> Tuple[Tuple[NDArray[np.uint32], NDArray[np.float32], List[int]],
                            Optional[Tuple[List[NDArray[np.float32]], List[NDArray[np.float32]]]]]: ...
def tucker_model_init(a: Sequence[NDArray[np.float32]], b: Sequence[NDArray[np.float32]], rank_j: int, rank_r: int,
                      seed: int, target_mean: float) -> None: ...
def tucker_predict(a: Sequence[NDArray[np.float32]], b: Sequence[NDArray[np.float32]], rank_j: int, rank_r: int,
                   indices: NDArray[np.uint32], out: NDArray[np.float32]) -> None: ...
def tucker_predict_dense(a: Sequence[NDArray[np.float32]], b: Sequence[NDArray[np.float32]], rank_j: int,
                         rank_r: int, out: NDArray[np.float32]) -> None: ...  # out: first index fastest
def tucker_evaluate(a: Sequence[NDArray[np.float32]], b: Sequence[NDArray[np.float32]], rank_j: int, rank_r: int,
                    indices: NDArray[np.uint32], values: NDArray[np.float32], dims: List[int], lambda_a: float,
                    lambda_b: float) -> Dict[str, float]: ...
def tucker_model_save(dir: str, a: Sequence[NDArray[np.float32]], b: Sequence[NDArray[np.float32]], rank_j: int,
                      rank_r: int, extra: str) -> None: ...
def tucker_model_load(dir: str) -> Tuple[List[NDArray[np.float32]], List[NDArray[np.float32]], int, int, str]: ...
def tucker_manifest_get(manifest: str, key: str) -> Optional[str]: ...
class TuckerSolver:
    def __init__(self, indices: NDArray[np.uint32], values: NDArray[np.float32], dims: List[int],
                 a: Sequence[NDArray[np.float32]], b: Sequence[NDArray[np.float32]], rank_j: int, rank_r: int,
                 backend: int, storage: int, double: int, lr_a: float, lr_b: float, lambda_a: float,
                 lambda_b: float, fiber_threshold: int, threads: int, device: int) -> None: ...
    def update_factors(self) -> None: ...
    def update_core(self) -> None: ...
    def model(self, a: Sequence[NDArray[np.float32]], b: Sequence[NDArray[np.float32]]) -> None: ...
    def timing(self) -> Tuple[float, float, float]: ...  # factor pass ms, core pass ms, set-up ms
    def close(self) -> None: ...
# pltf (bind_pltf.cpp): float64 C-order arrays; sizes map one index letter to its size.
def pltf_parse(model: str) -> Tuple[str, str, List[str]]: ...  # expanded text, observed indices, factors
def pltf_plan(model: str, sizes: Dict[str, int]) -> Tuple[str, float]: ...
def pltf_gtm(model: str, sizes: Dict[str, int], operands: Sequence[NDArray[np.float64]], out: NDArray[np.float64],
             backend: int, naive: int) -> None: ...
def pltf_fit(model: str, sizes: Dict[str, int], x: NDArray[np.float64], mask: Optional[NDArray[np.uint8]],
             factors: Sequence[NDArray[np.float64]], xhat: Optional[NDArray[np.float64]],
             divergence_out: Optional[NDArray[np.float64]], divergence: int, backend: int, iterations: int,
             seed: int, init_given: int, naive_gtm: int, track_divergence: int, threads: int, device: int,
             progress: Optional[Callable[[int, float], Optional[bool]]]
             ) -> Tuple[int, float, float, float]: ...  # iterations done, final divergence, iterate ms, total ms
def pltf_coupled_factors(models: Sequence[str], sizes: Sequence[Dict[str, int]], xs: Sequence[NDArray[np.float64]]
                         ) -> List[str]: ...
def pltf_fit_coupled(models: Sequence[str], sizes: Sequence[Dict[str, int]], xs: Sequence[NDArray[np.float64]],
                     masks: Sequence[Optional[NDArray[np.uint8]]], xhats: Sequence[NDArray[np.float64]],
                     factors: Sequence[NDArray[np.float64]], divergence_out: Optional[NDArray[np.float64]],
                     divergence: int, backend: int, iterations: int, seed: int, init_given: int,
                     track_divergence: int, threads: int, device: int,
                     progress: Optional[Callable[[int, float], Optional[bool]]]
                     ) -> Tuple[int, float, float, float]: ...
def pltf_has_cblas() -> bool: ...
# tracking (bind_tracking.cpp): sh float32 on the core's grid (dims i, j, k with i fastest),
# vox2world row-major 4 x 4, masks uint8 on the same grid, seed points float64 (n, 3).
class TrackingSettings:  # tk_tracking_options' fields, defaults from tk_tracking_options_init
    algorithm: int
    lmax: int
    basis: int
    legacy: int
    step_mm: float
    max_angle_deg: float
    cutoff: float
    min_length_mm: float
    max_length_mm: float
    unidirectional: int
    seed_direction: Tuple[float, float, float]
    rng_seed: int
    max_trials: int
    fod_power: float
    allow_nonfinite: int
    chunk_seeds: int
    backend: int
    threads: int
    device: int
    def __init__(self) -> None: ...
def tracking_track(sh: NDArray[np.float32], dims: Sequence[int], vox2world: Sequence[float],
                   settings: TrackingSettings, mask: Optional[NDArray[np.uint8]],
                   exclude: Optional[NDArray[np.uint8]], include: Sequence[NDArray[np.uint8]],
                   seed_mask: Optional[NDArray[np.uint8]], per_voxel: int, seed_points: Optional[NDArray[np.float64]],
                   sink: Callable[[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.float32], int, int],
                                  Optional[bool]]
                   ) -> Tuple[Dict[str, int], Dict[str, float], bool]: ...  # stats, resolved options, stopped
