"""tests/lightfm_cold.py PREFIX ITEM_FEATURES [--seed S] [--threads N]

LightFM (WARP) on a cold-start split the demo wrote (--holdout items:F --save_split PREFIX):
PREFIX.train.tsv, PREFIX.validation.tsv, PREFIX.test.tsv, a "user<TAB>item" line a positive.
Item features are MovieLens u.item's genre flags (columns 6-24), rows normalized to sum 1 as
LightFM's Dataset normalizes them; with its id features on (an identity column per item beside
the genres) and off (the genres alone). The learning rate and the epochs are chosen on the
validation items' NDCG@20, ranked among the items training never saw, as the demo chooses; the
test items are then ranked the same way (each user's own validation items left out), with the
demo's definitions: Recall@20 = hits / |T_u|, NDCG@20 = DCG / ideal DCG of min(|T_u|, 20) hits,
and its tie rule (a candidate that ties a held-out item ranks above it: genres alone tie often).
Popularity by feature is scored too, as ncf_feature_popularity defines it, to check that the
two evaluations agree. Prints one line per row of the table in docs/features.md."""
import sys
import time

import numpy as np
import scipy.sparse as sp
from lightfm import LightFM

K = 20


def read_pairs(path):
    out = []
    with open(path, encoding="latin-1") as f:
        for line in f:
            u, i = line.rstrip("\n").split("\t")[:2]
            out.append((u, i))
    return out


def read_genres(path):
    rows = {}
    with open(path, encoding="latin-1") as f:
        for line in f:
            c = line.rstrip("\n").split("|")
            if len(c) >= 24:
                rows[c[0]] = [j for j, v in enumerate(c[5:24]) if v == "1"]
    return rows


def ranking(scores, held, exclude, cand):
    """Recall@K and NDCG@K of one user: scores over all items, held its items, exclude the
    items it may not be shown, cand the mask of candidates."""
    sc = np.where(cand, scores, -np.inf)
    sc[list(exclude)] = -np.inf
    is_held = np.zeros(len(sc), dtype=bool)
    is_held[list(held)] = True
    top = np.lexsort((is_held, -sc))[:K]  # a candidate that ties a held-out item ranks above it
    hits = [p for p, i in enumerate(top) if is_held[i] and np.isfinite(sc[i])]
    dcg = sum(1.0 / np.log2(p + 2) for p in hits)
    idcg = sum(1.0 / np.log2(p + 2) for p in range(min(len(held), K)))
    return len(hits) / len(held), dcg / idcg


def evaluate(score_user, held, other, train, cand, users):
    r = n = 0.0
    for u in users:
        if not held[u] or not train[u]:
            continue
        rec, nd = ranking(score_user(u), held[u], other[u] | train[u], cand)
        r += rec
        n += nd
    m = sum(1 for u in users if held[u] and train[u])
    return r / m, n / m


def main():
    prefix, item_file = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 1
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
    train_p = read_pairs(prefix + ".train.tsv")
    val_p = read_pairs(prefix + ".validation.tsv")
    test_p = read_pairs(prefix + ".test.tsv")
    genres = read_genres(item_file)
    users = sorted({u for u, _ in train_p + val_p + test_p}, key=int)
    items = sorted(genres, key=int)
    ui = {u: k for k, u in enumerate(users)}
    ii = {i: k for k, i in enumerate(items)}
    U, I = len(users), len(items)
    train = [set() for _ in range(U)]
    val = [set() for _ in range(U)]
    test = [set() for _ in range(U)]
    for (lst, dst) in ((train_p, train), (val_p, val), (test_p, test)):
        for u, i in lst:
            dst[ui[u]].add(ii[i])
    pop = np.zeros(I)
    for u, i in train_p:
        pop[ii[i]] += 1
    cold = pop == 0
    X = sp.coo_matrix((np.ones(len(train_p), dtype=np.float32), ([ui[u] for u, _ in train_p], [ii[i] for _, i in train_p])), shape=(U, I)).tocsr()

    # popularity by feature: a trained item by its popularity, another by the mean over its
    # features of the mean popularity of the trained items that have that feature
    fsum, fcnt = np.zeros(19), np.zeros(19)
    for k, i in enumerate(items):
        if pop[k] > 0:
            for g in genres[i]:
                fsum[g] += pop[k]
                fcnt[g] += 1
    mean = pop[pop > 0].mean()
    pbf = np.array([pop[k] if pop[k] > 0 else
                    (np.mean([fsum[g] / fcnt[g] for g in genres[i] if fcnt[g] > 0]) if any(fcnt[g] > 0 for g in genres[i]) else mean)
                    for k, i in enumerate(items)])
    t = evaluate(lambda u: pbf, test, val, train, cold, range(U))
    print("popularity by feature  test Recall@20 %.4f NDCG@20 %.4f" % t)

    rows, cols, vals = [], [], []
    for k, i in enumerate(items):
        g = genres[i]
        for j in g:
            rows.append(k), cols.append(j), vals.append(1.0 / len(g) if g else 0.0)
    G = sp.coo_matrix((vals, (rows, cols)), shape=(I, 19)).tocsr()
    for ids in (True, False):
        F = sp.hstack([sp.identity(I, format="csr"), G]).tocsr() if ids else G
        if ids:  # identity and genres, the row normalized as a whole
            F = sp.diags(1.0 / np.maximum(np.asarray(F.sum(axis=1)).ravel(), 1e-12)) @ F
        F = F.astype(np.float32)
        best = (-1, None, None)
        t0 = time.time()
        for lr in (0.01, 0.03, 0.05, 0.1):
            model = LightFM(loss="warp", no_components=32, learning_rate=lr, random_state=seed)
            for e in range(1, 41):
                model.fit_partial(X, item_features=F, epochs=1, num_threads=threads)
                if e % 5:
                    continue
                scores_all = model.predict(np.repeat(np.arange(U), I), np.tile(np.arange(I), U), item_features=F, num_threads=threads).reshape(U, I)
                v = evaluate(lambda u: scores_all[u], val, [set()] * U, train, cold, range(U))
                if v[1] > best[0]:
                    best = (v[1], (lr, e), None)
        lr, e = best[1]
        model = LightFM(loss="warp", no_components=32, learning_rate=lr, random_state=seed)
        model.fit_partial(X, item_features=F, epochs=e, num_threads=threads)
        scores_all = model.predict(np.repeat(np.arange(U), I), np.tile(np.arange(I), U), item_features=F, num_threads=threads).reshape(U, I)
        t = evaluate(lambda u: scores_all[u], test, val, train, cold, range(U))
        print("LightFM WARP ids %-3s   test Recall@20 %.4f NDCG@20 %.4f  (lr %g, %d epochs, validation NDCG@20 %.4f; %.0f s)"
              % ("on" if ids else "off", t[0], t[1], lr, e, best[0], time.time() - t0))


if __name__ == "__main__":
    main()
