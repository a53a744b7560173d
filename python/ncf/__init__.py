"""ncf: Neural Collaborative Filtering (NeuMF, GMF, MLP, MF) over the ncf.h C library.

    import ncf
    data = ncf.Dataset.from_file("ratings.dat")           # or from_arrays, from_dataframe
    model = ncf.Model(model="mf", factors=64).fit(data, epochs=20)
    ids, scores = model.recommend("42", k=10)

Ids are kept as written (strings; integers are given as their decimal form). Errors raise
ncf.Error with the library's message. Every call into the library releases the GIL, so
training and batch calls run beside other Python threads. Answers are the C library's,
bit for bit. Needs only NumPy (and pandas for from_dataframe).
"""
import ctypes as _c
import glob as _glob
import os as _os
import time as _time

import numpy as _np

__all__ = ["Dataset", "Model", "Error", "version", "set_threads"]


def _find_library():
    here = _os.path.dirname(_os.path.abspath(__file__))
    found = sorted(_glob.glob(_os.path.join(here, "_ncf*.so")) + _glob.glob(_os.path.join(here, "_ncf*.dll")) +
                   _glob.glob(_os.path.join(here, "_ncf*.dylib")) + _glob.glob(_os.path.join(here, "_ncf*.pyd")))
    if not found:
        raise ImportError("ncf: the compiled library is missing next to %s: build it with `make python` (or "
                          "`pip install --no-build-isolation ./python`) in the ncf.h repository" % here)
    return found[0]


_lib = _c.CDLL(_find_library())

_P = _c.c_void_p
_i32p = _np.ctypeslib.ndpointer(dtype=_np.int32, flags="C_CONTIGUOUS")
_f32p = _np.ctypeslib.ndpointer(dtype=_np.float32, flags="C_CONTIGUOUS")
_f64p = _np.ctypeslib.ndpointer(dtype=_np.float64, flags="C_CONTIGUOUS")
_i64p = _np.ctypeslib.ndpointer(dtype=_np.int64, flags="C_CONTIGUOUS")
_PROGRESS = _c.CFUNCTYPE(_c.c_int, _c.c_void_p, _c.c_longlong, _c.c_longlong, _c.c_longlong, _c.c_double)
_TUNE_PROGRESS = _c.CFUNCTYPE(None, _c.c_void_p, _c.c_void_p, _c.c_int, _c.c_int, _c.c_int, _c.c_double)


def _sig(name, res, *args):
    f = getattr(_lib, name)
    f.restype, f.argtypes = res, list(args)
    return f


_error_text = _sig("ncf_error_text", _c.c_char_p)
_version = _sig("ncf_version", _c.c_char_p)
_set_threads = _sig("ncf_set_threads", _c.c_int, _c.c_int)
_load = _sig("ncfpy_load", _P, _c.c_char_p, _c.c_char_p, _c.c_size_t, _c.c_int, _c.c_double, _c.c_longlong, _c.c_int,
             _c.c_double, _c.c_char_p, _c.c_int, _c.c_int, _c.c_int, _c.c_double, _c.c_ulonglong, _c.c_char_p, _c.c_int,
             _c.c_int, _c.c_int)
_dataset_free = _sig("ncfpy_dataset_free", None, _P)
_dataset_info = _sig("ncfpy_dataset_info", None, _P, _f64p)
_dataset_id = _sig("ncf_dataset_id", _c.c_int, _P, _c.c_int, _c.c_int, _c.c_char_p, _c.c_size_t)
_model_create = _sig("ncfpy_model_create", _P, _P, _c.c_int, _c.c_int, _i32p, _c.c_int, _c.c_double, _c.c_double, _c.c_int,
                     _c.c_int, _c.c_double, _c.c_ulonglong, _c.c_int, _c.c_double)
_model_free = _sig("ncf_model_free", None, _P)
_fit = _sig("ncfpy_fit", _c.c_int, _P, _P, _c.c_int, _c.c_int, _c.c_int, _c.c_int, _c.c_int, _c.c_int, _c.c_int,
            _PROGRESS, _i32p, _f64p)
_tune = _sig("ncfpy_tune", _P, _P, _c.c_double, _c.c_ulonglong, _c.c_int, _c.c_int, _c.c_int, _c.c_int, _c.c_int,
             _c.c_int, _TUNE_PROGRESS)
