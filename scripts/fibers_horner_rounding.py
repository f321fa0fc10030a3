#!/usr/bin/python3
"""The float rounding of two ways to evaluate the degree-M polynomial on the fiber finder's grid
(Documentation/benchmarks.md, "Fiber directions", sessions 27 and 29): the homogeneous Horner
(fibers_device.cuh poly_value_f: a multiply and an add a coefficient; the CUDA grid pass's
until session 29) against the dehomogenized Horner of the grid pass since (poly_value_pivot:
divide by the largest coordinate, then one multiply-add a coefficient in the two ratios, times
the pivot's M-th power), in IEEE single precision step by step (numpy float32, no fused
multiply-add in either), on 40 FOD-like series (1-3 spikes of (d.x)^M plus coefficient noise,
unit-scaled as the kernel scales them) at the directions of the lmax-M grid (the upper half of
a Fibonacci lattice of twice GRID points, fibers_tables.c: GRID = 24 M^2, at least 200).
Prints the median and largest error against double, relative to the series' largest value on
the grid.

    /usr/bin/python3 scripts/fibers_horner_rounding.py [M [GRID]]     (default 8 1536)
"""
import numpy as np, math, itertools
rng=np.random.default_rng(1)
import sys
M=int(sys.argv[1]) if len(sys.argv)>1 else 8
# monomials x^a y^b z^c, a+b+c=M, ordered by c descending groups like poly_offset: c then k (power of y)
def coeffs_from_spikes(dirs, w):
    C={}
    for (a,b,c) in [(M-c-k,k,c) for c in range(M+1) for k in range(M-c+1)]:
        mult=math.factorial(M)/(math.factorial(a)*math.factorial(b)*math.factorial(c))
        C[(a,b,c)]=sum(wi*mult*d[0]**a*d[1]**b*d[2]**c for d,wi in zip(dirs,w))
    return C
g=int(sys.argv[2]) if len(sys.argv)>2 else max(24*M*M, 200)
i=np.arange(g); z=1-(2*i+1)/(2*g); rho=np.sqrt(1-z*z); ang=i*math.pi*(3-math.sqrt(5))
X=np.stack([rho*np.cos(ang),rho*np.sin(ang),z],1)
f32=np.float32
def homog(C,X):
    x,y,zz=[X[:,j].astype(f32) for j in range(3)]
    p=[np.ones_like(y)]
    for k in range(1,M+1): p.append((p[-1]*y).astype(f32))
    r=np.zeros_like(x)
    for c in range(M,-1,-1):
        n=M-c
        s=np.full_like(x,f32(C[(n,0,c)]))
        for k in range(1,n+1):
            s=(s*x + (f32(C[(n-k,k,c)])*p[k]).astype(f32)).astype(f32)
        r=(r*zz+s).astype(f32)
    return r
def dehom(C,X):
    out=np.zeros(len(X),dtype=f32)
    piv=np.argmax(np.abs(X),1)
    for pv in range(3):
        sel=piv==pv; Y=X[sel].astype(f32)
        o=[j for j in range(3) if j!=pv]
        P=Y[:,pv]; inv=(f32(1)/P).astype(f32)
        t=(Y[:,o[0]]*inv).astype(f32); u=(Y[:,o[1]]*inv).astype(f32)
        # R(t,u)=sum coef * t^a u^b where monomial has pivot power M-a-b
        r=np.zeros(len(Y),dtype=f32)
        for b in range(M,-1,-1):
            s=np.zeros(len(Y),dtype=f32)
            for a in range(M-b,-1,-1):
                e=[0,0,0]; e[pv]=M-a-b; e[o[0]]=a; e[o[1]]=b
                s=(s*t+f32(C[tuple(e)])).astype(f32)
            r=(r*u+s).astype(f32)
        pm=(P.astype(np.float64)**M).astype(f32)  # the plan's p^M: worked out in double, rounded once
        out[sel]=(r*pm).astype(f32)
    return out
def exact(C,X):
    return sum(C[(a,b,c)]*X[:,0]**a*X[:,1]**b*X[:,2]**c for (a,b,c) in C)
eh=[];ed=[]
for trial in range(40):
    n=rng.integers(1,4); d=rng.normal(size=(n,3)); d/=np.linalg.norm(d,axis=1)[:,None]
    C=coeffs_from_spikes(d, rng.uniform(0.3,1,n))
    C={k:v+rng.normal()*0.02 for k,v in C.items()}
    big=max(abs(v) for v in C.values()); C={k:v/big for k,v in C.items()}
    ex=exact(C,X); scale=np.abs(ex).max()
    eh.append(np.abs(homog(C,X)-ex).max()/scale); ed.append(np.abs(dehom(C,X)-ex).max()/scale)
print("homogeneous Horner: median %.2e max %.2e"%(np.median(eh),max(eh)))
print("dehomogenized   : median %.2e max %.2e"%(np.median(ed),max(ed)))
