"""Scalar operator logic written once, for Numba CPU, Numba-CUDA and the CUDA simulator.

`register_jitable` makes each function callable from `njit` and `cuda.jit` code and
plain Python (the simulator); `umulhi64` has an implementation per target. 64-bit
arithmetic uses explicit uint64 casts so that the simulator, which follows NumPy scalar
rules, wraps instead of raising.
Semantics: ../shared/OPS.md (Velox's).
"""

from __future__ import annotations

import math

import numpy as np
from numba import uint64
from numba.extending import overload, register_jitable

M64 = 0xFFFFFFFFFFFFFFFF
K_MUL = 0x9DDFEA08EB382D69


@register_jitable
def twang_mix64(k):
    k = uint64(k)
    k = uint64((~k) + uint64(k << uint64(21)))
    k = k ^ (k >> uint64(24))
    k = uint64(k + uint64(k << uint64(3)) + uint64(k << uint64(8)))
    k = k ^ (k >> uint64(14))
    k = uint64(k + uint64(k << uint64(2)) + uint64(k << uint64(4)))
    k = k ^ (k >> uint64(28))
    k = uint64(k + uint64(k << uint64(31)))
    return k


@register_jitable
def hash128to64(upper, lower):
    kmul = uint64(0x9DDFEA08EB382D69)
    a = uint64((uint64(lower) ^ uint64(upper)) * kmul)
    a = a ^ (a >> uint64(47))
    b = uint64((uint64(upper) ^ a) * kmul)
    b = b ^ (b >> uint64(47))
    return uint64(b * kmul)


@register_jitable
def sigrid_hash(x, salt, max_value):
    """Velox sigrid_hash of int64 `x`; max_value >= 1 is checked at pipeline build."""
    if max_value == 1:
        return np.int64(0)
    h = hash128to64(uint64(np.int64(salt)), twang_mix64(uint64(np.int64(x))))
    s = np.int64(h)  # reinterpret the 64 bits as signed
    r = s % np.int64(max_value)  # Python semantics: floor-mod, result in [0, m)
    return np.int64(r)


@register_jitable
def bucketize(v, borders, start, n):
    """Velox bucketize of float64 `v` against borders[start:start+n] (non-decreasing)."""
    if v != v:
        return np.int64(1) if n >= 2 else np.int64(0)
    lo = 0
    hi = n
    while lo < hi:  # first index with borders[i] >= v
        mid = (lo + hi) // 2
        if borders[start + mid] < v:
            lo = mid + 1
        else:
            hi = mid
    i = lo
    if i >= n - 1:
        return np.int64(i)
    if v < borders[start + i + 1]:
        return np.int64(i)
    return np.int64(i + 1)


@register_jitable
def logit(v, eps):
    """float32 in, float32 out; the logarithm is taken in float64 and rounded once."""
    e = np.float32(eps)
    one = np.float32(1.0)
    hi = np.float32(one - e)
    t = v
    if t < e:
        t = e
    if t > hi:
        t = hi
    r = np.float32(t / np.float32(one - t))
    return np.float32(math.log(np.float64(r)))


@register_jitable
def boxcox(v, lam):
    """float32; v <= 0 and NaN pass through. Powers in float64, rounded to float32."""
    if not (v > np.float32(0.0)):
        return v
    if lam == 0.0:
        return np.float32(math.log(np.float64(v)))
    p = np.float32(math.pow(np.float64(v), np.float64(np.float32(lam))))
    return np.float32(np.float32(p - np.float32(1.0)) / np.float32(lam))


@register_jitable
def onehot_class(v, low, high, num_classes):
    """Class of float32 `v`: trunc((v - low) / step), out of range (or NaN) -> 0."""
    step = np.float32(np.float32(np.float32(high) - np.float32(low)) / np.float32(num_classes))
    q = np.float32(np.float32(v - np.float32(low)) / step)
    if not (q >= np.float32(0.0)) or q >= np.float32(num_classes):
        return np.int64(0)
    return np.int64(q)


@register_jitable
def mapid(v, table, start, n):
    if v < 0 or v >= n:
        return np.int64(0)
    return np.int64(table[start + v])


@register_jitable
def round_to_int64(v):
    """float -> int64: round half away from zero (Presto CAST), NaN -> 0, saturating."""
    if v != v:
        return np.int64(0)
    x = np.float64(v)
    if x >= 9.2233720368547758e18:
        return np.int64(9223372036854775807)
    if x <= -9.2233720368547758e18:
        return np.int64(-9223372036854775807 - 1)
    r = math.floor(abs(x) + 0.5)
    return np.int64(r) if x >= 0 else np.int64(-r)


