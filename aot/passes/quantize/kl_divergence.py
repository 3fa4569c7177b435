"""The KL-divergence threshold of a tensor (``calibrate_mode="kl_divergence"``).

Design note
-----------
TensorRT's 8-bit calibration (Migacz, GTC 2017), as Relay computes it
(``src/relay/quantize/calibrate.cc``, ``MinimizeKL``, adapted from
MXNet): histogram the calibration values in ``num_bins`` (8001) bins over
``[-m, m]``, ``m = max |x|``; for each candidate threshold ``t`` (the edge
of a window of ``2i + 1`` bins around zero, ``i`` from
``num_quantized_bins // 2`` up), form

* ``p``: the window's histogram, with everything outside folded into its
  two end bins (the clipping the threshold causes);
* ``q``: the window merged into ``num_quantized_bins`` (255) groups of
  equal width, each group's count spread evenly over the bins of ``p``
  that are not empty (the rounding the quantization causes);

smooth both (empty bins get ``1e-4``, taken from the others) and keep the
threshold whose ``KL(p || q)`` is least.  The result is at most ``m``, so
the scale is at most the ``max`` mode's.  Relay's loop is transcribed
including its quirks (the window's first bin counts only in ``p``'s
folded end, ``q`` is spread over the non-empty bins of ``p``); each
candidate is vectorised with NumPy, so a tensor costs about 1 s.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kl_threshold"]

NUM_BINS = 8001
NUM_QUANTIZED_BINS = 255
EPS = 1e-4


def _smooth(p: np.ndarray, zeros: np.ndarray) -> np.ndarray | None:
    n_zeros = int(np.count_nonzero(zeros))
    n_nonzeros = p.size - n_zeros
    if n_nonzeros == 0:
        return None
    eps1 = EPS * n_zeros / n_nonzeros
    if eps1 >= 1.0:
        return None
    out = p - eps1
    out[zeros] = EPS
    return out


def _candidate(hist: np.ndarray, cum: np.ndarray, zero: int, i: int, nq: int) -> float:
    """KL(p || q) for the window of ``2i + 1`` bins around ``zero``
    (``cum``: the histogram's cumulative sums, from 0)."""
    start, stop = zero - i, zero + i + 1
    n = stop - start
    sliced = hist[start:stop].copy()
    sliced[0] = 0.0
    p = sliced.copy()
    p[0] = cum[start + 1]
    p[-1] += cum[-1] - cum[stop]
    merged = n // nq
    body = nq * merged
    groups = sliced[:body].reshape(nq, merged)
    counts = groups.sum(axis=1)
    nonzero = np.count_nonzero(groups, axis=1)
    counts[-1] += sliced[body:].sum()
    nonzero[-1] += np.count_nonzero(sliced[body:])
    spread = counts / np.maximum(nonzero, 1)        # a group without non-empty bins counts 0
    q = np.empty(n)
    q[:body] = np.repeat(spread, merged)
    q[body:] = spread[-1]
    p_zero = p == 0
    q[p_zero] = 0.0
    ps = _smooth(p, p_zero)
    qs = _smooth(q, q == 0)
    if ps is None or qs is None:
        return float("inf")
    ps /= ps.sum()
    qs /= qs.sum()
    return float(np.dot(ps, np.log(ps / qs)))


def kl_threshold(values: np.ndarray, num_bins: int = NUM_BINS,
                 num_quantized_bins: int = NUM_QUANTIZED_BINS) -> float:
    """The threshold ``t`` (quantize ``[-t, t]``) minimising the KL
    divergence between the values' distribution and its quantization."""
    arr = np.asarray(values, np.float64).ravel()
    if arr.size == 0:
        return 0.0
    thres = float(max(abs(arr.min()), abs(arr.max())))
    if thres == 0.0:
        return 0.0
    hist, edges = np.histogram(arr, bins=num_bins, range=(-thres, thres))
    hist = hist.astype(np.float64)
    cum = np.concatenate([[0.0], np.cumsum(hist)])
    zero = num_bins // 2
    half = num_quantized_bins // 2
    best, best_t = float("inf"), thres
    for i in range(half, zero + 1):
        d = _candidate(hist, cum, zero, i, num_quantized_bins)
        if d < best:
            best, best_t = d, float(edges[zero + i + 1])
    return best_t