_tune_info = _sig("ncfpy_tune_info", None, _P, _i32p)
_tune_row = _sig("ncfpy_tune_row", _c.c_int, _P, _c.c_int, _c.c_int, _f64p)
_tune_averaged = _sig("ncfpy_tune_averaged", _c.c_int, _P, _c.c_int, _f64p)
_tune_final = _sig("ncfpy_tune_final", _P, _P, _P, _PROGRESS)
_tune_free = _sig("ncfpy_tune_free", None, _P)
_evaluate = _sig("ncfpy_evaluate", _c.c_int, _P, _P, _c.c_int, _c.c_int, _i32p, _c.c_int, _f64p)
_save = _sig("ncf_save", _c.c_int, _P, _c.c_char_p, _c.c_int)
_load_model = _sig("ncfpy_load_model", _P, _c.c_char_p)
_model_info = _sig("ncfpy_model_info", _c.c_int, _P, _i64p)
_find = _sig("ncf_find", _c.c_int, _P, _c.c_int, _c.c_char_p)
_id = _sig("ncf_id", _c.c_int, _P, _c.c_int, _c.c_int, _c.c_char_p, _c.c_size_t)
_recommend = _sig("ncfpy_recommend", _c.c_int, _P, _c.c_int, _P, _c.c_int, _c.c_int, _P, _c.c_int, _P, _c.c_int, _c.c_int,
                  _P, _P)  # (plain pointers: a call's argument checks are most of its cost from Python)
_recommend_users = _sig("ncfpy_recommend_users", _c.c_int, _P, _i32p, _c.c_int, _c.c_int, _c.c_int, _c.c_int, _i32p, _f32p,
                        _i32p)
_row_size = _sig("ncf_row_size", _c.c_int, _P)
_fold_in = _sig("ncfpy_fold_in", _c.c_int, _P, _i32p, _c.c_int, _f32p)
_similar = _sig("ncfpy_similar_items", _c.c_int, _P, _c.c_int, _c.c_int, _i32p, _f32p)
_predict = _sig("ncfpy_predict", _c.c_int, _P, _i32p, _i32p, _c.c_int, _f32p)

MAX_ID_BYTES = 256
_HOLDOUTS = {"auto": 0, "latest": 1, "random": 2, "none": 3, "ratio": 4, "time": 5, "cutoff": 6}
_HOLDOUT_NAMES = {0: "auto", 1: "latest", 2: "random", 3: "none", 4: "ratio", 5: "time", 6: "cutoff", 7: "saved"}
_MODELS = {"neumf": 0, "gmf": 1, "mlp": 2, "mf": 3}
_OPTIMIZERS = {"adam": 0, "sgd": 1, "als": 2}
_METRICS = {"hr": 0, "ndcg": 1, "mrr": 2, "recall": 3, "precision": 4, "map": 5}
_WEIGHTINGS = {"none": 0, "linear": 1, "log": 2}


class Error(Exception):
    """A failed ncf.h call; the message is the library's (file, line and problem where it knows them)."""


def _fail(what=None):
    raise Error(what or _error_text().decode("utf-8", "replace"))


def _check(rc):
    if rc < 0:
        _fail()
    return rc


def _b(s):
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


def version():
    return _version().decode()


def set_threads(n):
    """OpenMP threads for training and batch calls (no effect without OpenMP)."""
    _set_threads(int(n))


def _choice(table, value, what):
    if value not in table:
        raise ValueError("%s %r: one of %s" % (what, value, ", ".join(sorted(table))))
    return table[value]


def _holdout(holdout):
    """'latest', 'random', 'none', 'ratio:0.2', 'time:0.1', 'time:@T' -> (code, fraction, cutoff)."""
    if isinstance(holdout, str) and ":" in holdout:
        kind, arg = holdout.split(":", 1)
        if kind == "time" and arg.startswith("@"):
            return _HOLDOUTS["cutoff"], 0.0, int(arg[1:])
        if kind not in ("ratio", "time"):
            raise ValueError("holdout %r: latest, random, none, ratio:F, time:F or time:@T" % holdout)
        return _HOLDOUTS[kind], float(arg), 0
    return _choice(_HOLDOUTS, holdout, "holdout"), 0.0, 0


