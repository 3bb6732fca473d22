"""The directory listing kernel (``_kernels/dirscan.pyx``) against its twin (``os.scandir``):
the same subdirectories and file stats for every kind of entry, the same errors."""

from __future__ import annotations

import os

import pytest

from paimon_fast._kernels import load
from paimon_fast.reference import dirscan as twin

kernel = load("dirscan")


def _sorted(got):
    dirs, files = got
    return sorted(dirs), sorted(files)


@pytest.fixture
def tree(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    for name in ("a.parquet", "b.parquet", "_c.parquet", ".hidden", "notes.txt", "é ü.parquet"):
        (d / name).write_bytes(name.encode() * 3)
    (d / "sub").mkdir()
    (d / "_meta").mkdir()
    (d / "sub" / "inner.parquet").write_bytes(b"x")
    os.symlink(d / "sub", d / "link-to-dir")
    os.symlink(d / "a.parquet", d / "link-to-file.parquet")
    os.symlink(d / "nowhere", d / "broken.parquet")
    raw = os.fsencode(str(d)) + b"/bad-\xff.parquet"  # a name that is not UTF-8 (surrogate-escaped)
    with open(raw, "wb") as fh:
        fh.write(b"yz")
    return str(d)


@pytest.mark.parametrize("keep", [None, lambda n: n.endswith(".parquet") and not n.startswith(("_", "."))])
def test_the_kernel_lists_what_scandir_lists(tree, keep):
    got, want = _sorted(kernel.scan(tree, keep)), _sorted(twin.scan(tree, keep))
    assert got == want
    dirs, files = got
    assert dirs == [("_meta", False), ("link-to-dir", True), ("sub", False)]
    names = {f[0] for f in files}
    assert "link-to-file.parquet" in names and "broken.parquet" not in names  # (a link to nothing: left out)
    assert os.fsdecode(b"bad-\xff.parquet") in names
    st = os.stat(os.path.join(tree, "a.parquet"))
    assert ("a.parquet", st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) in files
    assert ("notes.txt" in names) == (keep is None)


def test_a_file_removed_while_listed_is_left_out(tree):
    for impl in (kernel, twin):
        victim = os.path.join(tree, "b.parquet")
        with open(victim, "wb") as fh:
            fh.write(b"b")

        def keep(name):  # (asked just before the file's stat)
            if name == "b.parquet":
                os.unlink(victim)
            return True

        names = {f[0] for f in impl.scan(tree, keep)[1]}
        assert "b.parquet" not in names and "a.parquet" in names, impl


@pytest.mark.parametrize("impl", [kernel, twin], ids=["kernel", "twin"])
def test_what_cannot_be_listed_raises_as_scandir(tmp_path, impl):
    with pytest.raises(FileNotFoundError):
        impl.scan(str(tmp_path / "missing"))
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        impl.scan(str(tmp_path / "f"))
    assert impl.scan(str(tmp_path)) == (
        [],
        [("f", 0, *(lambda s: (s.st_mtime_ns, s.st_ctime_ns, s.st_ino))(os.stat(tmp_path / "f")))],
    )
