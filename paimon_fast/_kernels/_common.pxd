# cython: language_level=3
"""Checks shared by the kernels (cimported; inline, nothing compiled on its own)."""
from libc.stdint cimport int32_t, int64_t

ctypedef fused offset_t:
    int32_t
    int64_t


cdef inline int check_offsets(const offset_t[::1] offsets, Py_ssize_t data_len) except -1:
    """Raise ValueError unless Arrow-style offsets are non-negative, non-decreasing
    and end inside a data buffer of ``data_len`` bytes (checked before any read)."""
    cdef Py_ssize_t i, n = offsets.shape[0]
    cdef bint bad = False
    with nogil:
        if n and offsets[0] < 0:
            bad = True
        for i in range(1, n):
            if offsets[i] < offsets[i - 1]:
                bad = True
                break
        if n and offsets[n - 1] > data_len:
            bad = True
    if bad:
        raise ValueError("variable-width offsets are negative, decreasing or past the data buffer")
    return 0
