"""Dominator trees and retained sizes of heap graphs.

Lengauer–Tarjan with path compression (the "simple" variant, O(E log V)), written
iteratively so graph depth never meets Python's recursion limit. GC roots hang
under a virtual super-root, so every reachable object has exactly one immediate
dominator: another object, or the super-root (reported as None).
"""

from __future__ import annotations

from collections.abc import Sequence


def dominator_tree(
    node_count: int, roots: Sequence[int], children: Sequence[Sequence[int]], sizes: Sequence[int]
) -> list[tuple[int, int | None, int, int]]:
    """(node, idom node or None, retained size, retained count) for every node reachable from `roots`.

    Nodes are 0..node_count-1; `children[n]` lists n's successors, `sizes[n]` its self size.
    Rows come in DFS preorder from the super-root."""
    number, preorder, parent = _depth_first(node_count, roots, children)
    preds = _predecessors(roots, children, number, preorder)
    idom = _immediate_dominators(preds, parent)
    # Retained sizes: children have larger numbers than their dominators.
    n = len(preorder)
    retained = [0] * n
    count = [0] * n
    for w in range(n - 1, 0, -1):
        retained[w] += sizes[preorder[w]]
        count[w] += 1
        d = idom[w]
        retained[d] += retained[w]
        count[d] += count[w]
    return [(preorder[w], preorder[idom[w]] if idom[w] else None, retained[w], count[w]) for w in range(1, n)]


def _depth_first(
    node_count: int, roots: Sequence[int], children: Sequence[Sequence[int]]
) -> tuple[list[int], list[int], list[int]]:
    """Depth-first numbering from the super-root (number 0): (number per node, -1 if
    unreachable; preorder[k] = node numbered k; parent number per number)."""
    number = [-1] * node_count
    preorder: list[int] = [-1]  # slot 0: the super-root
    parent = [0]
    stack: list[tuple[int, int]] = []
    for root in roots:
        if number[root] != -1:
            continue
        number[root] = len(preorder)
        preorder.append(root)
        parent.append(0)
        stack.append((root, 0))
        while stack:
            node, i = stack[-1]
            succ = children[node]
            if i < len(succ):
                stack[-1] = (node, i + 1)
                child = succ[i]
                if number[child] == -1:
                    number[child] = len(preorder)
                    preorder.append(child)
                    parent.append(number[node])
                    stack.append((child, 0))
            else:
                stack.pop()
    return number, preorder, parent


def _predecessors(
    roots: Sequence[int], children: Sequence[Sequence[int]], number: list[int], preorder: list[int]
) -> list[list[int]]:
    """Predecessors in number space (the super-root precedes every root)."""
    n = len(preorder)
    preds: list[list[int]] = [[] for _ in range(n)]
    for v in range(1, n):
        for child in children[preorder[v]]:
            w = number[child]
            if w > 0:
                preds[w].append(v)
    seen_root = set()
    for root in roots:
        w = number[root]
        if w not in seen_root:
            seen_root.add(w)
            preds[w].append(0)
    return preds


def _immediate_dominators(preds: list[list[int]], parent: list[int]) -> list[int]:
    """Semidominators, then immediate dominators (all in number space)."""
    n = len(preds)
    semi = list(range(n))
    label = list(range(n))
    ancestor = [-1] * n
    idom = [0] * n
    bucket: list[list[int]] = [[] for _ in range(n)]

    def evaluate(v: int) -> int:
        if ancestor[v] == -1:
            return v
        path = []
        x = v
        while ancestor[ancestor[x]] != -1:
            path.append(x)
            x = ancestor[x]
        for x in reversed(path):
            a = ancestor[x]
            if semi[label[a]] < semi[label[x]]:
                label[x] = label[a]
            ancestor[x] = ancestor[a]
        return label[v]

    for w in range(n - 1, 0, -1):
        sw = semi[w]
        for v in preds[w]:
            u = evaluate(v)
            if semi[u] < sw:
                sw = semi[u]
        semi[w] = sw
        bucket[sw].append(w)
        p = parent[w]
        ancestor[w] = p
        for v in bucket[p]:
            u = evaluate(v)
            idom[v] = u if semi[u] < semi[v] else p
        bucket[p] = []
    for w in range(1, n):
        if idom[w] != semi[w]:
            idom[w] = idom[idom[w]]
    return idom
