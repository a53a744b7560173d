"""What a Python caller may rely on: no input crashes the interpreter, pickling and threads are
safe, errors are the exception Python expects (python/README.md's table, each row run here), and
the implicit-style workflow (a SciPy matrix in, answers in its numbering) matches the C API."""
import copy
import io
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import threading
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


def clustered(users=200, items=120, per_user=12, seed=5):
    """Integer ids from 1: users favour items of their cluster."""
    rng = np.random.default_rng(seed)
    u = np.repeat(np.arange(1, users + 1), per_user)
    cluster = u % 4
    i = np.where(rng.random(len(u)) < 0.8, rng.integers(0, items // 4, len(u)) * 4 + cluster,
                 rng.integers(0, items, len(u))) + 1
    return u, i


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ncf_contract_")
        u, i = clustered()
        cls.data = ncf.Dataset.from_arrays(u, i, eval_negatives=30)
        cls.model = ncf.Model(model="mf", factors=16, learning_rate=0.01, seed=3).fit(cls.data, epochs=4)
        ncf.set_threads(2)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)


class Pickling(Base):
    def same(self, a, b):
        for u in (1, 50, 200):
            x, y = a.recommend(u, k=10), b.recommend(u, k=10)
            self.assertEqual(x[0].tolist(), y[0].tolist())
            self.assertTrue(np.array_equal(x[1], y[1]))  # (bit for bit: equal floats)
        self.assertEqual(a.to_bytes(), b.to_bytes())

    def test_pickle_and_deepcopy_are_whole_copies(self):
        m = ncf.Model(model="mf", factors=16, learning_rate=0.01, seed=3).fit(self.data, epochs=4)
        back = pickle.loads(pickle.dumps(m))
        self.same(m, back)
        self.assertEqual((back.chosen_epoch, back.chosen_value), (m.chosen_epoch, m.chosen_value))
        deep = copy.deepcopy(m)
        shallow = copy.copy(m)
        del m  # (the copies own their models)
        self.same(back, deep)
        self.same(back, shallow)
        untrained = pickle.loads(pickle.dumps(ncf.Model(model="gmf", factors=4)))
        self.assertEqual(untrained._settings[0], 4)
        with self.assertRaises(ncf.InvalidValueError):
            untrained.recommend(1)

    def test_pickle_in_another_process(self):
        blob = os.path.join(self.dir, "m.pickle")
        with open(blob, "wb") as f:
            pickle.dump(self.model, f)
        code = ("import pickle, sys; sys.path.insert(0, %r); import ncf\n"
                "with open(%r, 'rb') as f: m = pickle.load(f)\n"
                "ids, s = m.recommend(7, k=10); print(' '.join('%%d:%%s' %% (i, x.hex()) for i, x in zip(ids, s.astype(float))))"
                % (os.path.join(HERE, ".."), blob))
        out = subprocess.check_output([sys.executable, "-c", code], env=dict(os.environ)).decode().split()
        ids, s = self.model.recommend(7, k=10)
        self.assertEqual(out, ["%d:%s" % (i, float(x).hex()) for i, x in zip(ids, s)])

    def test_save_split_reads_back(self):
        d = ncf.Dataset.from_arrays(*clustered(), holdout="ratio:0.2")
        prefix = os.path.join(self.dir, "split")
        d.save_split(prefix)
        back = ncf.Dataset(prefix)
        self.assertEqual(back.report["holdout"], "saved")
        for key in ("users", "items", "train", "test", "validation"):
            self.assertEqual(back.report[key], d.report[key], key)
        self.assertEqual(back.user_ids.tolist(), d.user_ids.tolist())

    def test_dataset_pickles_as_what_made_it(self):
        back = pickle.loads(pickle.dumps(self.data))
        self.assertEqual(back.report, self.data.report)
        self.assertEqual(back.user_ids.tolist(), self.data.user_ids.tolist())
        path = os.path.join(self.dir, "log.tsv")
        u, i = clustered()
        with open(path, "w") as f:
            f.writelines("%d\t%d\n" % r for r in zip(u, i))
        d = ncf.Dataset(path, eval_negatives=30)
        blob = pickle.dumps(d)
        self.assertEqual(pickle.loads(blob).report, d.report)
        with open(path, "a") as f:
            f.write("999\t1\n")
        with self.assertRaisesRegex(ncf.DataError, "changed"):
            pickle.loads(blob)


