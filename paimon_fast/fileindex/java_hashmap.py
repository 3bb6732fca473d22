"""``java.util.HashMap``'s iteration order, modelled exactly.

Java's bitmap file index writer keeps its dictionary in a ``HashMap`` filled by
``computeIfAbsent`` and writes the values in that map's iteration order, so the
bytes depend on it.  The kernel's ``java_order`` gives that order for bins that
stay plain lists; a bin that ever held 8 keys became a red-black tree in Java,
and :func:`java_order_local` replays only those bins with :class:`JavaHashMap`,
the literal model (bucket lists, resizes, ``treeifyBin``, tree splits).
:func:`java_order_exact` runs the whole map through the model (the tests'
oracle).  The bitmap writer (:mod:`paimon_fast.fileindex.bitmap`) and the
pure-Python twin (:mod:`paimon_fast.reference.bitmap`) both use this module.
"""

from __future__ import annotations

import numpy as np

M32 = 0xFFFFFFFF


def s32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x >> 31 else x


class _Node:
    __slots__ = ("h", "key", "next", "tree", "parent", "left", "right", "prev", "red")

    def __init__(self, h, key, nxt, tree=False):
        self.h, self.key, self.next, self.tree = h, key, nxt, tree
        self.parent = self.left = self.right = self.prev = None
        self.red = False

    def root(self):
        r = self
        while r.parent is not None:
            r = r.parent
        return r


