# cython: language_level=3
"""The native Parquet reader (``csrc/pq_read.h``): chosen rows of flat columns of many files,
decoded in parallel without the GIL straight into the output buffers.

:func:`read` takes the job as arrays (one row of :data:`FIELDS` per column chunk, the wanted
rows of each row group, the output buffers numpy allocated) and returns each chunk's status;
the Parquet reader module of the io layer (``native``) builds the job from the files' footers and
makes Arrow arrays of the buffers.  The pure-Python twin is ``reference/pqread.py``.
"""
from libc.stdint cimport uint8_t, int32_t, int64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset
from cpython.buffer cimport PyBuffer_FillInfo

import os

import numpy as np

cdef extern from "<sys/mman.h>" nogil:
    void *mmap(void *addr, size_t length, int prot, int flags, int fd, long offset)
    int munmap(void *addr, size_t length)
    void *MAP_FAILED
    int PROT_READ
    int MAP_SHARED

cdef extern from "<errno.h>":
    int errno

cdef extern from "pq_read.h" nogil:
    ctypedef struct pq_file:
        int fd
        int nseg
        const int64_t *seg_off
        const int64_t *seg_len
        const uint8_t *const *seg_ptr
        int64_t size
        int mapped

    ctypedef struct pq_col:
        int32_t kind, width
        int64_t n
        uint8_t *values
        uint8_t *valid
        void *offsets
        uint8_t *data
        int64_t data_len
        size_t data_cap
        int32_t overflow

    ctypedef struct pq_chunk:
        int64_t f[17]
        int32_t status
        int64_t err_at
        char err[160]
        int64_t pages_total, pages_read, bytes_read, nulls

    ctypedef struct pq_job:
        int nfiles
        pq_file *files
        int ncols
        pq_col *cols
        int64_t nchunks
        pq_chunk *chunks
        const int64_t *rows
        int nthreads

    int pq_run(pq_job *job)
    void pq_set_shrink(const char *path, int64_t size, int phase)
    void pq_release()
    int64_t pq_parallel_min
    void pq_set_parallel_min(int64_t v)
    int pq_pool_on
    int64_t pq_pool_spin_ns
    void pq_set_pool(int on, int64_t spin_ns)
    int64_t pq_keep_dict_max
    void pq_set_keep_dict_max(int64_t v)
    void pq_set_cache(size_t max, int64_t decay_ns)
    void pq_cache_state(size_t *bytes, int64_t *count)
    int pq_keep_bodies
    void pq_set_keep_bodies(int v)
    void pq_bfree(void *p, size_t cap)
    int pq_codec_available(int codec)
    int c_PQ_OK "PQ_OK"
    int c_PQ_NOMEM "PQ_NOMEM"
    int c_CK_FIELDS "CK_FIELDS"
    int c_CK_POSITIONS "CK_POSITIONS"
    int c_CK_EVERY "CK_EVERY"
    int c_CK_RANGE "CK_RANGE"
    int c_CK_COL "CK_COL"
    int c_CK_CONV "CK_CONV"
    int c_CK_LEN "CK_LEN"
    int c_CV_NULL "CV_NULL"

# the columns of the chunk table (csrc/pq_read.h, CK_*)
FIELDS = ("file", "col", "physical", "type_len", "codec", "max_def", "conv", "start", "len", "oi_off", "oi_len",
          "rg_rows", "num_values", "rows_off", "nsel", "all", "out_at")
# which rows of its row group a chunk wants (``all``): the positions in ``rows``, every row, or
# ``nsel`` rows from the group's row ``rows_off`` on
CK_POSITIONS, CK_EVERY, CK_RANGE = c_CK_POSITIONS, c_CK_EVERY, c_CK_RANGE
# statuses (csrc/pq_codec.h)
OK, CORRUPT, UNSUPPORTED, NOMEM, IO = 0, 1, 2, 3, 4
# output kinds and conversions (csrc/pq_read.h)
OUT_FIXED, OUT_BOOL, OUT_BYTES, OUT_LBYTES = 0, 1, 2, 3
(CV_COPY, CV_I32_1, CV_I32_2, CV_INT96_NS, CV_DEC_I32, CV_DEC_I64, CV_DEC_BE, CV_I32_I64, CV_U32_I64, CV_F32_F64,
 CV_NULL) = range(11)


