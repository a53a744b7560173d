#!/usr/bin/python3
"""Tunes one peer library on a split's validation items and scores it on its test items.

  peer_grid.py PEER BINARY PREFIX [--threads N] [--max_settings N] [--max_factors N] [--runs N]

PEER is qmf (QMF's WALS, BINARY its `wals`) or libmf (LIBMF's one-class squared loss, -f 12,
BINARY its `mf-train`). PREFIX.val.* and PREFIX.* are the two splits tests/peer_split.c writes:
each setting trains on PREFIX.val.train.rating and is ranked on its validation candidates; the
best by HR@10 (NDCG@10 breaking ties) then trains on PREFIX.train.rating (validation items put
back) --runs times and is ranked on the test candidates. The rank of an item is the number of
its candidates scoring at least as high (ties count against it), as ncf.h ranks; an item or
user the peer has no factors for scores 0.

The search: a grid over the settings of the first list below, then a coordinate ascent from
each of the best two grid settings over the finer ranges, one step to a neighbour at a time,
until no neighbour is better or --max_settings settings have been trained.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

# Each peer: its parameters' ordered ranges, the grid's values (a subset), and its command.
SPACES = {
    'qmf': {
        'factors': ([16, 32, 64, 128, 256], [32, 64]),
        'alpha': ([1, 2, 5, 10, 20, 40, 80, 160, 320], [5, 20, 80]),
        'lambda': ([0.3, 1, 3, 10, 30, 100, 300, 1000, 3000], [3, 30, 300]),
        'epochs': ([4, 7, 15, 30, 60], [15]),
    },
    'libmf': {
        'factors': ([16, 32, 64, 128, 256], [32, 64]),
        'alpha': ([0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1], [0.003, 0.03, 0.3]),
        'l2': ([0.003, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30], [0.01, 0.1, 1, 10]),
        'iters': ([5, 10, 20, 40, 80], [20]),
    },
}


def read_pairs(path):
    return np.loadtxt(path, dtype=np.int64, usecols=(0, 1), ndmin=2)


def read_negatives(path):
    negs = {}
    with open(path) as f:
        for line in f:
            p = line.rstrip('\n').split('\t')
            negs[int(p[0].strip('()').split(',')[0])] = [int(x) for x in p[1:] if x]
    return negs


class Split:
    """A split's training file in the peer's input form and its candidates as arrays."""

    def __init__(self, prefix, work):
        tr = read_pairs(prefix + '.train.rating')
        te = read_pairs(prefix + '.test.rating')
        negs = read_negatives(prefix + '.test.negative')
        self.num_users = int(max(tr[:, 0].max(), te[:, 0].max())) + 1
        self.num_items = int(max(tr[:, 1].max(), te[:, 1].max(), max(max(v) for v in negs.values()))) + 1
        self.users = te[:, 0]
        self.cands = np.array([[i] + negs[u] for u, i in te], dtype=np.int64)
        self.train = os.path.join(work, os.path.basename(prefix) + '.txt')
        np.savetxt(self.train, np.column_stack([tr, np.ones(len(tr), dtype=np.int64)]), fmt='%d')


def score(split, U, V, k=10):
    """HR@k and NDCG@k over the split's users, each ranked among its candidates."""
    hr = nd = 0.0
    for a in range(0, len(split.users), 1024):
        u = U[split.users[a:a + 1024]]
        s = np.einsum('tk,tck->tc', u, V[split.cands[a:a + 1024]])
        r = np.sum(s[:, 1:] >= s[:, :1], axis=1)
        hit = r < k
        hr += hit.sum()
        nd += (1.0 / np.log2(r[hit] + 2)).sum()
    return hr / len(split.users), nd / len(split.users)


def read_qmf(path, n, k):
    M = np.zeros((n, k), dtype=np.float64)
    with open(path) as f:
        for line in f:
            p = line.split()
            if int(p[0]) < n:
                M[int(p[0])] = [float(x) for x in p[1:k + 1]]
    return M


def read_libmf(path, m, n):
    with open(path) as f:
        head = dict(next(f).split() for _ in range(5))
        k = int(head['k'])
        P, Q = np.zeros((m, k)), np.zeros((n, k))
        for line in f:
            p = line.split()
            M, i = (P if p[0][0] == 'p' else Q), int(p[0][1:])
            if p[1] == 'T' and i < len(M):
                M[i] = [float(x) for x in p[2:2 + k]]
    return np.nan_to_num(P), np.nan_to_num(Q)