def _field(s):
    s = str(s)
    if any(ch in s for ch in "\t\"\r\n") or s[:1] == " " or s[-1:] == " ":
        if "\r" in s or "\n" in s:
            raise ValueError("id %r holds a line end" % s)
        return '"' + s.replace('"', '""') + '"'
    return s


class Dataset:
    """Interactions after the split: training positives, held-out test (and validation) items,
    ids as written. Build one with from_file, from_arrays or from_dataframe."""

    _INFO = ["users", "items", "train", "test", "validation", "lines", "users_read", "items_read", "duplicates",
             "below_min_rating", "users_few_ratings", "items_few_item_ratings", "users_every_item", "holdout",
             "users_only_held_out", "items_only_held_out", "weight_min", "weight_max", "many_items"]

    def __init__(self, handle):
        self._h = handle
        self._users = self._items = None

    @staticmethod
    def _options(holdout="auto", validation=True, min_rating=None, sep=None, min_ratings=0, min_item_ratings=0,
                 weighting="none", alpha=1.0, seed=1, strength_col=None, header=None, eval_negatives=0):
        code, fraction, cutoff = _holdout(holdout)
        return [code, fraction, cutoff, 1 if validation and code != _HOLDOUTS["none"] else 0,
                -1e308 if min_rating is None else float(min_rating), _b(sep) if sep else None, int(min_ratings),
                int(min_item_ratings), _choice(_WEIGHTINGS, weighting, "weighting"), float(alpha), int(seed),
                _b(strength_col) if strength_col else None, {None: 0, True: 1, False: 2}[header], int(eval_negatives)]

    @classmethod
    def from_file(cls, path, **options):
        """Any delimited log (separator, header and columns found), the NCF paper's split, or a
        split written by save_split. Options: holdout ('latest', 'random', 'none', 'ratio:0.2',
        'time:0.1', 'time:@T'), validation, min_rating, sep, min_ratings, min_item_ratings,
        weighting ('none', 'linear', 'log'), alpha, seed, strength_col, header, eval_negatives
        (sampled candidates per test user: 0 is the file's, or 99)."""
        o = cls._options(**options)
        h = _load(_b(_os.fspath(path)), None, 0, *o[:12], o[12], 0, o[13])
        return cls(h) if h else _fail()

    @classmethod
    def from_arrays(cls, users, items, strengths=None, timestamps=None, name="arrays", **options):
        """Parallel sequences of user and item ids (ints or strings, kept as written), with
        optional strengths (weighting) and timestamps (time splits, 'latest')."""
        n = len(users)
        if len(items) != n or (strengths is not None and len(strengths) != n) or \
                (timestamps is not None and len(timestamps) != n):
            raise ValueError("from_arrays: users, items, strengths and timestamps need one entry each")
        if strengths is not None and options.get("weighting", "none") == "none":
            options["weighting"] = "linear"
        cols = [[_field(u) for u in users], [_field(i) for i in items]]
        if strengths is not None:
            cols.append([repr(float(s)) for s in strengths])
        if timestamps is not None:
            cols.append([str(int(t)) for t in timestamps])
        text = "".join("\t".join(row) + "\n" for row in zip(*cols)).encode("utf-8")
        o = cls._options(**options)
        h = _load(_b(name), text, len(text), *o[:12], 0, 1 if timestamps is not None else 0, o[13])
        return cls(h) if h else _fail()

    @classmethod
    def from_dataframe(cls, df, user="user", item="item", strength=None, timestamp=None, **options):
        """A pandas DataFrame's columns (names given), as from_arrays."""
        return cls.from_arrays(df[user].tolist(), df[item].tolist(),
                               None if strength is None else df[strength].tolist(),
                               None if timestamp is None else df[timestamp].tolist(), name="dataframe", **options)

    @property
    def report(self):
        """What the load read, kept and held out, as a dict."""
        out = _np.zeros(len(self._INFO), _np.float64)
        _dataset_info(self._h, out)
        r = {k: int(v) for k, v in zip(self._INFO, out)}
        r["weight_min"], r["weight_max"] = float(out[16]), float(out[17])
        r["holdout"] = _HOLDOUT_NAMES.get(r["holdout"], "?")
        r["many_items"] = bool(r["many_items"])
        return r

    @property
    def num_users(self):
        return self.report["users"]

    @property
    def num_items(self):
        return self.report["items"]

    def _ids(self, side):
        n = self.num_items if side else self.num_users
        buf = _c.create_string_buffer(MAX_ID_BYTES + 1)
        out = []
        for k in range(n):
            _check(_dataset_id(self._h, side, k, buf, len(buf)))
            out.append(buf.value.decode("utf-8", "surrogateescape"))
        return out

    @property
    def user_ids(self):
        if self._users is None:
            self._users = self._ids(0)
        return self._users

    @property
    def item_ids(self):
        if self._items is None:
            self._items = self._ids(1)
        return self._items

    def __del__(self):
        if getattr(self, "_h", None):
            _dataset_free(self._h)
            self._h = None


