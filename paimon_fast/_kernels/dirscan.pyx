# cython: language_level=3
"""One directory's entries with the stats of its files, as ``os.scandir`` and ``DirEntry.stat``
give them, read with ``readdir`` and ``fstatat`` in C (the GIL released around each call).

A read of a dataset lists its directory each time (the files' identities are what tells a
snapshot's files from rewritten ones), and the per-entry Python of a scandir loop cost more than
the stat calls themselves.  :func:`scan` is that loop.  The pure-Python twin is
``reference/dirscan.py``.
"""
from libc.stdint cimport int64_t, uint64_t

import os

cdef extern from "Python.h":
    object PyUnicode_DecodeFSDefault(const char *s)

cdef extern from *:
    """
    #include <errno.h>
    static inline int pf_errno(void) { return errno; }
    static inline void pf_errno_clear(void) { errno = 0; }
    """
    int pf_errno() nogil
    void pf_errno_clear() nogil
    int ENOENT

cdef extern from "<dirent.h>" nogil:
    ctypedef struct DIR:
        pass
    struct dirent:
        unsigned char d_type
        char d_name[256]
    DIR *opendir(const char *name)
    dirent *readdir(DIR *d)
    int closedir(DIR *d)
    int dirfd(DIR *d)
    unsigned char DT_DIR
    unsigned char DT_LNK
    unsigned char DT_UNKNOWN

cdef extern from "<sys/stat.h>" nogil:
    struct timespec:
        long tv_sec
        long tv_nsec
    struct stat:
        uint64_t st_ino
        unsigned int st_mode
        int64_t st_size
        timespec st_mtim
        timespec st_ctim
    int fstatat(int dirfd, const char *path, stat *buf, int flags)
    bint S_ISDIR(unsigned int mode)
    bint S_ISLNK(unsigned int mode)

cdef extern from "<fcntl.h>" nogil:
    int AT_SYMLINK_NOFOLLOW


cdef inline int64_t _ns(timespec t):
    return <int64_t>t.tv_sec * 1000000000 + t.tv_nsec


def scan(str path, keep=None):
    """``(dirs, files)`` of the directory ``path``: ``dirs`` are ``(name, is_link)`` of its
    subdirectories (a link to a directory is one, ``is_link`` True), ``files`` are ``(name, size,
    mtime_ns, ctime_ns, inode)`` of its other entries whose name ``keep`` accepts (all without it),
    with the stats of what a link points to.  An entry that is gone before its stat (or a link that
    points nowhere) is left out; the names are in the directory's order.  Raises ``OSError`` (its
    subclass for the errno: ``FileNotFoundError``, ``NotADirectoryError``, ``PermissionError``...)
    when the directory cannot be opened, or a file's stat fails otherwise."""
    cdef bytes bpath = os.fsencode(path)
    cdef const char *cpath = bpath
    cdef DIR *d
    cdef dirent *e
    cdef stat st
    cdef int fd, rc, err = 0
    cdef unsigned char dtype
    cdef bint is_link
    dirs = []
    files = []
    with nogil:
        d = opendir(cpath)
        if d == NULL:
            err = pf_errno()
    if d == NULL:
        raise OSError(err, os.strerror(err), path)
    fd = dirfd(d)
    try:
        while True:
            with nogil:
                pf_errno_clear()
                e = readdir(d)
                err = pf_errno()
            if e == NULL:
                if err:
                    raise OSError(err, os.strerror(err), path)
                break
            if e.d_name[0] == 46 and (e.d_name[1] == 0 or (e.d_name[1] == 46 and e.d_name[2] == 0)):
                continue  # "." and ".."
            dtype = e.d_type
            name = PyUnicode_DecodeFSDefault(e.d_name)
            is_link = dtype == DT_LNK
            if dtype == DT_DIR:
                dirs.append((name, False))
                continue
            if dtype == DT_LNK or dtype == DT_UNKNOWN:  # (what it is: its target's stat, as scandir's is_dir)
                with nogil:
                    rc = fstatat(fd, e.d_name, &st, 0)
                if rc == 0 and S_ISDIR(st.st_mode):
                    if dtype == DT_UNKNOWN:
                        with nogil:
                            rc = fstatat(fd, e.d_name, &st, AT_SYMLINK_NOFOLLOW)
                        is_link = rc == 0 and S_ISLNK(st.st_mode)
                    dirs.append((name, is_link))
                    continue
            if keep is not None and not keep(name):
                continue
            with nogil:
                rc = fstatat(fd, e.d_name, &st, 0)
                err = pf_errno() if rc != 0 else 0
            if rc != 0:
                if err == ENOENT:
                    continue  # removed while listed, or a link to nothing
                raise OSError(err, os.strerror(err), os.path.join(path, name))
            files.append((name, st.st_size, _ns(st.st_mtim), _ns(st.st_ctim), st.st_ino))
    finally:
        closedir(d)
    return dirs, files
