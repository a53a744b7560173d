"""A vector index's candidate stage, then the model's exact re-scoring, against the model's own
full ranking: python3 python/tests/two_stage.py MODEL.ncf EMB_PREFIX [USERS] [CANDIDATES].
EMB_PREFIX is what `demo --load MODEL.ncf --export_embeddings EMB_PREFIX` wrote. For a fixed
sample of USERS users (1000): the CANDIDATES (200) unrated items of the largest inner product
of the exported vectors (what pgvector or Faiss would return, exactly), re-scored by the model,
and their top 10 beside the model's top 10 over the whole catalogue: recall@10, as JSON."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np  # noqa: E402

import ncf  # noqa: E402


def main(model_path, prefix, users=1000, candidates=200):
    m = ncf.Model.load(model_path)
    U, V = np.load(prefix + ".users.npy"), np.load(prefix + ".items.npy")
    uid, iid = m.user_ids.tolist(), m.item_ids.tolist()
    where = {name: k for k, name in enumerate(iid)}
    rng = np.random.default_rng(1)
    sample = rng.choice(len(uid), size=min(users, len(uid)), replace=False)
    hits = first_stage = 0
    for u in sample:
        truth, _ = m.recommend(uid[u], k=len(iid))                  # every unrated item, best first
        unrated = np.array([where[i] for i in truth], dtype=np.int64)
        ip = V[unrated] @ U[u]
        top = unrated[np.argsort(-ip, kind="stable")[:candidates]]   # the index's answer
        logits = m.predict([uid[u]] * len(top), [iid[i] for i in top])
        best = top[np.argsort(-logits, kind="stable")[:10]]
        exact = set(truth[:10])
        hits += len(exact & {iid[i] for i in best})
        first_stage += len(exact & {iid[i] for i in top})
    n = 10.0 * len(sample)
    print(json.dumps({"case": "two_stage", "model": m.info["model"], "factors": m.info["factors"], "users": len(sample),
                      "candidates": candidates, "recall_at_10": round(hits / n, 4),
                      "top10_in_candidates": round(first_stage / n, 4)}))


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) < 2:
        sys.exit(__doc__)
    main(a[0], a[1], *(int(x) for x in a[2:4]))