class Model:
    """A NeuMF ('neumf'), GMF, MLP or MF ('mf': biases + dot product) model. Settings not given
    are the paper's (factors 8, layers 64,32,16,8, Adam lr 0.001, batch 256, 4 negatives).
    optimizer 'sgd' with batch_size=1 and model 'mf' is Rendle et al.'s recipe (fit(decay=True)).
    optimizer 'als' (model 'mf') fits every cell of the matrix by alternating least squares, as
    implicit's ALS: a cell without a positive weighs `unobserved` (0.1), a positive its
    confidence; a few epochs, no learning rate or negatives."""

    def __init__(self, model="neumf", factors=8, layers=None, learning_rate=None, regularization=0.0, negatives=4,
                 batch_size=None, init_sd=None, seed=1, optimizer="adam", unobserved=None):
        self._type = _choice(_MODELS, model, "model")
        self._settings = (int(factors), list(layers or []), learning_rate or 0.0, float(regularization), int(negatives),
                          batch_size or 0, init_sd or 0.0, int(seed), _choice(_OPTIMIZERS, optimizer, "optimizer"),
                          float(unobserved or 0.0))
        self._h = None
        self._users = self._items = None
        self.chosen_epoch = self.averaged = self.final_epochs = None

    def _need(self):
        if not self._h:
            raise Error("the model is not trained or loaded yet (fit or Model.load)")

    def fit(self, data, epochs=20, patience=0, select="hr@10", callback=None, progress=None, decay=False,
            shuffle="examples"):
        """Trains on data. With validation items (the default), each epoch is evaluated on them
        and the model is left at the chosen epoch (select: 'ndcg@20', 'map@10', ...; full
        ranking for a split of many items a user). callback(epoch, done, total, loss) is
        called every few batches (an exception it raises is raised when training returns).
        progress=True prints a progress line. decay=True: the learning rate falls linearly over
        the epochs (ncf_decayed_lr). shuffle: an epoch's order, 'examples' (each shuffled on
        its own, as TF's NCF) or 'positives' (each positive followed by its negatives: 1.2x as
        fast for the paper's NeuMF; a user's rows take one step for its examples).
        Returns self."""
        f, layers, lr, reg, neg, batch, sd, seed, opt, unobserved = self._settings
        name, _, k = select.partition("@")
        metric, k = _choice(_METRICS, name.lower(), "select metric"), int(k or 10)
        by_positive = _choice({"examples": 0, "positives": 1}, shuffle, "shuffle")
        if self._h:
            _model_free(self._h)
        lay = _np.ascontiguousarray(layers or [0], dtype=_np.int32)
        self._h = _model_create(data._h, self._type, f, lay, len(layers), lr, reg, neg, batch, sd, seed, opt,
                                unobserved)
        if not self._h:
            _fail()
        self._users = self._items = None
        user_cb = callback
        if progress:
            user_cb = _progress_printer(callback)
        state = {"error": None}

        def bridge(_user, epoch, done, total, loss):
            try:
                return 1 if user_cb and user_cb(int(epoch), int(done), int(total), float(loss)) else 0
            except Exception as e:  # (raised after the call returns)
                state["error"] = e
                return 1

        cb = _PROGRESS(bridge) if user_cb else _PROGRESS()
        chosen = _np.zeros(2, _np.int32)
        value = _np.zeros(1, _np.float64)
        rep = data.report
        _check(_fit(self._h, data._h, int(epochs), int(patience), metric, k, 1 if rep["many_items"] else 0,
                    1 if decay else 0, by_positive, cb, chosen, value))
        if state["error"]:
            raise state["error"]
        self.chosen_epoch, self.epochs_trained, self.chosen_value = int(chosen[0]), int(chosen[1]), float(value[0])
        return self

    def tune(self, data, seconds=None, max_epochs=18, patience=3, select="hr@10", progress=None, callback=None,
             seeds=4):
        """Searches settings on data's validation items (never its test), as ./demo --tune: model
        type, factors, learning rate, L2, negatives, batch and weighting, by successive halving
        within a planned budget of seconds (default: from the data's size, at least 30); the
        same table for a seed on any number of threads. Then trains the winner on training +
        validation for its chosen epochs, as this model: an MF or GMF winner trained from up to
        `seeds` seeds, their scores averaged (self.seeds says how many), for the epochs at which
        their average trained on training alone did best on validation (self.averaged, a dict as a
        run's; None with one seed). self.final_epochs is the epochs trained. self.trials holds a
        dict a run, self.best the winner's. callback(row) hears each run as it ends; progress=True
        prints a line a run. A budget too small for one run warns and fits the defaults. Returns
        self."""
        if not data.report["validation"]:
            raise Error("tune needs validation items: load the data with validation=True")
        if seconds is not None and not seconds > 0:
            raise Error("tune: seconds must be > 0 (None: from the data's size)")
        if not 1 <= int(seeds) <= 64:
            raise Error("tune: seeds must be 1 to 64")
        name, _, k = select.partition("@")
        metric, k = _choice(_METRICS, name.lower(), "select metric"), int(k or 10)
        seed = self._settings[7]
        state = {"error": None, "t0": _time.time()}

        def heard(_user, row, trial, rung, epochs, planned):
            try:
                if row and callback:
                    callback(_trial_dict(_np.ctypeslib.as_array(_c.cast(row, _c.POINTER(_c.c_double)), (24,))))
                if progress and trial >= -1:
                    _tune_line(trial, rung, epochs, planned, _time.time() - state["t0"])
            except Exception as e:  # (raised after the search returns)
                state["error"] = state["error"] or e

        cb = _TUNE_PROGRESS(heard) if (progress or callback) else _TUNE_PROGRESS()
        r = _tune(data._h, float(seconds or 0), seed, int(max_epochs), int(patience), metric, k,
                  1 if data.report["many_items"] else 0, int(seeds), cb)
        if not r:
            _fail()
        try:
            if state["error"]:
                raise state["error"]
            info = _np.zeros(6, _np.int32)
            _tune_info(r, info)
            self.trials = []
            for i in range(int(info[0])):
                x = _np.zeros(24, _np.float64)
                _check(_tune_row(r, i, metric, x))
                self.trials.append(_trial_dict(x))
            if info[3]:
                import warnings
                warnings.warn("the budget is too small for one run of the search: fitting the defaults")
                self.best = None
                return self.fit(data, progress=progress)
            self.best = self.trials[int(info[1])]
            self.seeds, self.final_epochs = int(info[4]), int(info[5])
            x = _np.zeros(24, _np.float64)
            self.averaged = _trial_dict(x) if _tune_averaged(r, metric, x) == 0 else None
            h = _tune_final(r, data._h, _PROGRESS(_bridge(_progress_printer(None))) if progress else _PROGRESS())
            if not h:
                _fail()
        finally:
            _tune_free(r)
        if self._h:
            _model_free(self._h)
        self._h, self._users, self._items = h, None, None
        b = self.best
        self._type = _MODELS[b["model"]]
        self._settings = (b["factors"], [b["mlp"]] if b["mlp"] else [], b["lr"], b["l2"], b["negatives"], b["batch"],
                          0.1 if b["decay"] else self._settings[6], seed, _OPTIMIZERS[b["optimizer"]],
                          b["unobserved"])
        self.chosen_epoch = self.epochs_trained = self.final_epochs
        self.chosen_value = (self.averaged or b)["value"]
        return self

    def evaluate(self, data, k=10, target="test", full_ranking=False):
        """The figures on data's test (or 'validation') items at k (an int or a list): a dict,
        or a list of dicts for a list. Sampled candidates for one item a user unless
        full_ranking; always full ranking for many."""
        return _evaluate_figures(self._h, data, k, target, full_ranking, self._need)

    def save(self, path):
        self._need()
        _check(_save(self._h, _b(_os.fspath(path)), 1))
        return self

    @classmethod
    def load(cls, path):
        m = cls()
        m._h = _load_model(_b(_os.fspath(path)))
        if not m._h:
            _fail()
        return m

    @property
    def info(self):
        self._need()
        out = _np.zeros(6, _np.int64)
        _model_info(self._h, out)
        return {"users": int(out[0]), "items": int(out[1]), "model": {v: k for k, v in _MODELS.items()}[int(out[2])],
                "factors": int(out[3]), "epoch": int(out[4]), "parameters": int(out[5])}

    def _names(self, side):
        if (self._items if side else self._users) is None:
            n = self.info["items" if side else "users"]
            buf = _c.create_string_buffer(MAX_ID_BYTES + 1)
            ids = []
            for k in range(n):
                _check(_id(self._h, side, k, buf, len(buf)))
                ids.append(buf.value.decode("utf-8", "surrogateescape"))
            if side:
                self._items = ids
            else:
                self._users = ids
        return self._items if side else self._users

    def _index(self, side, id_):
        r = _find(self._h, side, _b(str(id_)))
        if r < 0:
            _fail()
        return r

    def _indices(self, side, ids):
        return _np.ascontiguousarray([self._index(side, i) for i in ids], dtype=_np.int32)

    def recommend(self, user_id, k=10, allow=None, deny=None, exclude_rated=True, probabilities=False):
        """The k best items for a known user, best first: (item ids, scores). allow: only these
        item ids; deny: never these."""
        if not self._h:
            self._need()
        u = _find(self._h, 0, str(user_id).encode("utf-8"))
        if u < 0:
            _fail()
        return self._recommend(u, None, k, allow, deny, exclude_rated, probabilities)

    def _recommend(self, u, row, k, allow, deny, exclude_rated, probabilities):
        k = max(int(k), 1)
        items = _np.empty(k, _np.int32)
        scores = _np.empty(k, _np.float32)
        a = None if allow is None else self._indices(1, allow)
        d = None if deny is None else self._indices(1, deny)
        n = _recommend(self._h, u, None if row is None else row.ctypes.data, k, 1 if exclude_rated else 0,
                       None if a is None else a.ctypes.data, 0 if a is None else len(a),
                       None if d is None else d.ctypes.data, 0 if d is None else len(d),
                       1 if probabilities else 0, items.ctypes.data, scores.ctypes.data)
        if n < 0:
            _fail()
        names = self._items if self._items is not None else self._names(1)
        return [names[i] for i in items[:n].tolist()], scores[:n]

    def recommend_users(self, user_ids, k=10, exclude_rated=True, probabilities=False):
        """Many known users at once, on all threads: (ids, scores), each a list of arrays."""
        self._need()
        users = self._indices(0, user_ids)
        items = _np.empty(len(users) * int(k), _np.int32)
        scores = _np.empty(len(users) * int(k), _np.float32)
        counts = _np.empty(len(users), _np.int32)
        _check(_recommend_users(self._h, users, len(users), int(k), 1 if exclude_rated else 0, 1 if probabilities else 0,
                                items, scores, counts))
        names = _np.array(self._names(1), dtype=object)
        return ([names[items[j * k:j * k + counts[j]]] for j in range(len(users))],
                [scores[j * k:j * k + counts[j]] for j in range(len(users))])

    def recommend_indices(self, user_indices, k=10, exclude_rated=True):
        """recommend_users by indices, without id lookups: (items [n, k] int32, scores, counts)."""
        self._need()
        users = _np.ascontiguousarray(user_indices, dtype=_np.int32)
        items = _np.empty((len(users), int(k)), _np.int32)
        scores = _np.empty((len(users), int(k)), _np.float32)
        counts = _np.empty(len(users), _np.int32)
        _check(_recommend_users(self._h, users, len(users), int(k), 1 if exclude_rated else 0, 0, items.reshape(-1),
                                scores.reshape(-1), counts))
        return items, scores, counts

    def fold_in(self, item_ids, k=10, allow=None, deny=None):
        """A new user given by the items it took: folded in without retraining, and its k best
        items (never its own): (item ids, scores). An ALS model's row is the exact solution of
        its training's least squares for those items, as implicit's recalculate_user."""
        self._need()
        items = self._indices(1, item_ids)
        row = _np.empty(_row_size(self._h), _np.float32)
        _check(_fold_in(self._h, items, len(items), row))
        deny = list(item_ids) + list(deny or [])
        return self._recommend(0, row, k, allow, deny, False, False)

    def similar_items(self, item_id, k=10):
        """The k items most like item_id (cosine of their vectors): (item ids, scores)."""
        self._need()
        items = _np.empty(max(int(k), 1), _np.int32)
        scores = _np.empty(max(int(k), 1), _np.float32)
        n = _check(_similar(self._h, self._index(1, item_id), int(k), items, scores))
        names = self._names(1)
        return [names[i] for i in items[:n]], scores[:n].copy()

    def predict(self, user_ids, item_ids):
        """Logits of (user, item) pairs."""
        self._need()
        u, i = self._indices(0, user_ids), self._indices(1, item_ids)
        out = _np.empty(len(u), _np.float32)
        _check(_predict(self._h, u, i, len(u), out))
        return out

    def __del__(self):
        if getattr(self, "_h", None):
            _model_free(self._h)
            self._h = None