class Constructors(Base):
    def test_dataset_takes_a_path_a_frame_or_a_matrix(self):
        path = os.path.join(self.dir, "c.tsv")
        u, i = clustered()
        with open(path, "w") as f:
            f.writelines("%d\t%d\n" % r for r in zip(u, i))
        a = ncf.Dataset(path, eval_negatives=30)
        self.assertEqual(a.num_users, 200)
        try:
            import pandas as pd
            b = ncf.Dataset(pd.DataFrame({"user": u, "item": i}), eval_negatives=30)
            self.assertEqual(b.report, a.report)
        except ImportError:
            pass
        for bad in (42, None, [1, 2], {"user": 1}):
            with self.assertRaises(TypeError):
                ncf.Dataset(bad)

    def test_a_closed_dataset_raises(self):
        d = ncf.Dataset.from_arrays(*clustered(), eval_negatives=30)
        d.close()
        d.__del__()
        for call in (lambda: d.report, lambda: d.user_ids, lambda: ncf.Model().fit(d, epochs=1),
                     lambda: pickle.dumps(d) and pickle.loads(pickle.dumps(d)).report):
            with self.assertRaisesRegex(ncf.InvalidValueError, "closed"):
                call()

    def test_bad_values_are_refused(self):
        m = self.model
        self.assertEqual(len(m.recommend(1, k=10 ** 9)[0]), len(m.recommend(1, k=120)[0]))  # (the catalogue)
        for call in (lambda: m.recommend(1, k=-5), lambda: m.recommend(1, k=True), lambda: ncf.set_threads(0),
                     lambda: ncf.Model(init_sd=0), lambda: ncf.Model(regularization=float("nan")),
                     lambda: ncf.Model(unobserved=-1), lambda: ncf.Model(batch_size=0), lambda: ncf.Model(seed=-1),
                     lambda: ncf.Model(layers=[64, 0]), lambda: ncf.Dataset.from_arrays([1], [2], holdout="ratio:0"),
                     lambda: ncf.Dataset.from_arrays([1], [2], holdout="time:@x"),
                     lambda: ncf.Dataset.from_arrays([1.0, float("nan")], [2, 3]),
                     lambda: ncf.Dataset.from_arrays(["a"], ["b"], strengths=[float("inf")]),
                     lambda: m.evaluate(self.data, k=[1] * 9), lambda: m.evaluate(self.data, target="train")):
            with self.assertRaises(ncf.Error):
                call()
        sparse = (sp.csr_matrix(np.eye(3)),) if sp else ()  # (without SciPy, the rest is checked)
        for bad in sparse + (np.zeros((3, 3)), np.float64(3)):  # (a sparse matrix's len() raises TypeError)
            with self.assertRaisesRegex(ncf.InvalidTypeError, "items must be a sequence"):
                ncf.Dataset.from_arrays([1, 2, 3], bad)
        for bad in (np.eye(3), [[1, 0, 0]] * 3):  # (refused before SciPy is needed)
            with self.assertRaisesRegex(ncf.InvalidTypeError, "from_csr takes a SciPy sparse matrix"):
                ncf.Features.from_csr(bad, ["a", "b", "c"], ["x", "y", "z"])

    def test_float_ids_that_hold_integers_are_those_integers(self):
        u, i = clustered()
        d = ncf.Dataset.from_arrays(u.astype(float), i, eval_negatives=30)
        self.assertEqual(d.user_ids.dtype, np.int64)
        self.assertEqual(d.user_ids[:2].tolist(), [1, 2])
        self.assertEqual(self.model.recommend(1.0)[0].tolist(), self.model.recommend("1")[0].tolist())

    def test_a_loaded_model_fits_as_itself(self):
        path = os.path.join(self.dir, "gmf.ncf")
        g = ncf.Model(model="gmf", factors=12, learning_rate=0.005, negatives=3, seed=9).fit(self.data, epochs=2)
        g.save(path)
        back = ncf.Model.load(path)
        again = back.fit(self.data, epochs=2)
        self.assertEqual(again.info["model"], "gmf")
        self.assertEqual(again.info["factors"], 12)
        fresh = ncf.Model(model="gmf", factors=12, learning_rate=0.005, negatives=3, seed=9).fit(self.data, epochs=2)
        self.assertEqual(again.to_bytes(), fresh.to_bytes())  # (the same settings: the same model, bit for bit)


