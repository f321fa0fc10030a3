#!/usr/bin/python3
"""Prototype (numpy/scipy; not part of the library): a spectral start for sparse FastTucker, tried
on planted tensors where ALS-WR from a random start learns nothing (issue 26; the results are in
Documentation/benchmarks.md, "A spectral start").  The library has both since: the start
(session 23, `tk-tucker train --init spectral`) and the deflation round (session 24, `--deflate K`).

  scripts/tucker_spectral_start.py DATA.tns TRUTH_DIR RANK OUT_PREFIX [ITERS] [--tk build/bin/tk-tucker]

DATA.tns and TRUTH_DIR come from `tk-tucker synth ... --truth TRUTH_DIR` (the truth is used only
to report how well each mode's subspace was found).  The entries are split 99/1 (numpy seed 2)
into OUT_PREFIX_train.tns and OUT_PREFIX_test.tns; then, for each mode n, the top-J eigenvectors
of X(n) X(n)^T with its diagonal removed (Montanari and Sun's unfolding estimator), by subspace
iteration with two sparse products a step, never forming the Gram; A(n) = those vectors times
sqrt(I_n) (entries of unit mean square); the cores B(n) by alternating exact least squares over
the data with the A(n) fixed; that model written into OUT_PREFIX_spectral/ as a tk-tucker
checkpoint (the manifest of a one-iteration run, its iteration set back to 0), and
`tk-tucker train --resume` continues it with the library's defaults (ALS-WR) for ITERS iterations.
Then --rounds K (default 1) rounds of deflation, each from the model ALS converged to: each mode
keeps the directions of its C(n) = A(n) B(n) (weighted by the other modes' column norms) whose
singular values are above --keep (default 0.03) of the largest (ALS-WR leaves those it could not
fit at about 0; a tenth cut a direction in use at J = 8), the rest of its J columns are the top
eigenvectors of the residual's off-diagonal Gram (the components the first Gram's noise hid), the
cores are fitted again, and ALS runs ITERS more (OUT_PREFIX_deflated1/, ...).  The same training
from tk-tucker's own random start (OUT_PREFIX_random/) is the control.  Needs /usr/bin/python3
with numpy, scipy and pandas.
"""
import argparse
import subprocess
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp


def unfolding(idx, val, dims, n):
    """X(n) restricted to its observed columns: I_n x (distinct tuples of the other indices)."""
    col = np.zeros(len(val), np.int64)
    for k in range(len(dims)):
        if k != n:
            col = col * dims[k] + idx[:, k]
    _, cid = np.unique(col, return_inverse=True)
    X = sp.csr_matrix((val, (idx[:, n], cid)), shape=(dims[n], int(cid.max()) + 1))
    X.sum_duplicates()
    return X


def spectral_mode(X, J, iters=40, seed=0):
    """Top-J eigenvectors (largest algebraic) of X X^T - diag(X X^T): the diagonal holds each
    entry's own square, noise that would otherwise point the vectors at the busiest rows."""
    d = np.asarray(X.multiply(X).sum(1)).ravel()
    XT = X.T.tocsr()
    V = np.linalg.qr(np.random.default_rng(seed).standard_normal((X.shape[0], J)))[0]
    for _ in range(iters):
        V = np.linalg.qr(X @ (XT @ V) - d[:, None] * V)[0]
    H = V.T @ (X @ (XT @ V) - d[:, None] * V)
    w, Q = np.linalg.eigh((H + H.T) / 2)
    order = np.argsort(w)[::-1]
    return V @ Q[:, order], w[order]


def subspace_sines(U, A):
    """Sines of the principal angles between span(U) and span(A), ascending."""
    c = np.linalg.svd(np.linalg.qr(U)[0].T @ np.linalg.qr(A)[0], compute_uv=False)
    return np.sort(np.sqrt(np.clip(1 - c ** 2, 0, 1)))


def predict(C, idx):
    p = np.ones((len(idx), C[0].shape[1]))
    for n, c in enumerate(C):
        p *= c[idx[:, n]]
    return p.sum(1)