class _SparseTable(dict):
    """A bucket table of ``n`` buckets holding only the occupied ones (index ->
    first node); missing buckets read as None.  Lets a replay of a few bins of a
    huge map cost per key instead of per bucket."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def __len__(self):
        return self.n

    def __missing__(self, index):
        return None


def _occupied(tab):
    """(bucket index, first node) of every non-empty bucket, in index order."""
    if isinstance(tab, _SparseTable):
        return sorted(dict.items(tab))
    return [(j, e) for j, e in enumerate(tab) if e is not None]


class JavaHashMap:
    """Literal model of ``java.util.HashMap`` filled by ``computeIfAbsent``:
    bucket lists with new nodes at the head, resize at the start of a call once
    ``size > threshold``, order-preserving splits, ``treeifyBin`` (a resize
    below 64 buckets, else a red-black tree bin), ``putTreeVal``,
    ``moveRootToFront``, tree splits and untreeify, as in OpenJDK 8-25.

    ``compare(a, b)`` is the keys' ``compareTo`` (all key classes of the
    bitmap index are ``Comparable`` to themselves; distinct keys never
    compare equal, so Java's identity-hash tie break is never reached).
    Checked against the JVM in ``tests/data/hashmap_order``.
    """

    def __init__(self, compare=None):
        self.table = None
        self.size = 0
        self.threshold = 0
        self.treeified = 0
        self.cmp = compare or (lambda a, b: (a > b) - (a < b))
        # True: the table grows only when the caller calls _resize() (a replay of some
        # bins under the growth schedule of the whole map, see java_order_local)
        self.scheduled = False

    @staticmethod
    def spread(h):
        u = h & M32
        return s32(u ^ (u >> 16))

    # ------------------------------------------------------------ plumbing
    def _resize(self):
        old = self.table
        if old is None:
            self.table = _SparseTable(16) if self.scheduled else [None] * 16
            self.threshold = 12
            return
        cap = len(old)
        n = cap * 2
        new = _SparseTable(n) if self.scheduled else [None] * n
        self.threshold *= 2
        self.table = new
        for j, e in _occupied(old):
            if e.next is None:
                new[e.h & (n - 1)] = e
            elif e.tree:
                self._split(e, new, j, cap)
            else:
                lo, hi = [], []
                while e is not None:
                    (lo if (e.h & cap) == 0 else hi).append(e)
                    e = e.next
                for lst, idx in ((lo, j), (hi, j + cap)):
                    for a, b in zip(lst, lst[1:] + [None]):
                        a.next = b
                    if lst:
                        new[idx] = lst[0]

    def _split(self, b, tab, index, bit):
        lo, hi = [], []
        e = b
        while e is not None:
            (lo if (e.h & bit) == 0 else hi).append(e)
            e = e.next
        for lst in (lo, hi):
            prev = None
            for x in lst:
                x.next = None
                x.prev = prev
                if prev is not None:
                    prev.next = x
                prev = x
        if lo:
            if len(lo) <= 6:
                tab[index] = self._untreeify(lo[0])
            else:
                tab[index] = lo[0]
                if hi:
                    self._treeify(lo[0], tab)
        if hi:
            if len(hi) <= 6:
                tab[index + bit] = self._untreeify(hi[0])
            else:
                tab[index + bit] = hi[0]
                if lo:
                    self._treeify(hi[0], tab)

    @staticmethod
    def _untreeify(head):
        nodes = []
        q = head
        while q is not None:
            nodes.append(_Node(q.h, q.key, None))
            q = q.next
        for a, b in zip(nodes, nodes[1:]):
            a.next = b
        return nodes[0]

    def _dir(self, h, k, p):
        if p.h > h:
            return -1
        if p.h < h:
            return 1
        d = self.cmp(k, p.key)
        if d == 0:
            raise AssertionError("distinct keys compare equal: Java would use an identity-hash tie break")
        return d

    def _treeify(self, head, tab):
        root = None
        x = head
        while x is not None:
            nxt = x.next
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
            else:
                p = root
                while True:
                    d = self._dir(x.h, x.key, p)
                    xp = p
                    p = p.left if d <= 0 else p.right
                    if p is None:
                        x.parent = xp
                        if d <= 0:
                            xp.left = x
                        else:
                            xp.right = x
                        root = _balance_insertion(root, x)
                        break
            x = nxt
        self._move_root_to_front(tab, root)

    @staticmethod
    def _move_root_to_front(tab, root):
        n = len(tab)
        index = (n - 1) & root.h
        first = tab[index]
        if root is not first:
            tab[index] = root
            rp, rn = root.prev, root.next
            if rn is not None:
                rn.prev = rp
            if rp is not None:
                rp.next = rn
            if first is not None:
                first.prev = root
            root.next = first
            root.prev = None

    def _find(self, root, h, k):
        p = root
        while p is not None:
            if p.h > h:
                p = p.left
            elif p.h < h:
                p = p.right
            elif p.key == k:
                return p
            else:
                p = p.left if self.cmp(k, p.key) < 0 else p.right
        return None

    def _put_tree_val(self, t, tab, h, k):
        root = t.root()
        p = root
        while True:
            if p.h == h and p.key == k:
                return
            d = self._dir(h, k, p)
            xp = p
            p = p.left if d <= 0 else p.right
            if p is None:
                xpn = xp.next
                x = _Node(h, k, xpn, tree=True)
                if d <= 0:
                    xp.left = x
                else:
                    xp.right = x
                xp.next = x
                x.parent = x.prev = xp
                if xpn is not None:
                    xpn.prev = x
                self._move_root_to_front(tab, _balance_insertion(root, x))
                return

    def _treeify_bin(self, tab, h):
        if len(tab) < 64:
            if not self.scheduled:
                self._resize()
            return
        index = (len(tab) - 1) & h
        e = tab[index]
        nodes = []
        while e is not None:
            nodes.append(_Node(e.h, e.key, None, tree=True))
            e = e.next
        for a, b in zip(nodes, nodes[1:]):
            a.next = b
            b.prev = a
        tab[index] = nodes[0]
        self.treeified += 1
        self._treeify(nodes[0], tab)

    # ------------------------------------------------------------ API
    def compute_if_absent(self, key, h):
        """One ``computeIfAbsent(key, ...)`` call; ``h`` = ``key.hashCode()``."""
        hh = self.spread(h)
        if self.table is None or (self.size > self.threshold and not self.scheduled):
            self._resize()
        tab = self.table
        i = (len(tab) - 1) & hh
        first = tab[i]
        bin_count = 0
        if first is not None:
            if first.tree:
                if self._find(first.root(), hh, key) is not None:
                    return
                self._put_tree_val(first, tab, hh, key)
                self.size += 1
                return
            e = first
            while e is not None:
                if e.h == hh and e.key == key:
                    return
                bin_count += 1
                e = e.next
        tab[i] = _Node(hh, key, first)
        if bin_count >= 7:
            self._treeify_bin(tab, hh)
        self.size += 1

    def keys(self):
        out = []
        for _, e in _occupied(self.table or []):
            while e is not None:
                out.append(e.key)
                e = e.next
        return out


def _rotate_left(root, p):
    r = p.right
    if p is not None and r is not None:
        rl = p.right = r.left
        if rl is not None:
            rl.parent = p
        pp = r.parent = p.parent
        if pp is None:
            root = r
            r.red = False
        elif pp.left is p:
            pp.left = r
        else:
            pp.right = r
        r.left = p
        p.parent = r
    return root


def _rotate_right(root, p):
    l_ = p.left
    if p is not None and l_ is not None:
        lr = p.left = l_.right
        if lr is not None:
            lr.parent = p
        pp = l_.parent = p.parent
        if pp is None:
            root = l_
            l_.red = False
        elif pp.right is p:
            pp.right = l_
        else:
            pp.left = l_
        l_.right = p
        p.parent = l_
    return root


def _balance_insertion(root, x):
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        xppl = xpp.left
        if xp is xppl:
            xppr = xpp.right
            if xppr is not None and xppr.red:
                xppr.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.right:
                    x = xp
                    root = _rotate_left(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_right(root, xpp)
        else:
            if xppl is not None and xppl.red:
                xppl.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.left:
                    x = xp
                    root = _rotate_right(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_left(root, xpp)


def java_order_exact(jhash, order_keys, trailing_call):
    """The HashMap order by the full model (tree bins included): ids in
    insertion order are inserted with their hash and compared by
    ``order_keys`` (the comparator's keys); then one repeated call if
    ``trailing_call``.  Returns ``(order, table_size)``."""
    ok = [order_keys[i] for i in range(len(order_keys))]
    m = JavaHashMap(lambda a, b: (ok[a] > ok[b]) - (ok[a] < ok[b]))
    for i, h in enumerate(jhash):
        m.compute_if_absent(i, int(h))
    if trailing_call and len(jhash):
        m.compute_if_absent(len(jhash) - 1, int(jhash[-1]))
    return np.array(m.keys(), dtype=np.int64), (len(m.table) if m.table else 0)


def _spread(jhash) -> np.ndarray:
    u = np.asarray(jhash, dtype=np.int32).view(np.uint32)
    return u ^ (u >> np.uint32(16))


def _growth_schedule(spread, trailing_call):
    """``(events, sizes)``: the map doubles its table just before inserting the
    distinct key of index ``events[i]`` (``len(spread)``: after the last one),
    growing to ``sizes[i]``.  The load factor's resizes plus ``treeifyBin``'s in
    tables below 64 buckets (only possible among the first few dozen keys)."""
    D = len(spread)
    events, sizes = [], []
    table, thr, k = 16, 12, 0
    cnt = {}
    while k < D and table < 64:  # exact count replay while treeifyBin may resize
        if k > thr:
            table, thr = table * 2, thr * 2
            events.append(k)
            sizes.append(table)
            cnt = {}
            for x in spread[:k].tolist():
                cnt[x & (table - 1)] = cnt.get(x & (table - 1), 0) + 1
        b = int(spread[k]) & (table - 1)
        cnt[b] = cnt.get(b, 0) + 1
        if cnt[b] >= 8 and table < 64:
            table, thr = table * 2, thr * 2
            events.append(k + 1)
            sizes.append(table)
            cnt = {}
            for x in spread[: k + 1].tolist():
                cnt[x & (table - 1)] = cnt.get(x & (table - 1), 0) + 1
        k += 1
    while thr + 1 < D:  # from 64 buckets on: the load factor alone
        k = max(k, thr + 1)
        table, thr = table * 2, thr * 2
        events.append(k)
        sizes.append(table)
    if trailing_call and D > thr:
        table *= 2
        events.append(D)
        sizes.append(table)
    return events, sizes


def java_order_local(jhash, order_key, trailing_call, order, table):
    """The exact HashMap order (tree bins included) from the plain model's.

    ``order`` / ``table`` are ``java_order``'s answer, exact except inside bins
    that were ever red-black trees.  Only those bins are replayed with the full
    model: a bin of ``2**j`` buckets that held 8 keys is a group (every key with
    those low ``j`` spread-hash bits); no other key ever shares a bucket with
    the group's keys from that size on, and before it they sat in plain lists
    (else a coarser group holds them), whose order the group's keys keep among
    themselves.  So each group replayed alone under the whole map's growth
    schedule orders its final buckets exactly as the whole map does.
    ``order_key(id)`` gives the comparator key of value id (ids are insertion
    indexes).  Cost: per key of the groups, not per distinct value, so a column
    of millions of distinct values with a few tree bins stays fast.
    """
    jh = np.asarray(jhash, dtype=np.int32)
    D = len(jh)
    order = np.array(order, dtype=np.int64, copy=True)
    if D == 0:
        return order, table
    sp = _spread(jh)
    events, sizes = _growth_schedule(sp, trailing_call)
    if (sizes[-1] if sizes else 16) != table:
        raise AssertionError("growth schedule disagrees with java_order's table size")
    # epochs with >= 64 buckets: [start, end) of insertions at each size
    starts = [0] + events
    tables = [16] + sizes
    groups = {}  # level j -> set of low-bit patterns
    for i, size in enumerate(tables):
        end = starts[i + 1] if i + 1 < len(starts) else D
        if size < 64 or end <= starts[i]:
            continue
        j = size.bit_length() - 1
        cnt = np.bincount((sp[:end] & np.uint32(size - 1)).astype(np.int64), minlength=size)
        for b in np.flatnonzero(cnt >= 8).tolist():
            if not any(b & ((1 << jj) - 1) in groups.get(jj, ()) for jj in range(j)):
                groups.setdefault(j, set()).add(b)
    where = None  # position of each id in ``order``
    for j, pats in groups.items():
        low = (sp & np.uint32((1 << j) - 1)).astype(np.int64)
        for b in sorted(pats):
            ids = np.flatnonzero(low == b)
            okeys = {int(i): order_key(int(i)) for i in ids}
            m = JavaHashMap(lambda a, c: (okeys[a] > okeys[c]) - (okeys[a] < okeys[c]))
            m.scheduled = True
            m._resize()
            e = 0
            for i in ids.tolist():
                while e < len(events) and events[e] <= i:
                    m._resize()
                    e += 1
                m.compute_if_absent(i, int(jh[i]))
            while e < len(events):
                m._resize()
                e += 1
            if where is None:
                where = np.empty(D, dtype=np.int64)
                where[order] = np.arange(D, dtype=np.int64)
            at = np.sort(where[ids])  # the group's slots, bucket by bucket as m.keys() lists them
            order[at] = np.array(m.keys(), dtype=np.int64)
    return order, table