class Threads(Base):
    def test_serving_threads_survive_fit_and_tune(self):
        m = ncf.Model(model="mf", factors=16, learning_rate=0.01, seed=3).fit(self.data, epochs=2)
        stop, errors, calls = threading.Event(), [], [0]

        def serve(seed):
            rng = np.random.default_rng(seed)
            while not stop.is_set():
                try:
                    u = int(rng.integers(1, 201))
                    ids, s = m.recommend(u, k=10)
                    assert len(ids) == 10 and np.all(np.diff(s) <= 0)
                    m.recommend([u, 1], k=5)
                    m.similar_items(int(rng.integers(1, 121)), k=5)
                    m.predict(u, [1, 2, 3])
                    calls[0] += 1
                except Exception as e:  # noqa: BLE001 (any failure is the test's)
                    errors.append(e)
                    return

        team = [threading.Thread(target=serve, args=(s,)) for s in range(3)]
        for t in team:
            t.start()
        try:
            for epochs in (1, 2, 3):
                m.fit(self.data, epochs=epochs)
            m.partial_fit(self.data, epochs=1)
            m.add_user(10 ** 6, [1, 5, 9])
        finally:
            stop.set()
            for t in team:
                t.join()
        self.assertEqual(errors, [])
        self.assertGreater(calls[0], 10)
        self.assertIn(10 ** 6, m.user_ids.tolist())


class Documented(unittest.TestCase):
    def test_every_public_name_has_a_docstring(self):
        missing = [n for n in ncf.__all__ if not isinstance(getattr(ncf, n), str) and not getattr(ncf, n).__doc__]
        for cls in (ncf.Dataset, ncf.Model):
            for name, v in vars(cls).items():
                if name.startswith("_") and name != "__init__":
                    continue
                f = v.fget if isinstance(v, property) else getattr(v, "__func__", v)
                if not (getattr(f, "__doc__", None) or "").strip():
                    missing.append("%s.%s" % (cls.__name__, name))
        self.assertEqual(missing, [])
        self.assertEqual(ncf.__version__, ncf.version())
        self.assertTrue(os.path.exists(os.path.join(HERE, "..", "ncf", "py.typed")))


class Outputs(Base):
    def test_progress_in_a_log_file_is_a_line_an_epoch(self):
        err, sys.stderr = sys.stderr, io.StringIO()
        try:
            ncf.Model(model="mf", factors=8, learning_rate=0.01).fit(self.data, epochs=3, progress=True)
            ncf.Model(model="mf", optimizer="als", factors=8).fit(self.data, epochs=2, progress=True)
            text = sys.stderr.getvalue()
        finally:
            sys.stderr = err
        lines = text.splitlines()
        self.assertEqual(len(lines), 5, text)
        self.assertNotIn("\r", text)
        self.assertNotIn("nan", text)
        self.assertTrue(all(re.match(r"fit: epoch \d+ loss [\d.]+ validation hr@10 [\d.]+ \([\d.]+ s\)$", x)
                            for x in lines), text)

    def test_on_epoch_hears_each_epoch_with_its_figures(self):
        heard = []
        m = ncf.Model(model="mf", factors=8, learning_rate=0.01).fit(self.data, epochs=4, on_epoch=heard.append)
        self.assertEqual([r["epoch"] for r in heard], [1, 2, 3, 4])
        best = max(heard, key=lambda r: r["hr"])
        self.assertEqual(m.chosen_epoch, best["epoch"])
        self.assertEqual(m.chosen_value, best["hr"])

    def test_sampled_evaluation_leaves_unmeasured_figures_out(self):
        e = self.model.evaluate(self.data)
        self.assertIsNone(e["coverage"])
        self.assertIsNone(e["popularity"])
        self.assertGreater(self.model.evaluate(self.data, full_ranking=True)["coverage"], 0)


