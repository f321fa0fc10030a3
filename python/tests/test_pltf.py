"""tensorkernels.pltf against NumPy: numpy.einsum for the GTM, the same multiplicative updates
written in NumPy (einsum for every D_n) for the fit, planted non-negative factors recovered,
and `tk-pltf` on the same data (when the tool is built)."""
import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import tensorkernels as tk
from conftest import built_tool, releases_gil

P = tk.pltf
BETA = {"kl": 1.0, "euclidean": 2.0, "is": 0.0}


def numpy_xhat(model, factors):
    return np.einsum(",".join(model.factors) + "->" + model.observed, *factors)


def numpy_mu(x, mask, model, factors, divergence, iterations):
    """The multiplicative updates of tk_pltf.h in NumPy: for every factor in turn,
    Z <- Z * (D(M X X^^(b-2)) / D(M X^^(b-1)))^g, D(Q) the einsum of Q with the other factors
    onto Z's indices; g = 1/2 for Itakura-Saito, else 1."""
    m = P.parse(model)
    z = [f.copy() for f in factors]
    obs = np.ones(x.shape, bool) if mask is None else mask.astype(bool)
    xv = np.where(obs, x, 0.0)
    b, g = BETA[divergence], 0.5 if divergence == "is" else 1.0
    divs = [numpy_divergence(xv, obs, numpy_xhat(m, z), divergence)]
    for _ in range(iterations):
        for f in range(len(z)):
            h = numpy_xhat(m, z)
            subs = [m.observed] + [s for k, s in enumerate(m.factors) if k != f]
            others = [zz for k, zz in enumerate(z) if k != f]
            spec = ",".join(subs) + "->" + m.factors[f]
            num = np.einsum(spec, np.where(obs, xv * h ** (b - 2), 0), *others)
            den = np.einsum(spec, np.where(obs, h ** (b - 1), 0), *others)
            z[f] = z[f] * np.where(den > 0, num / np.where(den > 0, den, 1), 1) ** g
        divs.append(numpy_divergence(xv, obs, numpy_xhat(m, z), divergence))
    return z, np.array(divs)


def numpy_divergence(x, obs, h, divergence):
    x, h = x[obs], h[obs]
    if divergence == "kl":
        return float(np.sum(np.where(x > 0, x * np.log(np.where(x > 0, x, 1) / h) - x, 0) + h))
    if divergence == "euclidean":
        return float(0.5 * np.sum((x - h) ** 2))
    return float(np.sum(x / h - np.log(x / h) - 1))


def planted_parafac(shape, rank, seed):
    rng = np.random.default_rng(seed)
    z = [rng.uniform(0.2, 1.5, (s, rank)) for s in shape]
    return z, np.einsum("ia,ja,ka->ijk", *z)


def test_parse_presets_and_errors():
    m = P.parse("tucker3")
    assert m == ("ijk=ip,jq,kr,pqr", "ijk", ("ip", "jq", "kr", "pqr")) and m.latent == "pqr"
    assert P.parse(" ij = ia , aj ").factors == ("ia", "aj")
    with pytest.raises(ValueError, match=r"position 5"):
        P.parse("ij=i#")
    with pytest.raises(TypeError, match="expected a str"):
        P.parse(3)


@pytest.mark.parametrize("model,subs,shapes", [
    ("parafac", "ia,ja,ka->ijk", [(4, 3), (5, 3), (6, 3)]),
    ("tucker3", "ip,jq,kr,pqr->ijk", [(4, 2), (5, 3), (3, 2), (2, 3, 2)]),
    ("ik=ij,jk", "ij,jk->ik", [(7, 5), (5, 3)]),
    ("ijl=ija,al,b", "ija,al,b->ijl", [(3, 4, 2), (2, 5), (3,)]),
])
def test_gtm_matches_einsum(model, subs, shapes):
    rng = np.random.default_rng(len(shapes))
    ops = [rng.standard_normal(s) for s in shapes]
    want = np.einsum(subs, *ops)
    got = P.gtm(model, ops)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(P.gtm(model, ops, naive=True), want, rtol=1e-12, atol=1e-12)
    out = np.empty(want.shape)
    assert P.gtm(model, ops, out=out, backend="omp") is out
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_gtm_refusals():
    a, b = np.ones((2, 3)), np.ones((4, 5))
    with pytest.raises(ValueError, match="index 'j' has size 4 here but 3"):
        P.gtm("ik=ij,jk", [a, b])
    with pytest.raises(TypeError, match="float32 is not float64"):
        P.gtm("ik=ij,jk", [a.astype(np.float32), np.ones((3, 2))])
    with pytest.raises(ValueError, match="not C-contiguous"):
        P.gtm("ik=ij,jk", [np.ones((3, 2)).T, np.ones((3, 2))])
    with pytest.raises(ValueError, match="2 factors, got 1"):
        P.gtm("ik=ij,jk", [a])
    desc, cost = P.plan("parafac", {"i": 4, "j": 5, "k": 6, "a": 2})
    assert "->ijk" in desc and cost > 0