def rmse(C, idx, val):
    return float(np.sqrt(np.mean((val - predict(C, idx)) ** 2)))


def fit_cores(A, idx, val, R, sweeps=20, seed=0, chunk=200000):
    """B(n) (J x R) by alternating exact least squares with every A(n) fixed: for mode n the model
    is linear in B(n), x = sum_jr a_j B_jr q_r with q_r = prod_{k != n} C(k)[i_k][r]."""
    rng = np.random.default_rng(seed)
    N, J = len(A), A[0].shape[1]
    B = [rng.standard_normal((J, R)) for _ in range(N)]
    C = [a @ b for a, b in zip(A, B)]
    scale = (np.sqrt(np.mean(val ** 2)) / max(np.sqrt(np.mean(predict(C, idx) ** 2)), 1e-30)) ** (1.0 / N)
    B = [b * scale for b in B]
    C = [a @ b for a, b in zip(A, B)]
    for _ in range(sweeps):
        for n in range(N):
            G = np.zeros((J * R, J * R))
            h = np.zeros(J * R)
            for lo in range(0, len(val), chunk):
                ix = idx[lo:lo + chunk]
                q = np.ones((len(ix), R))
                for k in range(N):
                    if k != n:
                        q *= C[k][ix[:, k]]
                F = (A[n][ix[:, n]][:, :, None] * q[:, None, :]).reshape(len(ix), J * R)
                G += F.T @ F
                h += F.T @ val[lo:lo + chunk]
            G[np.diag_indices_from(G)] += 1e-6 * np.trace(G) / (J * R)  # a whisker of ridge: G may be singular
            B[n] = np.linalg.solve(G, h).reshape(J, R)
            C[n] = A[n] @ B[n]
    return B, C


def deflated_factors(A, B, idx, val, dims, J, keep_fraction):
    """Each mode's strong directions of the model, then the residual's spectral vectors."""
    C = [a @ b for a, b in zip(A, B)]
    res = val - predict(C, idx)
    out = []
    for n in range(len(A)):
        weight = np.prod([np.linalg.norm(C[k], axis=0) for k in range(len(A)) if k != n], axis=0)
        Uc, sv, _ = np.linalg.svd(C[n] * weight, full_matrices=False)
        keep = int(min(J - 1, max(1, (sv > keep_fraction * sv[0]).sum())))
        u, _ = spectral_mode(unfolding(idx, res, dims, n), J - keep)
        out.append(np.linalg.qr(np.hstack([Uc[:, :keep], u]))[0] * np.sqrt(dims[n]))
        print(f'  mode {n + 1}: kept {keep} of the model\'s directions (singular values / the largest '
              f'{np.round(sv / sv[0], 3)}), {J - keep} from the residual')
    return out


