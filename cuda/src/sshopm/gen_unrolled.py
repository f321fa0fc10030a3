#!/usr/bin/env python3
"""Generate straight-line A·x^(m-1) kernels for fixed (order, dim).

Why generated: the seed's "unrolled" speed-up comes from turning the index walk
into straight-line code whose table look-ups are compile-time constants.  A
generator keeps that code exact for every (m, n) we ship and lets C (CPU) and
CUDA include the same text.

The kernel works on the prescaled table c[j*K1 + t] = A[rank(t + j)] * mult(t),
where t runs over the degree-(m-1) index classes in lexicographic order, so that
(A·x^(m-1))_j = sum_t c[j*K1+t] * x^t.  Monomials x^t are built once per call
by extending the monomial of t's prefix (common-subexpression elimination).

Usage: gen_unrolled.py OUT.h [M,N ...]   (default 2,3 4,3 6,3 8,3)

Also emits A x^(m-2) (the Hessian's matrix) the same way, for the fiber finder's Newton steps.
"""
import itertools
import math
import sys


def classes(degree, n):
    """Non-decreasing index tuples of the given degree, in lexicographic order."""
    return list(itertools.combinations_with_replacement(range(n), degree))


def multinomial(cls):
    out = math.factorial(len(cls))
    for v in set(cls):
        out //= math.factorial(cls.count(v))
    return out


def generate(m, n):
    unique = {c: r for r, c in enumerate(classes(m, n))}
    deg1 = classes(m - 1, n)
    k1 = len(deg1)
    name = f"{m}_{n}"
    lines = []
    lines.append(f"/* (m, n) = ({m}, {n}): K = {len(unique)} unique entries, "
                 f"K1 = {k1} degree-{m - 1} classes. */")
    lines.append(f"#define TK_UNROLLED_K1_{name} {k1}")
    # Prescale: c[j*K1 + t] = A[rank(t + j)] * mult(t).
    lines.append(f"TK_HD static inline void TK_SFX(tk_unrolled_prescale_{name})"
                 f"(const TK_REAL *TK_RESTRICT a, TK_REAL *TK_RESTRICT c)")
    lines.append("{")
    for j in range(n):
        for t, cls in enumerate(deg1):
            r = unique[tuple(sorted(cls + (j,)))]
            mult = multinomial(cls)
            rhs = f"a[{r}]" if mult == 1 else f"a[{r}] * (TK_REAL){mult}"
            lines.append(f"    c[{j * k1 + t}] = {rhs};")
    lines.append("}")
    # A·x^(m-1) from the prescaled table; x and y are separate registers.
    xs = ", ".join(f"TK_REAL x{i}" for i in range(n))
    ys = ", ".join(f"TK_REAL *TK_RESTRICT y{i}" for i in range(n))
    lines.append(f"TK_HD TK_ALWAYS_INLINE static inline void TK_SFX(tk_unrolled_axm1_{name})"
                 f"(const TK_REAL *TK_RESTRICT c, {xs}, {ys})")
    lines.append("{")
    have = {(): None}

    def var(cls):
        return "p" + "".join(str(i) for i in cls)

    for d in range(1, m):
        for cls in classes(d, n):
            if d == 1:
                continue
            prefix = cls[:-1]
            left = f"x{prefix[0]}" if len(prefix) == 1 else var(prefix)
            lines.append(f"    const TK_REAL {var(cls)} = {left} * x{cls[-1]};")
            have[cls] = True
    for j in range(n):
        terms = []
        for t, cls in enumerate(deg1):
            mono = f"x{cls[0]}" if len(cls) == 1 else var(cls)
            terms.append((f"c[{j * k1 + t}]", mono))
        acc = f"{terms[0][0]} * {terms[0][1]}"
        lines.append(f"    TK_REAL s{j} = {acc};")
        for coef, mono in terms[1:]:
            lines.append(f"    s{j} = TK_FMA({coef}, {mono}, s{j});")
        lines.append(f"    *y{j} = s{j};")
    lines.append("}")
    lines.extend(generate_axm2(m, n, unique))
    return "\n".join(lines)


def generate_axm2(m, n, unique):
    """A x^(m-2), the n x n matrix of the Hessian, for the pairs i <= j in row-major order
    of the upper triangle: c2[p*K2 + t] = A[rank(t + i + j)] * mult(t)."""
    deg2 = classes(m - 2, n)
    k2 = len(deg2)
    pairs = [(i, j) for i in range(n) for j in range(i, n)]
    name = f"{m}_{n}"
    lines = [f"#define TK_UNROLLED_K2_{name} {k2}"]
    lines.append(f"TK_HD static inline void TK_SFX(tk_unrolled_prescale2_{name})"
                 f"(const TK_REAL *TK_RESTRICT a, TK_REAL *TK_RESTRICT c2)")
    lines.append("{")
    for p, (i, j) in enumerate(pairs):
        for t, cls in enumerate(deg2):
            r = unique[tuple(sorted(cls + (i, j)))]
            mult = multinomial(cls) if cls else 1
            rhs = f"a[{r}]" if mult == 1 else f"a[{r}] * (TK_REAL){mult}"
            lines.append(f"    c2[{p * k2 + t}] = {rhs};")
    lines.append("}")
    xs = ", ".join(f"TK_REAL x{i}" for i in range(n))
    lines.append(f"TK_HD TK_ALWAYS_INLINE static inline void TK_SFX(tk_unrolled_axm2_{name})"
                 f"(const TK_REAL *TK_RESTRICT c2, {xs}, TK_REAL *TK_RESTRICT y)")
    lines.append("{")
    if m == 2:
        lines.append("    " + " ".join(f"(void)x{i};" for i in range(n)))

    def var(cls):
        return "q" + "".join(str(i) for i in cls)

    for d in range(2, m - 1):
        for cls in classes(d, n):
            prefix = cls[:-1]
            left = f"x{prefix[0]}" if len(prefix) == 1 else var(prefix)
            lines.append(f"    const TK_REAL {var(cls)} = {left} * x{cls[-1]};")
    for p, (i, j) in enumerate(pairs):
        terms = []
        for t, cls in enumerate(deg2):
            mono = "(TK_REAL)1" if not cls else (f"x{cls[0]}" if len(cls) == 1 else var(cls))
            terms.append((f"c2[{p * k2 + t}]", mono))
        lines.append(f"    TK_REAL s{p} = {terms[0][0]} * {terms[0][1]};")
        for coef, mono in terms[1:]:
            lines.append(f"    s{p} = TK_FMA({coef}, {mono}, s{p});")
        lines.append(f"    y[{i * n + j}] = s{p};")
        if i != j:
            lines.append(f"    y[{j * n + i}] = s{p};")
    lines.append("}")
    return lines


def main():
    out = sys.argv[1]
    shapes = [tuple(int(v) for v in s.split(",")) for s in sys.argv[2:]] or [(2, 3), (4, 3), (6, 3), (8, 3)]
    text = [
        "/* Generated by the build from cuda/src/sshopm/gen_unrolled.py; do not edit by hand. */",
        "/* Include after defining TK_REAL, TK_SFX(name), TK_FMA(a,b,c), TK_HD, TK_ALWAYS_INLINE and TK_RESTRICT;",
        "   it has no include guard on purpose (included once per precision). */",
    ]
    for m, n in shapes:
        text.append(generate(m, n))
    with open(out, "w") as f:
        f.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
