"""python/tests/signatures.py NCF_H SHIM_C INIT_PY - the package's ctypes declarations checked
against the C prototypes they call: every _sig("name", result, *arguments) in INIT_PY names a
function that NCF_H declares (NCFDEF) or SHIM_C exports (PY_EXPORT), with as many arguments,
each of a ctypes type that passes the C type (an int as c_int, a double as c_double, a pointer
as c_void_p, c_char_p or an ndpointer of its element type, a callback as a CFUNCTYPE of its
typedef's own types). A changed C argument list fails here, not in a user's interpreter.
Prints each mismatch; exits 1 if any. Needs no build and no NumPy (it reads the sources)."""
import ast
import re
import sys

# a C type (qualifiers and names dropped) -> the ctypes spellings that pass it
SCALARS = {
    "int": {"c_int"}, "double": {"c_double"}, "float": {"c_float"}, "size_t": {"c_size_t"},
    "long long": {"c_longlong"}, "unsigned long long": {"c_ulonglong"}, "int64_t": {"c_int64", "c_longlong"},
    "uint64_t": {"c_uint64", "c_ulonglong"}, "int32_t": {"c_int32", "c_int"}, "void": {"None"},
}
ARRAYS = {"int32_t": "_i32p", "int": "_i32p", "float": "_f32p", "double": "_f64p", "int64_t": "_i64p",
          "long long": "_i64p", "unsigned long long": "_u64p", "uint64_t": "_u64p"}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def split_params(params):
    params = params.strip()
    if params in ("", "void"):
        return []
    return [p.strip() for p in params.split(",")]


def c_type(decl):
    """'const int32_t *users' -> ('int32_t', 1); 'py_progress fn' -> ('py_progress', 0)."""
    decl = re.sub(r"\bconst\b|\bstruct\b", " ", decl)
    stars = decl.count("*")
    words = decl.replace("*", " ").split()
    if len(words) > 1 and not (len(words) == 2 and words == ["long", "long"]) and \
            not (words[:2] == ["unsigned", "long"] and len(words) == 3):
        words = words[:-1]  # the parameter's name
    return " ".join(words), stars


def prototypes(path, marker, end):
    """name -> (result type, [parameter declarations]) of every function after marker."""
    text = strip_comments(open(path, encoding="utf-8").read())
    out = {}
    for m in re.finditer(marker + r"\s+([^;{()]*?)\b(\w+)\s*\(([^)]*)\)\s*" + end, text):
        out[m.group(2)] = (m.group(1).strip(), split_params(m.group(3)))
    return out


def callback_types(path):
    """typedef R (*name)(...): name -> [its parameter declarations], with the result first."""
    text = strip_comments(open(path, encoding="utf-8").read())
    return {m.group(2): [m.group(1)] + split_params(m.group(3))
            for m in re.finditer(r"typedef\s+(\w[\w ]*?)\s*\(\s*\*\s*(\w+)\s*\)\s*\(([^)]*)\)", text)}


def ctypes_name(node):
    """The ctypes spelling of an expression in INIT_PY: _c.c_int -> 'c_int', _P -> '_P', None."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    if isinstance(node, ast.Call) and ctypes_name(node.func) == "POINTER" and len(node.args) == 1:
        return "POINTER(%s)" % ctypes_name(node.args[0])
    return ast.dump(node)


def passes(decl, spelling, functypes, callbacks, where):
    """A message when the ctypes spelling cannot pass C declaration decl, else None."""
    base, stars = c_type(decl)
    if stars == 0 and base in callbacks:
        want = callbacks[base]
        got = functypes.get(spelling)
        if got is None:
            return "%s: %s wants a %s callback, given %s" % (where, decl, base, spelling)
        if len(got) != len(want):
            return "%s: callback %s has %d types, %s %d" % (where, base, len(want), spelling, len(got))
        for w, g in zip(want, got):
            msg = passes(w, g, functypes, callbacks, where + " (callback " + base + ")")
            if msg:
                return msg
        return None
    if stars == 0:
        ok = SCALARS.get(base)
        if ok is None:
            return "%s: no ctypes rule for the C type %s" % (where, decl)
        return None if spelling in ok else "%s: %s wants %s, given %s" % (where, decl, "/".join(sorted(ok)), spelling)
    if base == "char" and stars == 1:
        return None if spelling in ("c_char_p", "_P", "c_void_p") else "%s: %s given %s" % (where, decl, spelling)
    if stars == 1 and spelling == ARRAYS.get(base):
        return None
    if stars == 1 and spelling.startswith("POINTER(") and spelling[8:-1] in SCALARS.get(base, ()):
        return None
    if spelling in ("_P", "c_void_p"):
        return None
    return "%s: the pointer %s given %s" % (where, decl, spelling)


def main(ncf_h, shim_c, init_py):
    protos = prototypes(ncf_h, r"NCFDEF", r";")
    protos.update(prototypes(shim_c, r"PY_EXPORT", r"\{"))
    callbacks = callback_types(shim_c)
    callbacks.update(callback_types(ncf_h))
    tree = ast.parse(open(init_py, encoding="utf-8").read())
    functypes, problems, checked = {}, [], 0
    for node in ast.walk(tree):  # _NAME = _c.CFUNCTYPE(result, *arguments)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                ctypes_name(node.value.func) == "CFUNCTYPE":
            functypes[node.targets[0].id] = [ctypes_name(a) for a in node.value.args]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and ctypes_name(node.func) == "_sig"):
            continue
        name = node.args[0].value
        res, args = ctypes_name(node.args[1]), [ctypes_name(a) for a in node.args[2:]]
        checked += 1
        if name not in protos:
            problems.append("%s: neither ncf.h nor the shim declares it" % name)
            continue
        cres, cparams = protos[name]
        if len(cparams) != len(args):
            problems.append("%s: C takes %d arguments, ctypes declares %d" % (name, len(cparams), len(args)))
            continue
        rbase, rstars = c_type(cres + " x")
        if rstars:
            if res not in ("_P", "c_void_p", "c_char_p"):
                problems.append("%s: returns a pointer (%s), ctypes says %s" % (name, cres, res))
        else:
            msg = passes(cres + " x", res, functypes, callbacks, name + " (result)")
            if msg:
                problems.append(msg)
        for k, (decl, spelling) in enumerate(zip(cparams, args)):
            msg = passes(decl, spelling, functypes, callbacks, "%s argument %d" % (name, k + 1))
            if msg:
                problems.append(msg)
    for p in problems:
        print(p)
    print("%d ctypes declarations checked against their C prototypes, %d mismatches" % (checked, len(problems)))
    return 1 if problems or not checked else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