@pytest.mark.parametrize("model,divergence,masked", [
    ("parafac", "kl", False), ("parafac", "kl", True), ("parafac", "euclidean", True), ("parafac", "is", True),
    ("tucker3", "kl", True), ("tucker3", "euclidean", False),
])
def test_fit_equals_numpy_updates(model, divergence, masked):
    m = P.parse(model)
    shape = (4, 5, 6)
    dims = {"a": 3} if model == "parafac" else {"p": 2, "q": 3, "r": 2}
    rng = np.random.default_rng(7)
    x = rng.uniform(0.1, 2.0, shape)
    mask = rng.random(shape) > 0.25 if masked else None
    if masked:
        x[~mask] = np.nan  # unobserved entries are never read
    sizes = dict(zip(m.observed, shape), **dims)
    init = [rng.uniform(0.5, 1.5, tuple(sizes[c] for c in f)) for f in m.factors]
    kept = [z.copy() for z in init]
    fit = P.fit(x, model, dims=dims, mask=mask, divergence=divergence, iterations=12, init=init, backend="cpu")
    want, divs = numpy_mu(x, mask, model, init, divergence, 12)
    for got, ref in zip(fit.factors, want):
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit.divergence, divs, rtol=1e-9)
    np.testing.assert_allclose(fit.xhat, numpy_xhat(m, fit.factors), rtol=1e-9)
    assert fit.iterations == 12 and fit.final_divergence == fit.divergence[-1]
    assert np.all(np.diff(fit.divergence) <= 1e-9 * fit.divergence[0])  # never increases
    for z, k in zip(init, kept):
        np.testing.assert_array_equal(z, k)  # init is not modified


def test_planted_factors_recovered_and_missing_entries_completed():
    z, x = planted_parafac((8, 9, 10), 2, seed=3)
    rng = np.random.default_rng(4)
    mask = rng.random(x.shape) > 0.1
    fit = P.fit(x, "parafac", dims={"a": 2}, mask=mask, iterations=2000, seed=1, backend="cpu")
    assert fit.final_divergence < 1e-6 * fit.divergence[0], (fit.divergence[0], fit.final_divergence)
    held_out = ~mask
    np.testing.assert_allclose(fit.xhat[held_out], x[held_out], rtol=1e-2)
    # the factors are the planted ones up to scale and the order of the components
    for got, ref in zip(fit.factors, z):
        g = got / np.linalg.norm(got, axis=0)
        r = ref / np.linalg.norm(ref, axis=0)
        cos = np.abs(g.T @ r)
        assert np.all(cos.max(axis=0) > 0.995), cos


def test_fit_refusals_name_the_problem():
    x = np.ones((3, 4, 5))
    with pytest.raises(TypeError, match=r"x: dtype float32 .*astype\(numpy.float64\)"):
        P.fit(x.astype(np.float32), "parafac", dims={"a": 2})
    with pytest.raises(ValueError, match="no size given for index 'a'"):
        P.fit(x, "parafac")
    with pytest.raises(ValueError, match="observes 3"):
        P.fit(np.ones((3, 4)), "parafac", dims={"a": 2})
    with pytest.raises(ValueError, match="dims sets observed index 'i' to 9"):
        P.fit(x, "parafac", dims={"a": 2, "i": 9})
    bad = x.copy()
    bad[1, 2, 3] = -1
    with pytest.raises(ValueError, match=r"pltf.fit: observed entry \d+ is negative .*KL"):
        P.fit(bad, "parafac", dims="a=2")
    P.fit(bad, "parafac", dims="a=2", divergence="euclidean", iterations=2)  # fine there
    with pytest.raises(ValueError, match="mask: shape"):
        P.fit(x, "parafac", dims="a=2", mask=np.ones((3, 4), bool))
    with pytest.raises(ValueError, match="the mask leaves no observed entry"):
        P.fit(x, "parafac", dims="a=2", mask=np.zeros(x.shape, bool))
    with pytest.raises(ValueError, match="divergence must be"):
        P.fit(x, "parafac", dims="a=2", divergence="beta")
    with pytest.raises(ValueError, match="start of factor 0"):
        P.fit(x, "parafac", dims="a=2", init=[-np.ones((3, 2)), np.ones((4, 2)), np.ones((5, 2))])