def write_tns(path, idx, val):
    pd.DataFrame({'i': idx[:, 0] + 1, 'j': idx[:, 1] + 1, 'k': idx[:, 2] + 1, 'v': val.astype(np.float32)}).to_csv(
        path, sep=' ', header=False, index=False, float_format='%.9g')


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('data')
    p.add_argument('truth')
    p.add_argument('rank', type=int)
    p.add_argument('prefix')
    p.add_argument('iters', type=int, nargs='?', default=30)
    p.add_argument('--tk', default='build/bin/tk-tucker')
    p.add_argument('--threads', default='2')
    p.add_argument('--rounds', type=int, default=1, help='deflation rounds after the first ALS (default 1)')
    p.add_argument('--keep', type=float, default=0.03,
                   help="a deflation keeps a mode's directions above this fraction of the largest (default 0.03)")
    a = p.parse_args()
    J = R = a.rank
    df = pd.read_csv(a.data, sep=' ', header=None, comment='#')
    idx = df.iloc[:, :3].to_numpy(np.int64) - 1
    val = df.iloc[:, 3].to_numpy(np.float64)
    man = open(f'{a.truth}/manifest.txt').read()
    dims = tuple(int(x) for x in man.split('dims = ')[1].split('\n')[0].split(','))
    At = [np.load(f'{a.truth}/A{n + 1}.npy').astype(float) for n in range(3)]
    Ct = [at @ np.load(f'{a.truth}/B{n + 1}.npy').astype(float) for n, at in enumerate(At)]
    test = np.random.default_rng(2).random(len(val)) < 0.01
    tr_i, tr_v, te_i, te_v = idx[~test], val[~test], idx[test], val[test]
    per_column = len(val) / (dims[1] * dims[2])
    ratio = len(val) / np.sqrt(np.prod(dims, dtype=float)) / R
    print(f'{a.data}: {dims}, {len(val)} entries, J = R = {R}; entries a column of X(1) {per_column:.2f}, '
          f'm / sqrt(I1 I2 I3) R {ratio:.2f}')
    print(f'test RMSE: predicting 0 {np.sqrt(np.mean(te_v ** 2)):.4f}, '
          f'the planted model {rmse(Ct, te_i, te_v):.4f}')
    train_f, test_f = f'{a.prefix}_train.tns', f'{a.prefix}_test.tns'
    write_tns(train_f, tr_i, tr_v)
    write_tns(test_f, te_i, te_v)
    t0 = time.time()
    U = []
    for n in range(3):
        u, w = spectral_mode(unfolding(tr_i, tr_v, dims, n), J)
        U.append(u * np.sqrt(u.shape[0]))
        sines = np.round(subspace_sines(u, At[n]), 3)
        print(f'mode {n + 1}: eigenvalues {np.round(w, 1)}; sines to the planted A({n + 1}) {sines}')
    B, C = fit_cores(U, tr_i, tr_v, R)
    print(f'spectral start ({time.time() - t0:.0f} s): train RMSE {rmse(C, tr_i, tr_v):.4f}, '
          f'test {rmse(C, te_i, te_v):.4f}', flush=True)

    def train(out, iters, resume=False):
        cmd = [a.tk, 'train', train_f, '--test', test_f, '--rank-j', str(J), '--rank-r', str(R), '--iters',
               str(iters), '--out', out, '--threads', a.threads, '--seed', '1', '--force', '-q']
        r = subprocess.run(cmd + (['--resume'] if resume else []), capture_output=True, text=True, check=True)
        return r.stdout + r.stderr

    def start_from(out, A, B):
        train(out, 1)  # a checkpoint whose manifest names these entries and settings
        for n in range(3):
            np.save(f'{out}/A{n + 1}.npy', A[n].astype(np.float32))
            np.save(f'{out}/B{n + 1}.npy', B[n].astype(np.float32))
        m = open(f'{out}/manifest.txt').read().replace('iteration = 1\n', 'iteration = 0\n')
        open(f'{out}/manifest.txt', 'w').write(m)
        return train(out, a.iters, resume=True)

    out = f'{a.prefix}_spectral'
    print('tk-tucker train from the spectral start:\n' + start_from(out, U, B), flush=True)
    for k in range(a.rounds):
        A = [np.load(f'{out}/A{n + 1}.npy').astype(float) for n in range(3)]
        B = [np.load(f'{out}/B{n + 1}.npy').astype(float) for n in range(3)]
        print(f'deflation round {k + 1}:')
        A = deflated_factors(A, B, tr_i, tr_v, dims, J, a.keep)
        for n in range(3):
            sines = np.round(subspace_sines(A[n], At[n]), 3)
            print(f'  mode {n + 1}: sines to the planted A({n + 1}) {sines}')
        B, C = fit_cores(A, tr_i, tr_v, R)
        print(f'  cores fitted again: train RMSE {rmse(C, tr_i, tr_v):.4f}, test {rmse(C, te_i, te_v):.4f}',
              flush=True)
        out = f'{a.prefix}_deflated{k + 1}'
        print(f'tk-tucker train after deflation round {k + 1}:\n' + start_from(out, A, B), flush=True)
    print('tk-tucker train from its random start:\n' + train(f'{a.prefix}_random', a.iters))


if __name__ == '__main__':
    main()