cdef class FileMap:
    """A local file mapped read-only into memory (``mmap``, ``MAP_SHARED``): its bytes as a
    read-only buffer, unmapped when the last reference goes.  The reader takes it as the file's
    one segment and reads the pages in place, with no copy; a file that shrinks under it while it
    is read fails its chunks as a short read does (``csrc/pq_read.h``, "mapped files that shrink"),
    never the process.  The mapping holds no file descriptor."""

    cdef void *addr
    cdef readonly Py_ssize_t size

    def __cinit__(self, int fd, Py_ssize_t size):
        self.addr = NULL
        self.size = 0
        if size <= 0:
            raise ValueError(f"cannot map {size} bytes")
        cdef void *a = mmap(NULL, <size_t>size, PROT_READ, MAP_SHARED, fd, 0)
        if a == MAP_FAILED:
            raise OSError(errno, "mmap failed")
        self.addr = a
        self.size = size

    def __dealloc__(self):
        if self.addr != NULL:
            munmap(self.addr, <size_t>self.size)
            self.addr = NULL

    def __getbuffer__(self, Py_buffer *buffer, int flags):
        PyBuffer_FillInfo(buffer, self, self.addr, self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer *buffer):
        pass


def _shrink_at(path, int64_t size, int phase):
    """Tests: the next read truncates ``path`` to ``size`` bytes just before its phase ``phase``
    (0 pages located, 1 pages decoded, 2 byte arrays copied) runs: a file that shrinks while it
    is read.  ``path`` None: no more."""
    if path is None:
        pq_set_shrink(NULL, 0, -1)
    else:
        b = os.fsencode(path)
        pq_set_shrink(b, size, phase)


def release_memory():
    """Free the buffers the reader keeps between reads (decompression scratch, and the buffers of
    :func:`set_buffer_cache`)."""
    with nogil:
        pq_release()


def _set_parallel_min(int64_t v):
    """Tests: the work (bytes, about) below which a phase of a read runs on one thread; returns
    the value before (0: every phase with two items or more uses the threads asked for)."""
    cdef int64_t old = pq_parallel_min
    pq_set_parallel_min(v)
    return old


def _set_pool(bint on, int64_t spin_ns=-1):
    """Tests and benchmarks: run a read's phases on the reader's kept threads (``on``) or on
    threads started for each phase; ``spin_ns`` (>= 0) sets how long a kept thread waits for work
    spinning before it sleeps.  Returns ``(on, spin_ns)`` as they were."""
    old = (bool(pq_pool_on), pq_pool_spin_ns)
    pq_set_pool(on, spin_ns)
    return old


def set_buffer_cache(size_t max_bytes, double decay_seconds):
    """Keep at most ``max_bytes`` of the reader's freed buffers of 64 KiB to 128 MiB (page bytes,
    outputs' bytes once Arrow lets go of them) for the next reads, each at most ``decay_seconds``
    unused (``max_bytes`` 0: keep none).  When more than a new ``max_bytes`` is kept, all of it is
    freed now."""
    if not decay_seconds >= 0:
        raise ValueError("decay_seconds must be >= 0")
    if decay_seconds > 1e9:  # (about 31 years: as good as never, and within int64 nanoseconds)
        decay_seconds = 1e9
    pq_set_cache(max_bytes, <int64_t>(decay_seconds * 1e9))


def buffer_cache():
    """``(bytes, buffers)`` the reader keeps now for its next reads."""
    cdef size_t b = 0
    cdef int64_t n = 0
    pq_cache_state(&b, &n)
    return int(b), int(n)


