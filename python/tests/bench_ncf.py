"""make bench's Python case: the cost of a top-10 call from Python over the same call in C (an MF
of 8 factors over 300 items, a call short enough for the overhead to show), and
recommend_indices' throughput beside ncf_recommend_users' in C (NeuMF's paper config on a
synthetic log of ml-1m's size), each model trained one epoch. Medians of 9 rounds, C and
Python in turn; one JSON line each."""
import ctypes
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np  # noqa: E402

import ncf  # noqa: E402

_time = ncf._lib.ncfpy_time_recommend
_time.restype = ctypes.c_double
_time.argtypes = [ctypes.c_void_p, ncf._i32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ncf._i32p, ncf._f32p,
                  ncf._i32p]


def main():
    rng = np.random.default_rng(1)
    users = rng.integers(0, 6040, 1000000)
    items = (users * 7 + rng.integers(0, 400, len(users))) % 3706
    data = ncf.Dataset.from_arrays(users.tolist(), items.tolist(), holdout="none")
    small = ncf.Dataset.from_arrays(users.tolist(), (items % 300).tolist(), holdout="none")
    mf = ncf.Model(model="mf").fit(small, epochs=1)
    m = ncf.Model().fit(data, epochs=1)
    n, k = 2000, 10
    who = np.ascontiguousarray(rng.integers(0, data.num_users, n), dtype=np.int32)
    names = [small.user_ids[u] for u in who]
    it = np.empty(n * k, np.int32)
    sc = np.empty(n * k, np.float32)
    cnt = np.empty(n, np.int32)
    one_c, one_py, batch_c, batch_py = [], [], [], []
    for _ in range(9):
        with mf._held() as (_h, p):
            one_c.append(_time(p, who, n, k, 1, 0, it, sc, cnt) / n)
        t = time.perf_counter()
        for name in names:
            mf.recommend(name, k=k)
        one_py.append((time.perf_counter() - t) / n)
        with m._held() as (_h, p):
            batch_c.append(n / _time(p, who, n, k, 1, 1, it, sc, cnt))
        t = time.perf_counter()
        m.recommend_indices(who, k=k)
        batch_py.append(n / (time.perf_counter() - t))
    med = lambda v: float(np.median(v))  # noqa: E731
    print(json.dumps({"case": "python_top10_call", "model": "MF f8, 300 items", "c_us": round(med(one_c) * 1e6, 2),
                      "python_us": round(med(one_py) * 1e6, 2),
                      "overhead_us": round((med(one_py) - med(one_c)) * 1e6, 2)}))
    print(json.dumps({"case": "python_recommend_users", "model": "NeuMF f8", "users": n, "c_users_per_s": round(med(batch_c)),
                      "python_users_per_s": round(med(batch_py)), "share_of_c": round(med(batch_py) / med(batch_c), 3)}))


if __name__ == "__main__":
    main()