@unittest.skipIf(sp is None, "SciPy is not installed")
class ImplicitWorkflow(Base):
    """A CSR matrix in; every answer in the matrix's own rows and columns; the C API's answers."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(2)
        u, i = clustered(users=300, items=150)
        u, i = u * 2, i + 10  # (odd rows and the first columns empty: indices the model must not renumber)
        cls.matrix = sp.csr_matrix((rng.integers(1, 5, len(u)).astype(np.float32), (u, i)), shape=(700, 170))
        cls.als = ncf.Model(model="mf", factors=16, optimizer="als", regularization=0.1, seed=1)
        cls.als.fit(cls.matrix, epochs=4)

    def test_answers_are_in_the_matrix_numbering(self):
        m = self.als
        self.assertEqual(m.user_ids.tolist(), sorted(set(self.matrix.tocoo().row.tolist())))
        rows = np.array([2, 4, 600])
        ids, scores = m.recommend(rows, k=10, deny=[11, 12])
        self.assertEqual(ids.shape, (3, 10))
        for j, r in enumerate(rows):
            liked = set(self.matrix[r].indices.tolist())
            self.assertFalse(liked & set(ids[j].tolist()))
            self.assertFalse({11, 12} & set(ids[j].tolist()))
            one = m.recommend(int(r), k=10, deny=[11, 12])
            self.assertEqual(one[0].tolist(), ids[j].tolist())
            self.assertTrue(np.array_equal(one[1], scores[j]))
        sim, s = m.similar_items([13, 20], k=5)
        self.assertEqual(sim.shape, (2, 5))
        self.assertNotIn(13, sim[0].tolist())
        users, _ = m.similar_users([2, 4], k=3)
        self.assertEqual(users.shape, (2, 3))
        self.assertTrue(set(users.ravel().tolist()) <= set(m.user_ids.tolist()))
        train = ncf.Dataset(self.matrix).to_csr("train")
        self.assertEqual(train.shape, self.matrix.shape)
        self.assertTrue(np.array_equal((train != 0).toarray(), (self.matrix != 0).toarray()))

    def test_factors_give_the_scores(self):
        for model in (self.als, ncf.Model(model="gmf", factors=8, learning_rate=0.01).fit(self.matrix, epochs=2)):
            U, V = model.user_factors, model.item_factors
            rows = model.user_ids[:6]
            logits = np.array([model.predict(int(r), model.item_ids) for r in rows])
            self.assertTrue(np.allclose(U[:6] @ V.T, logits, atol=1e-4), np.abs(U[:6] @ V.T - logits).max())
        with self.assertRaisesRegex(ncf.InvalidValueError, "together"):
            ncf.Model(model="neumf").fit(self.matrix, epochs=1).user_factors

    def test_fold_in_a_user_and_an_item(self):
        m = copy.deepcopy(self.als)
        liked = self.matrix[4].indices
        row = m.fold_in_vector(liked)
        ids, s = m.recommend_vector(row, k=10, deny=liked)
        self.assertEqual(m.fold_in(liked, k=10)[0].tolist(), ids.tolist())
        rows = m.fold_in_vector([liked, liked[:3]])
        self.assertTrue(np.array_equal(rows[0], row))
        m.add_user(10 ** 6, liked)
        self.assertTrue(np.array_equal(m.predict(10 ** 6, ids), s))
        takers = self.matrix[:, 12].tocoo().row
        m.add_item(999, takers)
        self.assertIn(999, m.item_ids.tolist())
        self.assertTrue(np.isfinite(m.predict(int(takers[0]), 999)))
        self.assertIn(999, m.recommend(int(takers[0]), k=m.num_items, exclude_rated=False)[0].tolist())

    def test_partial_fit_takes_new_rows_and_keeps_the_rest(self):
        m = ncf.Model(model="mf", factors=8, learning_rate=0.01, seed=2).fit(self.matrix, epochs=2)
        before = m.user_factors
        grown = self.matrix.tolil()
        grown.resize((702, 170))
        grown[701, [11, 13, 15]] = 1
        m.partial_fit(grown.tocsr(), epochs=1)
        self.assertIn(701, m.user_ids.tolist())
        self.assertEqual(m.num_users, len(before) + 1)
        self.assertEqual(m.info["epoch"], 3)

    def test_the_same_answers_as_c(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler to build the comparison program")
        path = os.path.join(self.dir, "als.ncf")
        self.als.save(path)
        src = os.path.join(self.dir, "rec.c")
        with open(src, "w") as f:
            f.write(r'''
#define NCF_IMPLEMENTATION
#include "ncf.h"
#include <stdio.h>
int main(int argc, char **argv) {
    ncf_model *m = NULL; ncf_rec_opts o = ncf_rec_opts_default(); int64_t items[10]; float s[10]; int a, n, k;
    int32_t deny = -1;
    if (ncf_load(&m, argv[1]) != NCF_OK) return 1;
    deny = ncf_find(m, NCF_ITEM, "11"), o.deny = &deny, o.num_deny = 1;
    for (a = 2; a < argc; a++) {
        n = ncf_recommend(m, atoll(argv[a]), &o, items, s);
        for (k = 0; k < n; k++) printf("%lld:%a ", (long long)items[k], s[k]);
        printf("\n");
    }
    ncf_model_free(m); return 0;
}''')
        exe = os.path.join(self.dir, "rec")
        subprocess.check_call([cc, "-O2", "-I", ROOT, src, "-o", exe, "-lm"])
        rows = [2, 4, 100, 600]
        out = subprocess.check_output([exe, path] + [str(r) for r in rows]).decode().splitlines()
        ids, scores = self.als.recommend(rows, k=10, deny=[11])
        for j, line in enumerate(out):
            got = [(int(x.split(":")[0]), float.fromhex(x.split(":")[1])) for x in line.split()]
            self.assertEqual(got, [(int(i), float(s)) for i, s in zip(ids[j], scores[j])])


@unittest.skipIf(sp is None, "SciPy is not installed")
class Metrics(Base):
    def test_ranking_metrics_by_hand(self):
        rec = np.array([[3, 1, 2, -1], [0, 4, 5, 6], [1, 2, 3, 4]])
        test = [[1, 9], [7], []]
        got = ncf.ranking_metrics(rec, test, k=2)
        # user 0: a hit at rank 1 of 2 held out; user 1: none; user 2: not counted
        ndcg0 = (1 / np.log2(3)) / (1 + 1 / np.log2(3))
        want = {"hr": 0.5, "ndcg": ndcg0 / 2, "recall": 0.25, "precision": 0.25, "map": (1 / 2) / 2 / 2,
                "mrr": 0.25, "users": 2}
        for key, v in want.items():
            self.assertAlmostEqual(got[key], v, places=12, msg=key)

    def test_ranking_metrics_at_k_agrees_with_evaluate(self):
        u, i = clustered(users=150, items=100, per_user=15)
        d = ncf.Dataset.from_arrays(u, i, holdout="ratio:0.2", validation=False)
        m = ncf.Model(model="mf", factors=8, learning_rate=0.01).fit(d, epochs=3)
        train, test = d.to_csr("train"), d.to_csr("test")
        ours = ncf.ranking_metrics_at_k(m, train, test, K=10)
        e = m.evaluate(d, k=10)
        for key in ("hr", "ndcg", "recall", "precision", "map"):
            self.assertAlmostEqual(ours[key], e[key], places=9, msg=key)
        self.assertEqual(ours["users"], e["users"])

        def popular(rows, k):  # (another library's model: a callable giving ranked lists)
            counts = np.asarray(train.sum(axis=0)).ravel()
            order = np.argsort(-counts, kind="stable")
            out = []
            for r in rows:
                seen = set(train[r].indices.tolist())
                out.append([x for x in order if x not in seen][:k])
            return np.array(out)

        pop = ncf.ranking_metrics_at_k(popular, train, test, K=10)
        self.assertLess(pop["ndcg"], ours["ndcg"])

    def test_train_test_split(self):
        m = sp.random(50, 40, density=0.3, format="csr", random_state=1)
        a, b = ncf.train_test_split(m, 0.75, seed=4)
        self.assertEqual((a + b != m).nnz, 0)
        self.assertAlmostEqual(a.nnz / m.nnz, 0.75, delta=0.06)
        self.assertEqual(a.multiply(b).nnz, 0)


class ExceptionTable(Base):
    """python/README.md's table: each call raises its class with its message."""

    def rows(self):
        with open(os.path.join(ROOT, "python", "README.md"), encoding="utf-8") as f:
            text = f.read()
        table = text.split("## Exceptions", 1)[1].split("\n## ", 1)[0]
        for line in table.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 3 and cells[0].startswith("`"):
                yield cells[0].strip("`"), cells[1].split("`")[1], cells[2].strip("`")

    def test_every_row(self):
        bad = os.path.join(self.dir, "bad.csv")
        with open(bad, "w") as f:
            f.write("userId,movieId,rating,timestamp\n1,10,x,100\n")
        log = os.path.join(self.dir, "log.tsv")
        with open(log, "w") as f:
            f.writelines("%d\t%d\n" % r for r in zip(*clustered()))
        closed = ncf.Dataset.from_arrays(*clustered(), eval_negatives=30)
        closed.close()
        space = {"ncf": ncf, "np": np, "model": self.model, "data": self.data, "bad_csv": bad, "log": log,
                 "missing_dir": os.path.join(self.dir, "missing"), "closed": closed,
                 "neumf": ncf.Model().fit(self.data, epochs=1),
                 "other": ncf.Dataset.from_arrays([1, 2, 3], [1, 2, 3], holdout="none"),
                 "no_validation": ncf.Dataset.from_arrays(*clustered(), holdout="none")}
        n = 0
        for call, cls, message in self.rows():
            n += 1
            with self.subTest(call=call):
                want = eval(cls, space)
                with self.assertRaises(want) as caught:
                    eval(call, dict(space))
                self.assertIs(type(caught.exception), want)
                self.assertIn(message, str(caught.exception))
                base = {"UnknownIdError": KeyError, "InvalidValueError": ValueError, "InvalidTypeError": TypeError,
                        "FileError": OSError, "DataError": ValueError}[cls.split(".")[1]]
                self.assertIsInstance(caught.exception, base)
        self.assertGreater(n, 30)


if __name__ == "__main__":
    unittest.main()