def _set_keep_dict_max(int64_t v):
    """Tests: the largest dictionary of byte arrays (bytes) a column chunk keeps until its pages'
    bytes are copied out, so that they are copied once; returns the value before (-1: none kept,
    every page copies its values into a buffer of its own first)."""
    cdef int64_t old = pq_keep_dict_max
    pq_set_keep_dict_max(v)
    return old


def _set_keep_bodies(bint v):
    """Tests: whether a page whose values are all read keeps its decompressed body until its bytes
    are copied out (so that they are copied once); returns the value before."""
    cdef bint old = pq_keep_bodies
    pq_set_keep_bodies(v)
    return old


def codec_available(int codec):
    """Whether this process decompresses Parquet pages of ``codec`` (parquet.thrift's number)
    natively (ZSTD, GZIP and BROTLI need the system's libzstd / libz / libbrotlidec)."""
    return bool(pq_codec_available(codec))


cdef class DataBuffer:
    """Bytes the reader allocated (a byte-array column's values), given back to the reader's
    buffers with this object (the next read reuses them); exposes the buffer protocol, so
    ``pyarrow.py_buffer(obj)`` wraps it without a copy."""
    cdef uint8_t *ptr
    cdef Py_ssize_t size
    cdef size_t cap

    def __dealloc__(self):
        pq_bfree(self.ptr, self.cap)
        self.ptr = NULL

    def __len__(self):
        return self.size

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, <void *>self.ptr, self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass


cdef DataBuffer _own(uint8_t *p, int64_t n, size_t cap):
    cdef DataBuffer d = DataBuffer.__new__(DataBuffer)
    d.ptr = p
    d.size = n
    d.cap = cap
    return d


