"""Plain-Python twin of ``paimon_fast/_kernels/dirscan.pyx``: one directory's entries with the
stats of its files, from ``os.scandir`` (the oracle of the kernel's tests and the baseline of its
benchmark)."""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple


def scan(path: str, keep: Optional[Callable[[str], bool]] = None) -> Tuple[List[tuple], List[tuple]]:
    """``(dirs, files)`` of the directory ``path``, as the kernel's ``scan``: ``dirs`` are
    ``(name, is_link)``, ``files`` ``(name, size, mtime_ns, ctime_ns, inode)`` of the other entries
    ``keep`` accepts (stats of what a link points to; an entry gone before its stat left out)."""
    import os

    dirs, files = [], []
    with os.scandir(path) as it:
        for e in it:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                try:
                    link = e.is_symlink()
                except OSError:
                    link = False
                dirs.append((e.name, link))
                continue
            if keep is not None and not keep(e.name):
                continue
            try:
                st = e.stat()
            except FileNotFoundError:
                continue  # a link to nothing, or a file removed while listed
            files.append((e.name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return dirs, files