def popularity(data, k=10, target="test", full_ranking=False):
    """The popularity baseline's figures on the same candidates, as Model.evaluate."""
    return _evaluate_figures(None, data, k, target, full_ranking, lambda: None)


_FIGURES = ["hr", "ndcg", "mrr", "recall", "precision", "map", "coverage", "popularity", "users", "k"]


def _evaluate_figures(handle, data, k, target, full_ranking, need):
    need()
    ks = [k] if isinstance(k, int) else list(k)
    arr = _np.ascontiguousarray(ks, dtype=_np.int32)
    out = _np.zeros(10 * max(len(ks), 1), _np.float64)
    _check(_evaluate(handle, data._h, {"test": 0, "validation": 1}[target], 1 if full_ranking else 0, arr, len(ks), out))
    res = []
    for j in range(len(ks)):
        d = dict(zip(_FIGURES, out[10 * j:10 * j + 10].tolist()))
        d["users"], d["k"] = int(d["users"]), int(d["k"])
        res.append(d)
    return res[0] if isinstance(k, int) else res


def _trial_dict(x):
    names = {v: k for k, v in _MODELS.items()}
    return {"trial": int(x[0]), "rung": int(x[1]), "model": names[int(x[2])], "factors": int(x[3]), "mlp": int(x[4]),
            "lr": float(x[5]), "l2": float(x[6]), "negatives": int(x[7]), "batch": int(x[8]), "weighted": bool(x[9]),
            "epochs": int(x[10]), "epochs_trained": int(x[11]), "chosen_epoch": int(x[12]), "hr": float(x[13]),
            "ndcg": float(x[14]), "mrr": float(x[15]), "value": float(x[16]), "planned_seconds": float(x[17]),
            "winner": bool(x[18]), "decay": bool(x[19]), "beside": bool(x[20]), "partner": bool(x[21]),
            "optimizer": {v: k for k, v in _OPTIMIZERS.items()}[int(x[22])], "unobserved": float(x[23])}