def read(list files, const int64_t[:, ::1] chunks, const int64_t[::1] rows, list cols, int threads):
    """Run one read.

    ``files``: per file ``(fd, size, segments)``: an open descriptor read with pread (segments
    None), or fd -1 and ``[(offset, bytes-like), ...]`` holding the parts of the file that are
    read.  ``chunks``: one row of :data:`FIELDS` per column chunk.  ``rows``: the wanted rows of
    each chunk's row group (``rows[rows_off:rows_off + nsel]``, sorted).  ``cols``: per output
    column ``(kind, width, n, values, valid, offsets)`` with uint8 ``values`` (n * width bytes,
    or n for booleans) and ``valid`` (n, or None) and zeroed int32 / int64 ``offsets`` (n + 1,
    byte arrays).

    Returns ``(status, err_at, errors, stats, data, overflow, summary)``: per chunk its status,
    the file offset and text of its error, ``[pages in the chunk, pages read, bytes read, slots
    made null]``; per column the :class:`DataBuffer` of its byte arrays (or None) and whether int32
    offsets overflowed; ``summary`` sums them up: ``(pages in the chunks, pages read, bytes read,
    bytes of the chunks read (not columns of nulls), chunks read that decoded, [slots made null per
    column], [chunks that did not decode])``.
    """
    cdef Py_ssize_t nf = len(files), nc = len(cols), nk = chunks.shape[0], i, j, s
    cdef int64_t pages_total = 0, pages_read = 0, bytes_read = 0, bytes_total = 0, columns_ok = 0
    if chunks.shape[1] != c_CK_FIELDS:
        raise ValueError(f"chunk table of {chunks.shape[1]} columns, {c_CK_FIELDS} expected")
    cdef pq_job job
    memset(&job, 0, sizeof(job))
    cdef pq_file *pf = <pq_file *>calloc(nf if nf else 1, sizeof(pq_file))
    cdef pq_col *pc = <pq_col *>calloc(nc if nc else 1, sizeof(pq_col))
    cdef pq_chunk *pk = <pq_chunk *>calloc(nk if nk else 1, sizeof(pq_chunk))
    cdef int64_t **seg_off = <int64_t **>calloc(nf if nf else 1, sizeof(int64_t *))
    cdef int64_t **seg_len = <int64_t **>calloc(nf if nf else 1, sizeof(int64_t *))
    cdef const uint8_t ***seg_ptr = <const uint8_t ***>calloc(nf if nf else 1, sizeof(uint8_t **))
    cdef const uint8_t[::1] mv
    cdef uint8_t[::1] u8
    cdef int32_t[::1] o32
    cdef int64_t[::1] o64
    cdef int rc
    keep = []  # the memoryviews whose pointers the job holds
    try:
        if not pf or not pc or not pk or not seg_off or not seg_len or not seg_ptr:
            raise MemoryError()
        for i in range(nf):
            fd, size, segments = files[i]
            pf[i].fd = fd
            pf[i].size = size
            if segments is not None:
                pf[i].fd = -1
                s = len(segments)
                seg_off[i] = <int64_t *>calloc(s if s else 1, sizeof(int64_t))
                seg_len[i] = <int64_t *>calloc(s if s else 1, sizeof(int64_t))
                seg_ptr[i] = <const uint8_t **>calloc(s if s else 1, sizeof(uint8_t *))
                if not seg_off[i] or not seg_len[i] or not seg_ptr[i]:
                    raise MemoryError()
                for j in range(s):
                    off, buf = segments[j]
                    if isinstance(buf, FileMap):
                        pf[i].mapped = 1  # the reader guards its touches (a file that shrinks)
                    mv = memoryview(buf).cast("B")
                    keep.append(mv)
                    seg_off[i][j] = off
                    seg_len[i][j] = mv.shape[0]
                    seg_ptr[i][j] = &mv[0] if mv.shape[0] else <const uint8_t *>NULL
                pf[i].nseg = <int>s
                pf[i].seg_off = seg_off[i]
                pf[i].seg_len = seg_len[i]
                pf[i].seg_ptr = seg_ptr[i]
        for i in range(nc):
            kind, width, n, values, valid, offsets = cols[i]
            pc[i].kind = kind
            pc[i].width = width
            pc[i].n = n
            if values is not None:
                u8 = values
                if u8.shape[0] < (n * width if kind == OUT_FIXED else n):
                    raise ValueError(f"output column {i}: values buffer too small")
                keep.append(u8)
                pc[i].values = &u8[0] if u8.shape[0] else NULL
            elif kind <= OUT_BOOL:
                raise ValueError(f"output column {i} without a values buffer")
            if valid is not None:
                u8 = valid
                if u8.shape[0] < n:
                    raise ValueError(f"output column {i}: validity buffer too small")
                keep.append(u8)
                pc[i].valid = &u8[0] if u8.shape[0] else NULL
            if kind == OUT_BYTES:
                o32 = offsets
                if o32.shape[0] < n + 1:
                    raise ValueError(f"output column {i}: offsets too small")
                keep.append(o32)
                pc[i].offsets = &o32[0]
            elif kind == OUT_LBYTES:
                o64 = offsets
                if o64.shape[0] < n + 1:
                    raise ValueError(f"output column {i}: offsets too small")
                keep.append(o64)
                pc[i].offsets = &o64[0]
        for i in range(nk):
            for j in range(c_CK_FIELDS):
                pk[i].f[j] = chunks[i, j]
            if pk[i].f[0] < 0 or pk[i].f[0] >= nf or pk[i].f[1] < 0 or pk[i].f[1] >= nc:
                raise ValueError(f"chunk {i} names file {pk[i].f[0]} / column {pk[i].f[1]}")
            if pk[i].f[14] < 0 or pk[i].f[13] < 0 or pk[i].f[13] + pk[i].f[14] > rows.shape[0] and not pk[i].f[15]:
                raise ValueError(f"chunk {i}: rows outside the rows array")
            if pk[i].f[16] < 0 or pk[i].f[16] + pk[i].f[14] > pc[pk[i].f[1]].n:
                raise ValueError(f"chunk {i}: output slots outside its column")
        job.nfiles = <int>nf
        job.files = pf
        job.ncols = <int>nc
        job.cols = pc
        job.nchunks = nk
        job.chunks = pk
        job.rows = &rows[0] if rows.shape[0] else NULL
        job.nthreads = threads
        with nogil:
            rc = pq_run(&job)
        if rc != c_PQ_OK:
            for i in range(nc):
                pq_bfree(pc[i].data, pc[i].data_cap)
                pc[i].data = NULL
            raise MemoryError("the Parquet reader ran out of memory")
        status = np.empty(nk, dtype=np.int32)
        err_at = np.empty(nk, dtype=np.int64)
        stats = np.empty((nk, 4), dtype=np.int64)
        errors = {}
        nulls = [0] * nc  # (and the totals above: the summary)
        bad = []
        for i in range(nk):
            status[i] = pk[i].status
            err_at[i] = pk[i].err_at
            stats[i, 0] = pk[i].pages_total
            stats[i, 1] = pk[i].pages_read
            stats[i, 2] = pk[i].bytes_read
            stats[i, 3] = pk[i].nulls
            pages_total += pk[i].pages_total
            pages_read += pk[i].pages_read
            bytes_read += pk[i].bytes_read
            nulls[pk[i].f[c_CK_COL]] += pk[i].nulls
            if pk[i].f[c_CK_CONV] != c_CV_NULL:
                bytes_total += pk[i].f[c_CK_LEN]
                columns_ok += pk[i].status == OK
            if pk[i].status != OK:
                errors[i] = pk[i].err.decode("utf-8", "replace")
                bad.append(i)
        data = []
        overflow = []
        for i in range(nc):
            if pc[i].data != NULL:
                data.append(_own(pc[i].data, pc[i].data_len, pc[i].data_cap))
                pc[i].data = NULL
            else:
                data.append(None)
            overflow.append(bool(pc[i].overflow))
        summary = (pages_total, pages_read, bytes_read, bytes_total, columns_ok, nulls, bad)
        return status, err_at, errors, stats, data, overflow, summary
    finally:
        if seg_off and seg_len and seg_ptr:
            for i in range(nf):
                free(seg_off[i])
                free(seg_len[i])
                free(<void *>seg_ptr[i])
        free(seg_off)
        free(seg_len)
        free(<void *>seg_ptr)
        free(pf)
        free(pc)
        free(pk)


