"""Random calls at every public function, method and property of the package (Hypothesis):
wrong types, None, NaN, inf, huge and negative numbers, empty, mismatched, non-contiguous and
wrong-dtype arrays, unicode, surrogates, NULs and bytes. Each call returns or raises an
ncf.Error (each also the built-in exception Python expects); anything else, or a crash, fails.
make test runs 2,000 calls; make check runs thousands on the package built with
AddressSanitizer and UndefinedBehaviorSanitizer, where a read out of bounds stops the run.

    python3 python/tests/test_props.py [CALLS]"""
import inspect
import os
import pickle
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import numpy as np  # noqa: E402

import ncf  # noqa: E402

# (Hypothesis keeps a cache of Unicode tables: in the temporary directory, not the sources)
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "ncf_hypothesis"))
try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:
    st = None

try:
    import scipy.sparse as sp
except ImportError:
    sp = None

CALLS = int(os.environ.get("NCF_PROPS_CALLS", "2000"))


def world():
    """The objects the calls act on, made once (small: a call is fast)."""
    rng = np.random.default_rng(1)
    u = np.repeat(np.arange(1, 61), 10)
    i = (u * 7 + rng.integers(0, 25, len(u))) % 50 + 1
    w = {"dir": tempfile.mkdtemp(prefix="ncf_props_")}
    w["data"] = ncf.Dataset.from_arrays(u, i, eval_negatives=10)
    w["text_data"] = ncf.Dataset.from_arrays(["u%d" % x for x in u], ["é%d" % x for x in i], eval_negatives=10)
    w["closed"] = ncf.Dataset.from_arrays(u, i, eval_negatives=10)
    w["closed"].close()
    w["models"] = [ncf.Model(model="mf", factors=4, learning_rate=0.01).fit(w["data"], epochs=1),
                   ncf.Model(model="neumf", factors=4, layers=[8, 4]).fit(w["text_data"], epochs=1),
                   ncf.Model(model="mf", optimizer="als", factors=4).fit(w["data"], epochs=1), ncf.Model()]
    w["matrix"] = sp.csr_matrix((np.ones(len(u)), (u, i))) if sp is not None else None
    return w


def strategies(w):
    d = w["dir"]
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
        st.sampled_from([0, 1, 2, 3, -1, 50, 2 ** 31 - 1, 2 ** 31, 2 ** 32 + 3, 2 ** 63, 2 ** 64, np.int32(7),
                         np.uint64(2 ** 63), np.float32(1.0), np.bool_(True)]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12), st.binary(max_size=12),
        st.sampled_from(["1", "2", "u1", "é3", "nobody", "1\x00evil", "", "\ud800", " 1", "007", "1.0", "-1"]))

    def as_array(values, dtype, step, shape2):
        try:
            a = np.array(values, dtype=dtype)
        except (ValueError, TypeError, OverflowError):
            a = np.array(values, dtype=object)
        if step > 1 and a.ndim == 1:
            a = a[::step]  # (non-contiguous)
        if shape2 and a.size % 2 == 0:
            a = a.reshape(2, -1)
        return a

    small = st.one_of(st.integers(-3, 70), st.sampled_from(["1", "u2", "é3", None, float("nan"), 1.5, b"2"]))
    lists = st.lists(small, max_size=8)
    arrays = st.builds(as_array, lists, st.sampled_from([np.int32, np.int64, np.uint8, np.float32, np.float64, object,
                                                         np.bool_, str]),
                       st.integers(1, 2), st.booleans())
    objects = st.sampled_from([w["data"], w["text_data"], w["closed"], w["matrix"], object(), [1, 2], {"a": 1}, len])
    values = st.one_of(scalars, lists, arrays, objects, st.lists(lists, max_size=3))
    paths = st.sampled_from([os.path.join(d, "m.ncf"), os.path.join(d, "x\x00y"), "", d, os.path.join(d, "no", "m"),
                             42, None, os.fsencode(os.path.join(d, "b.ncf")), os.path.join(d, "é.ncf")])
    # (parameters whose large valid values would make a call run for minutes: their valid
    # values kept small, their invalid ones all there)
    work = {"epochs": [0, 1, 2, -1, 2.5, None, "1", True, 10 ** 9], "max_epochs": [0, 1, -1, None, 1.5],
            "seconds": [0, -1, 0.05, float("nan"), float("inf"), None, "1"], "seeds": [0, 1, 65, -1, None],
            "factors": [0, 1, 4, -1, 2 ** 20, 2.5, None, "8"], "negatives": [0, 1, 4, -1, 2.5, 10 ** 4, None],
            "batch_size": [0, 1, 64, -1, 2.5, None, 2 ** 25], "n": [-1, 0, 1, 2, 1025, 2.5, None, "2"],
            "layers": [None, [], [8, 4], [0], [-1], [2 ** 20], [8.5], "64", [8] * 20],
            "patience": [0, 1, -1, None, 2.5]}
    named = {name: st.sampled_from(v) for name, v in work.items()}
    named.update({"path": paths, "prefix": paths, "data": objects, "train": objects, "test": st.one_of(objects, lists)})
    return values, named