def _tune_line(trial, rung, epochs, planned, seconds):
    import sys
    if trial >= 0 and rung == 3:
        sys.stderr.write("\rtrial %d, its seeds averaged: %d epochs at most (planned %.1f s; %.0f s so far)   "
                         % (trial, epochs, planned, seconds))
    elif trial >= 0:
        sys.stderr.write("\rtrial %d, rung %d: %d epochs at most (planned %.1f s; %.0f s so far)   "
                         % (trial, rung, epochs, planned, seconds))
    else:
        sys.stderr.write("\rsearch done in %.0f s%40s\n" % (seconds, ""))
    sys.stderr.flush()


def _bridge(fn):
    return lambda _u, e, d, t, l: 1 if fn(int(e), int(d), int(t), float(l)) else 0


def _progress_printer(inner):
    """A progress line on stderr, redrawn in place (a notebook shows it under the cell)."""
    import sys
    last = {"epoch": None}

    def show(epoch, done, total, loss):
        pct = 100.0 * done / total if total else 100.0
        bar = "#" * int(pct / 5)
        sys.stderr.write("\repoch %d [%-20s] %5.1f%% loss %.4f" % (epoch, bar, pct, loss))
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
        last["epoch"] = epoch
        return inner(epoch, done, total, loss) if inner else False

    return show
