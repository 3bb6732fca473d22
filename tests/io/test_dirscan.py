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


def test_a_listing_of_unchanged_files_is_handed_out_again_and_a_change_is_seen(tree):
    """A local listing whose scans give what they gave last time hands out the same entries (in a
    list of the caller's own); a file that changes size or times, or a new file in a subdirectory,
    is listed as it is now."""
    from paimon_fast.io.fs import resolve

    store, root = resolve(tree)

    def keep(name):
        return name.endswith(".parquet") and not name.startswith(("_", "."))

    a = store.list_files(root, keep=keep)
    b = store.list_files(root, keep=keep)
    assert a == b and a is not b and all(x is y for x, y in zip(a, b))
    b.clear()  # (the caller's list is its own)
    assert store.list_files(root, keep=keep) == a
    before = {e.rel: e for e in a}
    with open(os.path.join(tree, "a.parquet"), "ab") as fh:
        fh.write(b"more")
    os.utime(os.path.join(tree, "b.parquet"), ns=(1, before["b.parquet"].mtime_ns + 1))
    with open(os.path.join(tree, "sub", "new.parquet"), "wb") as fh:
        fh.write(b"n")
    c = {e.rel: e for e in store.list_files(root, keep=keep)}
    assert c["a.parquet"].size == before["a.parquet"].size + 4
    assert c["b.parquet"].mtime_ns == before["b.parquet"].mtime_ns + 1
    assert "sub/new.parquet" in c and "sub/new.parquet" not in before
    assert set(c) - {"sub/new.parquet"} == set(before)