U32_LIMIT = 1 << 32


@register_jitable
def ngram_source(j, n, length):
    """Input index of output element j of ngram(n) over a list of `length`: window
    j // m plus offset j % m, m = min(n, length). In unsigned 32 bits where j fits (any
    list under 65,536 ids): the GPU's 64-bit signed division and floor-mod is a long
    instruction sequence, run for every element of an ngram's output."""
    m = n if n < length else length
    if 0 <= j < U32_LIMIT and 0 < m < U32_LIMIT:
        j32 = np.uint32(j)
        m32 = np.uint32(m)
        q = j32 // m32
        return np.int64(q) + np.int64(j32 - q * m32)
    return j // m + j % m


@register_jitable
def ngram_length(n, length):
    if length <= 0:
        return 0
    m = n if n < length else length
    return (length - m + 1) * m


def umulhi64(a, b):
    """High 64 bits of the 128-bit product of two uint64. Compiled, each target's own
    (overloads below): the GPU's multiply-high, 32-bit halves on the CPU; interpreted
    (the CUDA simulator), Python's integers."""
    return np.uint64((int(a) * int(b)) >> 64)


@register_jitable
def umulhi64_halves(a, b):
    """umulhi64 by schoolbook on 32-bit halves (no 128-bit type needed)."""
    mask = uint64(0xFFFFFFFF)
    a = uint64(a)
    b = uint64(b)
    a_lo = a & mask
    a_hi = a >> uint64(32)
    b_lo = b & mask
    b_hi = b >> uint64(32)
    p0 = uint64(a_lo * b_lo)
    p1 = uint64(a_lo * b_hi)
    p2 = uint64(a_hi * b_lo)
    p3 = uint64(a_hi * b_hi)
    mid = uint64((p0 >> uint64(32)) + (p1 & mask) + (p2 & mask))
    return uint64(p3 + (p1 >> uint64(32)) + (p2 >> uint64(32)) + (mid >> uint64(32)))


@overload(umulhi64, target="cpu")
def _umulhi64_cpu(a, b):
    return lambda a, b: umulhi64_halves(a, b)


@overload(umulhi64, target="cuda")
def _umulhi64_cuda(a, b):
    """libdevice's umul64hi, the GPU's own multiply-high: the modulo is most of
    sigrid_hash's instructions (bench/ops_gpu.py --only hash times the hash with it and
    with the halves)."""
    from numba.cuda import libdevice

    def impl(a, b):
        return uint64(libdevice.umul64hi(np.int64(a), np.int64(b)))
    return impl


@register_jitable
def umod_magic(n, d, magic, shift):
    """n mod d for d >= 2 by multiply-and-shift (Granlund & Montgomery 1994, fig. 4.1);
    `magic`, `shift` come from `division_magic(d)`."""
    n = uint64(n)
    t = umulhi64(uint64(np.int64(magic)), n)
    q = uint64((t + ((n - t) >> uint64(1))) >> uint64(shift))
    return uint64(n - uint64(q * uint64(d)))


@register_jitable
def sigrid_hash_magic(x, salt, max_value, magic, shift):
    """sigrid_hash with Velox's multiply-and-shift floor-mod instead of a 64-bit `%`."""
    if max_value == 1:
        return np.int64(0)
    h = hash128to64(uint64(np.int64(salt)), twang_mix64(uint64(np.int64(x))))
    d = uint64(max_value)
    # floor-mod of a negative s: d - 1 - ((-s - 1) mod d), and -s - 1 is ~s. One modulo
    # of the selected operand: as two branches, a warp whose hashes' signs differ (most
    # warps) ran both
    negative = np.int64(h) < 0
    r = umod_magic(~h if negative else h, d, magic, shift)
    return np.int64(d - uint64(1) - r) if negative else np.int64(r)


def division_magic(d: int) -> tuple[int, int]:
    """(magic as a wrapped int64, shift) for `umod_magic` by d >= 2 (host side)."""
    if d < 2:
        return 0, 0
    ell = (d - 1).bit_length()  # ceil(log2 d)
    magic = ((1 << 64) * ((1 << ell) - d)) // d + 1
    return (magic - (1 << 64) if magic >= 1 << 63 else magic), ell - 1
