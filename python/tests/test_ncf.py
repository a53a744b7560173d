"""The Python package's tests (make test runs them: python3 python/tests/test_ncf.py). Each makes
its own small data. The answers are compared with a C program built from ncf.h here and
printing its floats exactly."""
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import numpy as np  # noqa: E402

import ncf  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

try:
    import scipy.sparse as sp
except ImportError:  # (the sparse tests skip, and say so)
    sp = None


def synthetic_log(users=200, items=120, per_user=(6, 30), seed=3):
    """user, item, strength, timestamp rows: users favour a cluster of items."""
    rnd = random.Random(seed)
    rows, t = [], 1000
    for u in range(users):
        cluster = u % 4
        for _ in range(rnd.randint(*per_user)):
            i = rnd.randrange(items // 4) * 4 + cluster if rnd.random() < 0.8 else rnd.randrange(items)
            t += rnd.randint(1, 50)
            rows.append((u + 1, i + 1, rnd.randint(1, 9), t))
    return rows


class Fixture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ncf_py_")
        cls.rows = synthetic_log()
        cls.path = os.path.join(cls.dir, "log.tsv")
        with open(cls.path, "w") as f:
            for r in cls.rows:
                f.write("%d\t%d\t%d\t%d\n" % r)
        ncf.set_threads(2)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def data(self, **kw):
        kw.setdefault("eval_negatives", 50)
        return ncf.Dataset.from_file(self.path, **kw)


class Data(Fixture):
    def test_file_and_arrays_load_the_same(self):
        a = self.data()
        u, i, s, t = zip(*self.rows)
        b = ncf.Dataset.from_arrays(list(u), list(i), timestamps=list(t), eval_negatives=50)
        ra, rb = a.report, b.report
        for key in ("users", "items", "train", "test", "validation", "lines", "holdout"):
            self.assertEqual(ra[key], rb[key], key)
        self.assertEqual(ra["holdout"], "latest")
        self.assertEqual(a.user_ids.tolist(), b.user_ids.tolist())
        self.assertEqual(a.item_ids.tolist(), b.item_ids.tolist())
        self.assertEqual(a.user_ids.dtype, np.int64)  # (integer ids come back as integers)

    def test_ids_kept_as_written(self):
        d = ncf.Dataset.from_arrays(["ann", "ann", "ann", "bob ", "bob ", "bob ", 'c"d', 'c"d', "e\tf", "e\tf"],
                                    ["0440", "x y", "z", "0440", "z", "w", "x y", "0440", "z", "x y"], holdout="none")
        self.assertEqual(d.user_ids.tolist(), ["ann", "bob ", 'c"d', "e\tf"])
        self.assertEqual(d.item_ids.tolist(), ["0440", "w", "x y", "z"])

    def test_dataframe(self):
        try:
            import pandas as pd
        except ImportError:
            self.skipTest("pandas is not installed")
        df = pd.DataFrame(self.rows, columns=["userId", "movieId", "plays", "ts"])
        d = ncf.Dataset.from_dataframe(df, user="userId", item="movieId", timestamp="ts", holdout="ratio:0.2")
        self.assertEqual(d.user_ids[:3].tolist(), [1, 2, 3])  # (integer ids: by value)
        r = d.report
        self.assertEqual(r["holdout"], "ratio")
        self.assertTrue(r["many_items"])
        self.assertEqual(r["train"] + r["test"] + r["validation"], len(self.rows) - r["duplicates"])
        w = ncf.Dataset.from_dataframe(df, user="userId", item="movieId", strength="plays", weighting="log",
                                       eval_negatives=50)
        self.assertGreater(w.report["weight_max"], w.report["weight_min"])

    def test_events_and_low_ratings(self):
        ev = os.path.join(self.dir, "events.csv")
        with open(ev, "w") as f:
            f.write("timestamp,visitorid,event,itemid\n1,v1,view,p1\n2,v1,view,p1\n3,v1,transaction,p1\n"
                    "4,v1,view,p2\n5,v1,remove,p3\n6,v2,addtocart,p2\n7,v2,view,p3\n8,v3,view,p3\n9,v3,view,p1\n")
        d = ncf.Dataset(ev, events={"view": 1, "addtocart": 3, "transaction": 5}, weighting="linear", alpha=0.5,
                        holdout="none")
        r = d.report
        self.assertEqual([(e["kind"], e["lines"], e["kept"], e["strength"]) for e in r["events"]],
                         [("view", 6, True, 1.0), ("addtocart", 1, True, 3.0), ("transaction", 1, True, 5.0),
                          ("remove", 1, False, 0.0)])
        self.assertEqual((r["events_dropped"], r["train"]), (1, 6))
        self.assertAlmostEqual(r["weight_max"], 1 + 0.5 * 7)  # (v1's p1: view, view, transaction)
        self.assertEqual(len(ncf.Dataset(ev, events=["transaction", "addtocart"], holdout="none").report["events"]), 4)
        with self.assertRaisesRegex(ncf.InvalidValueError, "event column"):
            ncf.Dataset.from_arrays(["a", "b"], ["x", "y"], events={"view": 1})
        with self.assertRaisesRegex(ncf.InvalidTypeError, "events must be"):
            ncf.Dataset(ev, events=3)
        with self.assertRaisesRegex(ncf.Error, "listed twice"):
            ncf.Dataset(ev, events="view,view")
        rated = os.path.join(self.dir, "rated.csv")
        with open(rated, "w") as f:
            f.write("user_id,anime_id,rating\n1,10,-1\n1,11,8\n1,12,9\n2,10,9\n2,12,-1\n2,13,6\n3,11,7\n3,13,10\n")
        self.assertEqual(ncf.Dataset(rated, eval_negatives=1).report["nonpositive_ratings"], 2)
        self.assertEqual(ncf.Dataset(rated, min_rating=1, weighting="log", eval_negatives=1).report["below_min_rating"], 2)
        with self.assertRaisesRegex(ncf.DataError, "rated.csv:2: strength '-1' .* often means 'not rated'"):
            ncf.Dataset(rated, weighting="log")

    def test_bad_input_raises_the_library_message(self):
        bad = os.path.join(self.dir, "bad.csv")
        with open(bad, "w") as f:
            f.write("userId,movieId,rating,timestamp\n1,10,x,100\n")
        with self.assertRaisesRegex(ncf.Error, r"bad.csv:2: rating 'x' is not a number"):
            ncf.Dataset.from_file(bad)
        with self.assertRaisesRegex(ncf.Error, "cannot open"):
            ncf.Dataset.from_file(os.path.join(self.dir, "missing.csv"))
        with self.assertRaises(ValueError):
            self.data(holdout="sideways")
        with self.assertRaisesRegex(ncf.InvalidValueError, "between 0 and 1"):
            self.data(holdout="ratio:1.5")


class Training(Fixture):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.d = ncf.Dataset.from_file(cls.path, eval_negatives=50)
        cls.m = ncf.Model(model="mf", factors=16, learning_rate=0.01, seed=2).fit(cls.d, epochs=6)

    def test_fit_chooses_on_validation_and_evaluates(self):
        self.assertTrue(1 <= self.m.chosen_epoch <= 6)
        self.assertEqual(self.m.info["epoch"], self.m.chosen_epoch)
        e = self.m.evaluate(self.d)
        p = ncf.popularity(self.d)
        self.assertEqual(e["users"], self.d.report["test"])
        self.assertGreater(e["hr"], p["hr"])
        full = self.m.evaluate(self.d, k=[5, 10], full_ranking=True)
        self.assertEqual([f["k"] for f in full], [5, 10])
        self.assertLessEqual(full[0]["hr"], full[1]["hr"])
        self.assertGreater(full[1]["coverage"], 0)

    def test_sgd_one_example_a_step_with_decay(self):
        kw = dict(model="mf", factors=16, optimizer="sgd", batch_size=1, learning_rate=0.08, regularization=0.002,
                  init_sd=0.1, seed=3)
        a = ncf.Model(**kw).fit(self.d, epochs=4, decay=True)
        b = ncf.Model(**kw).fit(self.d, epochs=4)
        self.assertGreater(a.evaluate(self.d)["hr"], ncf.popularity(self.d)["hr"])
        self.assertNotEqual(a.recommend("1", k=10)[1].tolist(), b.recommend("1", k=10)[1].tolist())
        with self.assertRaisesRegex(ncf.InvalidValueError, "optimizer 'rmsprop'"):
            ncf.Model(optimizer="rmsprop")

    def test_shuffle_orders_train_apart_and_each_beats_popularity(self):
        kw = dict(model="mf", factors=16, learning_rate=0.01, seed=2)
        a = ncf.Model(**kw).fit(self.d, epochs=6, shuffle="positives")
        b = ncf.Model(**kw).fit(self.d, epochs=6, shuffle="positives")
        self.assertEqual(a.recommend("1", k=10)[1].tolist(), b.recommend("1", k=10)[1].tolist())
        self.assertNotEqual(a.recommend("1", k=10)[1].tolist(), self.m.recommend("1", k=10)[1].tolist())
        self.assertGreater(a.evaluate(self.d)["hr"], ncf.popularity(self.d)["hr"])
        with self.assertRaisesRegex(ValueError, "shuffle 'users'"):
            ncf.Model(**kw).fit(self.d, epochs=1, shuffle="users")

    def test_als_beats_popularity(self):
        m = ncf.Model(model="mf", factors=16, optimizer="als", regularization=0.1, unobserved=0.2).fit(self.d, epochs=5)
        self.assertGreater(m.evaluate(self.d)["hr"], ncf.popularity(self.d)["hr"] + 0.1)
        ids, scores = m.fold_in(["4", "8", "12", "16"], k=5)  # the exact least squares
        self.assertEqual(len(ids), 5)
        self.assertFalse({4, 8, 12, 16} & set(ids.tolist()))
        self.assertTrue(np.all(np.diff(scores) <= 0))
        with self.assertRaisesRegex(ncf.InvalidValueError, "optimizer 'als' trains model 'mf' only"):
            ncf.Model(model="neumf", optimizer="als")

    def test_many_items_and_select(self):
        d = self.data(holdout="ratio:0.25")
        m = ncf.Model(model="gmf", factors=8, learning_rate=0.01).fit(d, epochs=4, select="map@5")
        e = m.evaluate(d, k=[5, 20])
        self.assertTrue(all(0 <= f["recall"] <= 1 and 0 <= f["map"] <= 1 for f in e))
        self.assertAlmostEqual(m.chosen_value, m.evaluate(d, k=5, target="validation")["map"], places=12)

    def test_recommend_allow_deny_and_rated(self):
        ids, scores = self.m.recommend("1", k=10)
        self.assertEqual(len(ids), 10)
        self.assertTrue(all(scores[j] >= scores[j + 1] for j in range(9)))
        rated = {i for u, i, s, t in self.rows if u == 1}
        self.assertFalse(rated & set(ids.tolist()))
        allow = self.d.item_ids[:7]
        ids2, _ = self.m.recommend("1", k=10, allow=allow, exclude_rated=False)
        self.assertTrue(set(ids2.tolist()) <= set(allow.tolist()))
        ids3, _ = self.m.recommend("1", k=10, deny=ids[:3])
        self.assertEqual(ids3[:7].tolist(), ids[3:10].tolist())
        many, sc = self.m.recommend(["1", 2, np.int64(3)], k=10)
        self.assertEqual(many[0].tolist(), ids.tolist())
        self.assertTrue(np.array_equal(sc[0], scores))
        for j, u in enumerate((1, 2, 3)):  # (the batch is each user's own list, bit for bit, filters too)
            one = self.m.recommend(u, k=10, allow=allow, deny=[allow[0]], exclude_rated=False)
            two = self.m.recommend([u], k=10, allow=allow, deny=[allow[0]], exclude_rated=False)
            n = len(one[0])
            self.assertEqual(two[0][0, :n].tolist(), one[0].tolist())
            self.assertTrue(np.array_equal(two[1][0, :n], one[1]))
            self.assertTrue(np.all(two[0][0, n:] == -1) and np.all(np.isnan(two[1][0, n:])))

    def test_fold_in_and_similar(self):
        ids, scores = self.m.fold_in(["4", "8", "12", "16"], k=5)
        self.assertEqual(len(ids), 5)
        self.assertFalse({4, 8, 12, 16} & set(ids.tolist()))
        sim, s = self.m.similar_items("4", k=5)
        self.assertNotIn(4, sim.tolist())
        self.assertTrue(np.all(s <= 1.0 + 1e-6))

    def test_errors_name_the_problem(self):
        with self.assertRaisesRegex(ncf.UnknownIdError, "unknown user 'nobody'"):
            self.m.recommend("nobody")
        with self.assertRaisesRegex(KeyError, "unknown item"):
            self.m.similar_items("no such item")
        with self.assertRaisesRegex(ncf.InvalidValueError, "not trained"):
            ncf.Model().recommend("1")

    def test_save_load_same_answers(self):
        path = os.path.join(self.dir, "m.ncf")
        self.m.save(path)
        back = ncf.Model.load(path)
        a, sa = self.m.recommend("5", k=10)
        b, sb = back.recommend("5", k=10)
        self.assertEqual(a.tolist(), b.tolist())
        self.assertTrue(np.array_equal(sa, sb))

    def test_same_answers_as_c(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler to build the comparison program")
        path = os.path.join(self.dir, "c.ncf")
        self.m.save(path)
        src = os.path.join(self.dir, "top.c")
        with open(src, "w") as f:
            f.write(r'''
#define NCF_IMPLEMENTATION
#include "ncf.h"
#include <stdio.h>
int main(int argc, char **argv) {
    ncf_model *m = NULL; char ids[4096]; float s[10]; const char *p = ids; int n, k;
    if (ncf_load(&m, argv[1]) != NCF_OK) return 1;
    n = ncf_recommend_for_id(m, argv[2], NULL, ids, sizeof ids, s);
    for (k = 0; k < n; k++, p += strlen(p) + 1) printf("%s %a\n", p, s[k]);
    ncf_model_free(m); return n < 0;
}''')
        exe = os.path.join(self.dir, "top")
        subprocess.check_call([cc, "-O2", "-I", ROOT, src, "-o", exe, "-lm"])
        for user in ("1", "7", "150"):
            out = subprocess.check_output([exe, path, user]).decode().split()
            ids, scores = self.m.recommend(user, k=10)
            self.assertEqual(out[0::2], [str(i) for i in ids])
            self.assertEqual([float.fromhex(x) for x in out[1::2]], [float(x) for x in scores])

    def test_tune_matches_c_and_trains_the_winner(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler to build the comparison program")
        src = os.path.join(self.dir, "tune.c")
        with open(src, "w") as f:
            f.write(r'''
#define NCF_IMPLEMENTATION
#include "ncf.h"
#include <stdio.h>
int main(int argc, char **argv) {
    ncf_dataset d; ncf_dataset_opts lo = ncf_dataset_opts_default(); ncf_tune_opts to = ncf_tune_opts_default();
    ncf_tune_report r; ncf_model *m = NULL; ncf_metrics t; int i;
    lo.eval_negatives = 50, lo.validation = 1, lo.seed = 1, to.budget = atof(argv[2]);
    if (ncf_load_dataset(&d, argv[1], &lo) != NCF_OK || ncf_tune(&d, &to, &r) != NCF_OK)
        return fprintf(stderr, "%s\n", ncf_error_text()), 1;
    for (i = 0; i < r.num_runs; i++)
        printf("%d %d %d %d %a %a %d %d %d\n", r.runs[i].trial, r.runs[i].rung, (int)r.runs[i].cfg.model,
               r.runs[i].cfg.mf_dim, (double)r.runs[i].cfg.lr, r.runs[i].val.hr, i == r.best, r.runs[i].beside,
               r.runs[i].partner);
    if (ncf_tune_final(&m, &d, &r, NULL, NULL) != NCF_OK || ncf_evaluate(m, &d, NULL, &t) != NCF_OK)
        return fprintf(stderr, "%s\n", ncf_error_text()), 1;
    printf("test %a %a %d %d %a\n", t.hr, t.ndcg, r.seeds, r.final_epochs, r.averaged.rung == 3 ? r.averaged.val.hr : -1.0);
    ncf_model_free(m), ncf_tune_report_free(&r), ncf_dataset_free(&d);
    return 0;
}''')
        exe = os.path.join(self.dir, "tune")
        subprocess.check_call([cc, "-O2", "-I", ROOT, src, "-o", exe, "-lm"])
        out = subprocess.check_output([exe, self.path, "1.5"]).decode().splitlines()
        heard = []
        m = ncf.Model().tune(self.d, seconds=1.5, callback=heard.append)
        names = {"neumf": 0, "gmf": 1, "mlp": 2, "mf": 3}
        rows = [(r["trial"], r["rung"], names[r["model"]], r["factors"], r["lr"], r["hr"], r["winner"], r["beside"],
                 r["partner"]) for r in m.trials]
        c_rows = [tuple(int(x) if j in (0, 1, 2, 3, 6, 7, 8) else float.fromhex(x) for j, x in enumerate(line.split()))
                  for line in out[:-1]]
        self.assertGreater(len(rows), 3)
        self.assertEqual(c_rows, rows)
        self.assertEqual([(r["trial"], r["rung"]) for r in heard], [(r["trial"], r["rung"]) for r in m.trials])
        self.assertTrue(m.best["winner"])
        e = m.evaluate(self.d)
        self.assertEqual([float.fromhex(x) for x in out[-1].split()[1:3]], [e["hr"], e["ndcg"]])
        self.assertEqual(m.seeds, int(out[-1].split()[3]))
        self.assertEqual(m.final_epochs, int(out[-1].split()[4]))
        self.assertEqual(m.averaged["hr"] if m.seeds > 1 else -1.0, float.fromhex(out[-1].split()[5]))
        self.assertEqual(m.info["factors"], m.best["factors"] * (m.seeds if m.best["model"] in ("mf", "gmf") else 1))
        self.assertEqual(m.info["model"], m.best["model"])
        self.assertEqual(m.info["epoch"], m.final_epochs)
        with self.assertRaisesRegex(ncf.InvalidValueError, "seconds 0.0: must be > 0"):
            ncf.Model().tune(self.d, seconds=0)
        with self.assertWarnsRegex(UserWarning, "too small"):
            self.assertIsNone(ncf.Model().tune(self.d, seconds=1e-7).best)

    def test_training_releases_the_gil(self):
        ticks = [0]
        done = threading.Event()

        def count():
            while not done.is_set():
                ticks[0] += 1
                time.sleep(0.0005)

        t = threading.Thread(target=count)
        t.start()
        start = ticks[0]
        big = ncf.Dataset.from_arrays([u % 400 for u in range(40000)], [(u * 7) % 300 for u in range(40000)],
                                      eval_negatives=20)
        ncf.Model(factors=8).fit(big, epochs=3)
        done.set()
        t.join()
        self.assertGreater(ticks[0] - start, 10)

    def test_no_leak_over_many_calls(self):
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        if not os.path.exists("/proc/self/statm"):
            self.skipTest("no /proc/self/statm to read the memory used")
        for _ in range(500):  # (warm: the allocator's pools, the id lists)
            self.m.recommend("3", k=10)
        before = rss()
        for j in range(10000):
            self.m.recommend(str(1 + j % 200), k=10)
        for j in range(300):
            ncf.Dataset.from_file(self.path, eval_negatives=50)
            try:
                self.m.recommend("nobody")
            except KeyError:
                pass
        grown = rss() - before
        self.assertLess(grown, 4 << 20, "grew %d bytes over 10,000 calls" % grown)


class Install(unittest.TestCase):
    def test_pip_installs_offline_from_the_tree_and_from_an_sdist(self):
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        if subprocess.call([sys.executable, "-c", "import setuptools"], **quiet) or \
                subprocess.call([sys.executable, "-m", "pip", "--version"], **quiet):
            self.skipTest("pip or setuptools is not installed")
        work = tempfile.mkdtemp(prefix="ncf_pip_")
        build = os.path.join(work, "src")
        try:  # (a copy of the repository's files it builds from, so nothing is written beside them)
            os.makedirs(build)
            shutil.copy(os.path.join(ROOT, "ncf.h"), build)
            shutil.copytree(os.path.join(ROOT, "python"), os.path.join(build, "python"),
                            ignore=shutil.ignore_patterns("_ncf*.so", "ncf.h", "__pycache__", "build", "dist",
                                                          "*.egg-info"))
            env = dict(os.environ)
            env.pop("NCF_LIBRARY", None)
            subprocess.check_call([sys.executable, "setup.py", "-q", "sdist", "-d", work], cwd=os.path.join(build, "python"),
                                  env=env, **quiet)
            sdist = os.path.join(work, "ncf-%s.tar.gz" % ncf.__version__)
            import tarfile
            with tarfile.open(sdist) as t:
                names = t.getnames()
            self.assertIn("ncf-%s/ncf/ncf.h" % ncf.__version__, names)  # (publishable: it carries the header)
            self.assertIn("ncf-%s/ncf/py.typed" % ncf.__version__, names)
            for source, target in ((os.path.join(build, "python"), "tree"), (sdist, "sdist")):
                where = os.path.join(work, target)
                subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                                       "--no-index", "--target", where, source], env=env, **quiet)
                out = subprocess.check_output([sys.executable, "-c", "import ncf; print(ncf.__file__, ncf.__version__)"],
                                              env=dict(env, PYTHONPATH=where), cwd=where).decode()
                self.assertTrue(out.startswith(os.path.join(where, "ncf")) and out.split()[1] == ncf.__version__, out)
                self.assertTrue(os.path.exists(os.path.join(where, "ncf", "py.typed")))
            # the README's venv: Debian's NumPy, setuptools and wheel seen from it, nothing downloaded
            venv = os.path.join(work, "venv")
            if subprocess.call([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], **quiet):
                self.skipTest("python3 -m venv is not installed (Debian: python3-venv)")
            py = os.path.join(venv, "Scripts" if os.name == "nt" else "bin", "python")
            subprocess.check_call([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                                   os.path.join(build, "python")], env=env, **quiet)
            out = subprocess.check_output([py, "-c", "import ncf; print(ncf.__file__, ncf.__version__)"], env=env,
                                          cwd=work).decode()
            self.assertTrue(out.startswith(venv) and out.split()[1] == ncf.__version__, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)


class Readme(unittest.TestCase):
    def test_readme_example_runs(self):
        where = os.environ.get("NCF_README_DIR", "")
        if not os.path.exists(os.path.join(where, "books.csv")):
            self.skipTest("no books.csv to run the README's example on (make test writes one)")
        with open(os.path.join(ROOT, "README.md")) as f:
            text = f.read()
        code = text.split("```python\n", 1)[1].split("```", 1)[0]
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        out = subprocess.check_output([sys.executable, "-c", code], cwd=where, env=env).decode()
        self.assertTrue(out.startswith("(array(['") and "dtype=object), array([" in out, out)



class SideFeatures(unittest.TestCase):
    """A features model fit from Python: a brand-new item added from its features is recommended
    with the scores the C library gives the same file; the same item's vector from its features
    alone scores as the added item; Features pickle; a cold split evaluates."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ncf_feat_")
        cls.log = os.path.join(cls.dir, "log.csv")
        cls.items = os.path.join(cls.dir, "items.csv")
        with open(cls.log, "w") as f:
            for u in range(1, 61):
                for j in range(8):
                    f.write("u%d,b%d\n" % (u, (u * 7 + j * j + 3 * j) % 40))
        with open(cls.items, "w") as f:
            f.write("item,genres\n")
            for i in range(40):
                f.write("b%d,g%d|h%d\n" % (i, i % 5, i % 3))
            f.write("brandnew,g1|h2\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_a_new_item_from_its_features_scores_as_in_c(self):
        feats = ncf.Features(self.items)
        self.assertEqual((feats.num_entities, feats.num_features), (41, 8))
        again = pickle.loads(pickle.dumps(feats))
        self.assertEqual(again.num_features, 8)
        data = ncf.Dataset.from_file(self.log, holdout="none")
        m = ncf.Model(seed=3).fit(data, epochs=2, item_features=feats, features_only="items")
        self.assertEqual(m.add_from_features(feats), 1)
        self.assertEqual(m.add_from_features(feats), 0)  # (known now)
        ids, scores = m.recommend("u5", k=41)
        self.assertIn("brandnew", list(ids))
        got = float(scores[list(ids).index("brandnew")])
        row = m.feature_vector(["g1", "h2"])
        with self.assertRaises(ncf.UnknownIdError):
            m.feature_vector(["nonsense"])
        path = os.path.join(self.dir, "feat.ncf")
        m.save(path)
        back = pickle.loads(pickle.dumps(m))
        b_ids, b_scores = back.recommend("u5", k=41)
        self.assertEqual(list(ids), list(b_ids))
        self.assertTrue(np.array_equal(scores, b_scores))
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler to build the comparison program")
        src = os.path.join(self.dir, "feat.c")
        with open(src, "w") as f:
            f.write(r"""
#define NCF_IMPLEMENTATION
#include "ncf.h"
#include <stdio.h>
int main(int argc, char **argv) {
    ncf_model *m = NULL; const char *tok[2] = {"g1", "h2"}; float row[64], z; int32_t u;
    if (ncf_load(&m, argv[1]) != NCF_OK || ncf_row_size(m) > 64) return 1;
    u = ncf_find(m, NCF_USER, "u5");
    if (ncf_feature_row(m, NCF_ITEM, tok, NULL, 2, row) != 0 || ncf_predict_for(m, NCF_ITEM, -1, row, &u, 1, &z)) return 1;
    printf("%a\n", z);
    ncf_model_free(m); return 0;
}""")
        exe = os.path.join(self.dir, "feat")
        subprocess.check_call([cc, "-O2", "-I", ROOT, src, "-o", exe, "-lm"])
        c_score = float.fromhex(subprocess.check_output([exe, path]).decode().strip())
        self.assertEqual(c_score, got)
        self.assertEqual(row.dtype, np.float32)

    @unittest.skipIf(sp is None, "SciPy is not installed")
    def test_a_cold_split_trains_and_evaluates(self):
        data = ncf.Dataset.from_file(self.log, holdout="items:0.25")
        self.assertEqual(data.report["holdout"], "items")
        feats = ncf.Features.from_csr(
            sp.csr_matrix(np.eye(40, 5, dtype=np.float32) + 0.5),
            ["b%d" % i for i in range(40)], ["f%d" % j for j in range(5)])
        self.assertEqual((feats.num_entities, feats.num_features), (40, 5))
        m = ncf.Model().fit(data, epochs=2, item_features=feats, select="ndcg@10")
        self.assertIsNotNone(m.chosen_epoch)

    def test_tune_searches_with_features_on_a_cold_split(self):
        data = ncf.Dataset.from_file(self.log, holdout="items:0.25")
        feats = ncf.Features(self.items)
        m = ncf.Model(seed=2).tune(data, seconds=1, max_epochs=9, select="ndcg@10", item_features=feats)
        uses = {t["item_features"] for t in m.trials}
        self.assertEqual(uses, {"with_id", "alone"})  # (a cold split: every run's items take them)
        self.assertTrue(all(t["user_features"] == "none" and t["optimizer"] != "als" for t in m.trials))
        self.assertTrue(any(t["feature_scale"] != 1.0 for t in m.trials))
        self.assertEqual(m.add_from_features(feats), 1)
        self.assertEqual(m.feature_vector(["g1", "h2"]).dtype, np.float32)
        again = ncf.Model(seed=2).tune(data, seconds=1, max_epochs=9, select="ndcg@10", item_features=feats)
        self.assertEqual(m.trials, again.trials)  # (the same table for a seed)
        with self.assertRaises(ncf.InvalidTypeError):
            ncf.Model().tune(data, seconds=1, item_features="genres")

if __name__ == "__main__":
    unittest.main()