def train(peer, binary, split, s, threads, work):
    """Trains setting s on the split; returns the users' and items' factors."""
    base = os.path.join(work, 'model')
    if peer == 'qmf':
        cmd = [binary, '--train_dataset=' + split.train, '--user_factors=' + base + '.u',
               '--item_factors=' + base + '.i', '--nfactors=%d' % s['factors'],
               '--confidence_weight=%g' % s['alpha'], '--regularization_lambda=%g' % s['lambda'],
               '--nepochs=%d' % s['epochs'], '--nthreads=%d' % threads]
    else:
        cmd = [binary, '-f', '12', '-k', str(s['factors']), '-a', '%g' % s['alpha'], '-l2', '%g' % s['l2'],
               '-t', str(s['iters']), '-s', str(threads), '--quiet', split.train, base]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if peer == 'qmf':
        return (read_qmf(base + '.u', split.num_users, s['factors']),
                read_qmf(base + '.i', split.num_items, s['factors']))
    return read_libmf(base, split.num_users, split.num_items)


def name(s):
    return ', '.join('%s %g' % kv for kv in s.items())


class Search:
    def __init__(self, args, val, work):
        self.args, self.val, self.work, self.seen = args, val, work, {}
        self.space = {p: ([v for v in r if p != 'factors' or v <= args.max_factors],
                          [v for v in g if p != 'factors' or v <= args.max_factors] or [args.max_factors])
                      for p, (r, g) in SPACES[args.peer].items()}

    def full(self):
        return len(self.seen) >= self.args.max_settings

    def value(self, s):
        """Validation (HR@10, NDCG@10) of setting s, trained once."""
        key = tuple(s.items())
        if key not in self.seen:
            t = time.time()
            U, V = train(self.args.peer, self.args.binary, self.val, s, self.args.threads, self.work)
            self.seen[key] = score(self.val, U, V)
            print('  %2d. %s: validation HR@10 %.4f NDCG@10 %.4f (%.1f s)' %
                  ((len(self.seen), name(s)) + self.seen[key] + (time.time() - t,)), flush=True)
        return self.seen[key]

    def grid(self):
        settings = [{}]
        for p, (_, g) in self.space.items():
            settings = [dict(s, **{p: v}) for s in settings for v in g]
        return [(self.value(s), s) for s in settings if not self.full()]

    def ascend(self, s):
        best, moved = self.value(s), True
        while moved and not self.full():
            moved = False
            for p, (r, _) in self.space.items():
                at = r.index(s[p])
                for step in (-1, 1):
                    while 0 <= at + step < len(r) and not self.full():
                        t = dict(s, **{p: r[at + step]})
                        v = self.value(t)
                        if v <= best:
                            break
                        best, s, at, moved = v, t, at + step, True
        return best, s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('peer', choices=sorted(SPACES))
    ap.add_argument('binary')
    ap.add_argument('prefix')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--max_settings', type=int, default=40)
    ap.add_argument('--max_factors', type=int, default=128)
    ap.add_argument('--runs', type=int, default=3)
    args = ap.parse_args()
    work = args.prefix + '.' + args.peer + '.work'
    os.makedirs(work, exist_ok=True)
    val, test = Split(args.prefix + '.val', work), Split(args.prefix, work)
    search, t0 = Search(args, val, work), time.time()
    print('%s on %s: grid, then coordinate ascent (at most %d settings)' %
          (args.peer, args.prefix, args.max_settings), flush=True)
    ranked = sorted(search.grid(), key=lambda x: x[0], reverse=True)
    ends = [search.ascend(s) for _, s in ranked[:2]]
    best, s = max(ends, key=lambda x: x[0])
    print('chosen on validation: %s (HR@10 %.4f NDCG@10 %.4f; %d settings, %.0f s)' %
          ((name(s),) + best + (len(search.seen), time.time() - t0)), flush=True)
    runs = []
    for _ in range(args.runs):
        U, V = train(args.peer, args.binary, test, s, args.threads, work)
        runs.append(score(test, U, V))
    hr, nd = np.mean(runs, axis=0)
    print('%s test: HR@10 %.4f NDCG@10 %.4f (mean of %d runs; HR@10 %.4f to %.4f) %s' %
          (args.peer, hr, nd, len(runs), min(r[0] for r in runs), max(r[0] for r in runs), name(s)), flush=True)


if __name__ == '__main__':
    sys.exit(main())