def test_progress_stops_and_errors_propagate():
    _, x = planted_parafac((5, 6, 7), 2, seed=5)
    seen = []
    fit = P.fit(x, "parafac", dims={"a": 2}, iterations=100, backend="cpu",
                progress=lambda it, info: seen.append((it, info["divergence"])) or it < 4)
    assert [it for it, _ in seen] == [0, 1, 2, 3, 4] and fit.iterations == 4
    np.testing.assert_array_equal(fit.divergence, [d for _, d in seen])

    def boom(it, info):
        raise RuntimeError("from the callback")
    with pytest.raises(RuntimeError, match="from the callback"):
        P.fit(x, "parafac", dims={"a": 2}, iterations=10, progress=boom)


def test_fit_releases_the_gil_and_stops_on_ctrl_c():
    rng = np.random.default_rng(2)
    x = rng.uniform(0.1, 1.0, (60, 60, 60))
    seconds, _ = releases_gil(lambda: P.fit(x, "parafac", dims={"a": 10}, iterations=20, backend="cpu"))
    per_iter = seconds / 20
    timer = threading.Timer(5 * per_iter, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        P.fit(x, "parafac", dims={"a": 10}, iterations=100000, backend="cpu")
    timer.join()
    assert time.perf_counter() - t0 < 5 * per_iter + 3 * per_iter + 1.0


@pytest.mark.skipif(built_tool("tk-pltf") is None, reason="tk-pltf not built (TK_BUILD_DIR/bin)")
def test_same_fit_as_tk_pltf(tmp_path):
    rng = np.random.default_rng(11)
    x = rng.uniform(0.1, 2.0, (4, 5, 6))
    mask = (rng.random(x.shape) > 0.2).astype(np.uint8)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "m.npy", mask)
    run = subprocess.run([built_tool("tk-pltf"), "--model", "tucker3", "--input", str(tmp_path / "x.npy"),
                          "--mask", str(tmp_path / "m.npy"), "--dims", "p=2,q=3,r=2", "--out", str(tmp_path / "fit"),
                          "--iters", "25", "--seed", "5", "--backend", "cpu", "--quiet"],
                         check=True, capture_output=True, text=True)
    fit = P.fit(x, "tucker3", dims="p=2,q=3,r=2", mask=mask, iterations=25, seed=5, backend="cpu")
    for name, z in zip(P.parse("tucker3").factors, fit.factors):
        np.testing.assert_array_equal(np.load(tmp_path / "fit" / f"{name}.npy"), z)
    np.testing.assert_array_equal(np.load(tmp_path / "fit" / "xhat.npy"), fit.xhat)
    printed = np.loadtxt(run.stdout.splitlines(), comments="#")
    np.testing.assert_allclose(printed[:, 1], fit.divergence, rtol=1e-9)


def numpy_coupled(views, factors, divergence, iterations):
    """Coupled multiplicative updates in NumPy: each distinct factor in turn (the order of
    `factors`), its numerator and denominator summed over the views that hold it."""
    b, g = BETA[divergence], 0.5 if divergence == "is" else 1.0
    z = {k: v.copy() for k, v in factors.items()}
    parsed = [(np.where(mask, x, 0.0), mask.astype(bool), P.parse(model)) for x, model, mask in views]

    def xhat(m):
        return np.einsum(",".join(m.factors) + "->" + m.observed, *[z[f] for f in m.factors])

    def total():
        return sum(numpy_divergence(x, obs, xhat(m), divergence) for x, obs, m in parsed)
    divs = [total()]
    for _ in range(iterations):
        for name in z:
            num = np.zeros_like(z[name])
            den = np.zeros_like(z[name])
            for x, obs, m in parsed:
                if name not in m.factors:
                    continue
                h = xhat(m)
                others = [f for f in m.factors if f != name]
                spec = ",".join([m.observed] + others) + "->" + name
                num += np.einsum(spec, np.where(obs, x * h ** (b - 2), 0), *[z[f] for f in others])
                den += np.einsum(spec, np.where(obs, h ** (b - 1), 0), *[z[f] for f in others])
            z[name] = z[name] * np.where(den > 0, num / np.where(den > 0, den, 1), 1) ** g
        divs.append(total())
    return z, np.array(divs)