cdef extern from "pq_codec.h" nogil:
    ctypedef struct pq_body:
        const uint8_t *out
        size_t done
    int pq_body_init(pq_body *b, int codec, const uint8_t *src, size_t srclen, uint8_t *dst, size_t usize,
                     void *zstd)
    int pq_body_need(pq_body *b, size_t n)
    int PQ_SLACK


def decompress(int codec, const uint8_t[::1] src, Py_ssize_t usize, Py_ssize_t upto=-1):
    """The first ``upto`` bytes (default all ``usize``) of a page body compressed with ``codec``
    (Snappy, LZ4_RAW or UNCOMPRESSED: the codecs this reader decodes itself), at least; raises
    ValueError for bytes that are not a valid stream of ``usize`` bytes."""
    cdef pq_body b
    cdef int rc
    if codec not in (0, 1, 7):
        raise ValueError(f"codec {codec}: only UNCOMPRESSED, SNAPPY and LZ4_RAW are decoded here")
    if usize < 0 or usize > (1 << 31):
        raise ValueError(f"uncompressed size {usize}")
    if upto < 0 or upto > usize:
        upto = usize
    out = np.empty(usize + PQ_SLACK, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    cdef const uint8_t *sp = &src[0] if src.shape[0] else <const uint8_t *>b""
    with nogil:
        rc = pq_body_init(&b, codec, sp, <size_t>src.shape[0], &o[0], <size_t>usize, NULL)
        if rc == 0:
            rc = pq_body_need(&b, <size_t>upto)
    if rc != 0:
        raise ValueError(f"not a valid {('UNCOMPRESSED', 'SNAPPY', '', '', '', '', '', 'LZ4_RAW')[codec]} stream "
                         f"of {usize} bytes")
    if codec == 0:
        return bytes(src[:usize])
    return bytes(out[:max(<Py_ssize_t>b.done, upto) if <Py_ssize_t>b.done < usize else usize])