def targets(w):
    """(name, callable taking the drawn arguments) for every public name of the package."""
    out = []
    for name in sorted(n for n in ncf.__all__ if not n[0].isupper() and callable(getattr(ncf, n))):
        out.append(("ncf." + name, getattr(ncf, name)))
    for cls in (ncf.Dataset, ncf.Model):
        out.append(("ncf.%s" % cls.__name__, cls))
        for name, member in sorted(vars(cls).items()):
            if name.startswith("_"):
                continue
            if isinstance(member, property):
                out.append(("%s.%s" % (cls.__name__, name), ("property", name)))
            elif isinstance(member, classmethod):
                out.append(("%s.%s" % (cls.__name__, name), getattr(cls, name)))
            elif callable(member):
                out.append(("%s.%s" % (cls.__name__, name), ("method", name)))
    out.append(("pickle", ("pickle", None)))
    return out


def parameters(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


@unittest.skipIf(st is None, "Hypothesis is not installed (tests/needs.sh test installs python3-hypothesis)")
class Props(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ncf.set_threads(2)
        cls.w = world()
        cls.values, cls.named = strategies(cls.w)
        cls.targets = targets(cls.w)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.w["dir"], ignore_errors=True)

    def test_every_public_name_is_called(self):
        names = {n for n, _ in self.targets}
        public = {"ncf." + n for n in ncf.__all__ if n[0].islower() and callable(getattr(ncf, n))}
        for cls in (ncf.Dataset, ncf.Model):
            public |= {"%s.%s" % (cls.__name__, n) for n in vars(cls) if not n.startswith("_")}
        self.assertEqual(public - names, set())

    def test_random_calls_return_or_raise_ncf_errors(self):
        w, values, named, chosen = self.w, self.values, self.named, self.targets
        counts = {}

        @settings(max_examples=CALLS, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.data())
        def one(draw):
            name, what = draw.draw(st.sampled_from(chosen), label="target")
            counts[name] = counts.get(name, 0) + 1
            if isinstance(what, tuple):
                kind, attr = what
                owner = draw.draw(st.sampled_from(w["models"] + [w["data"], w["text_data"], w["closed"]]), label="on")
                if kind == "pickle":
                    call = lambda: pickle.loads(pickle.dumps(owner))  # noqa: E731
                elif not hasattr(type(owner), attr):
                    return
                elif kind == "property":
                    call = lambda: getattr(owner, attr)  # noqa: E731
                else:
                    fn = getattr(owner, attr)
                    kwargs = self.arguments(draw, fn, values, named)
                    call = lambda: fn(**kwargs)  # noqa: E731
            else:
                kwargs = self.arguments(draw, what, values, named)
                call = lambda: what(**kwargs)  # noqa: E731
            try:
                call()
            except ncf.Error:
                pass
            except UserWarning:
                pass

        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            one()
        print("    %d random calls over %d public names" % (sum(counts.values()), len(counts)))

    @staticmethod
    def arguments(draw, fn, values, named):
        kwargs = {}
        for p in parameters(fn):
            if p.name in ("self", "cls"):
                continue
            if p.default is not p.empty and draw.draw(st.booleans(), label="skip " + p.name):
                continue
            kwargs[p.name] = draw.draw(named.get(p.name, values), label=p.name)
        return kwargs


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].isdigit():
        CALLS = int(sys.argv.pop(1))
    unittest.main()