@pytest.mark.parametrize("divergence", ["kl", "euclidean", "is"])
def test_coupled_fit_equals_numpy_updates(divergence):
    rng = np.random.default_rng(12)
    x1 = rng.uniform(0.1, 2.0, (6, 5, 4))  # ijk
    x2 = rng.uniform(0.1, 2.0, (6, 7))     # il
    m1 = rng.random(x1.shape) > 0.2
    m2 = rng.random(x2.shape) > 0.2
    views = [(x1, "ijk=ia,ja,ka", m1), (x2, "il=ia,la", m2)]
    names = ["ia", "ja", "ka", "la"]
    sizes = {"i": 6, "j": 5, "k": 4, "l": 7, "a": 3}
    init = {n: rng.uniform(0.5, 1.5, tuple(sizes[c] for c in n)) for n in names}
    fit = P.fit_coupled(views, dims={"a": 3}, divergence=divergence, iterations=10, init=init, backend="cpu")
    assert list(fit.factors) == names  # view 0's factors, then the new one of view 1
    want, divs = numpy_coupled([(x1, "ijk=ia,ja,ka", m1), (x2, "il=ia,la", m2)], init, divergence, 10)
    for n in names:
        np.testing.assert_allclose(fit.factors[n], want[n], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit.divergence, divs, rtol=1e-9)
    np.testing.assert_allclose(fit.xhat[1], np.einsum("ia,la->il", fit.factors["ia"], fit.factors["la"]), rtol=1e-9)
    assert np.all(np.diff(fit.divergence) <= 1e-9 * fit.divergence[0])


def test_coupled_fit_refusals_and_planted_sharing():
    rng = np.random.default_rng(13)
    a, b, c = (rng.uniform(0.2, 1.5, (n, 2)) for n in (8, 9, 10))
    x1, x2 = a @ b.T, a @ c.T  # ij and ik share the rows of a
    fit = P.fit_coupled([(x1, "ij=ia,ja"), (x2, "ik=ia,ka")], dims="a=2", iterations=3000, seed=2, backend="cpu")
    assert fit.final_divergence < 1e-6 * fit.divergence[0]
    np.testing.assert_allclose(fit.xhat[0], x1, rtol=1e-3)
    np.testing.assert_allclose(fit.xhat[1], x2, rtol=1e-3)
    with pytest.raises(ValueError, match="index 'i' has size 7 here but 8"):
        P.fit_coupled([(x1, "ij=ia,ja"), (np.ones((7, 10)), "ik=ia,ka")], dims="a=2")
    with pytest.raises(ValueError, match=r"view 1: observed entry \d+ is negative"):
        P.fit_coupled([(x1, "ij=ia,ja"), (-x2, "ik=ia,ka")], dims="a=2")
    with pytest.raises(ValueError, match="expected the factors"):
        P.fit_coupled([(x1, "ij=ia,ja"), (x2, "ik=ia,ka")], dims="a=2", init={"ia": a})


def test_engines_agree():
    # the seed's naive GTM and the OpenMP engine fit what the planned CPU engine fits
    rng = np.random.default_rng(21)
    x = rng.uniform(0.1, 2.0, (5, 6, 7))
    mask = rng.random(x.shape) > 0.3
    ref = P.fit(x, "tucker3", dims="p=2,q=3,r=2", mask=mask, iterations=10, seed=4, backend="cpu")
    for kwargs in ({"naive_gtm": True, "backend": "cpu"}, {"backend": "omp", "threads": 2}):
        other = P.fit(x, "tucker3", dims="p=2,q=3,r=2", mask=mask, iterations=10, seed=4, **kwargs)
        for a, b in zip(other.factors, ref.factors):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(other.divergence, ref.divergence, rtol=1e-10)
    quiet = P.fit(x, "tucker3", dims="p=2,q=3,r=2", mask=mask, iterations=10, seed=4, backend="cpu",
                  track_divergence=False, progress=lambda it, info: None)
    assert quiet.iterations == 10 and np.isnan(quiet.divergence[:-1]).all()
    np.testing.assert_allclose(quiet.final_divergence, ref.final_divergence, rtol=1e-12)
