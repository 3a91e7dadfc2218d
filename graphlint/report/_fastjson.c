/* jsonfmt.dumps in C: what json.dumps(obj, indent=N) writes, byte for byte.
 *
 * With indent set, the standard library's encoder is pure Python; the JSON and SARIF reports of
 * a big model (thousands of findings, megabytes) spend a tenth of a second there, after every
 * rule has run. This walks the same types in the same order as jsonfmt.py (str, None, bools,
 * int and float subclasses, list/tuple, dict, then ``default``) and quotes strings with the json
 * module's own C function, which the caller passes in. tests/test_report_jsonfmt.py compares
 * both implementations with json.dumps.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
    PyObject *quote, *deflt;
    Py_ssize_t indent;
} Out;

static int put(Out *o, const char *s, Py_ssize_t n) {
    if (o->len + n > o->cap) {
        Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
        while (cap < o->len + n) cap *= 2;
        char *more = PyMem_Realloc(o->buf, cap);
        if (more == NULL) {
            PyErr_NoMemory();
            return 0;
        }
        o->buf = more;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    return 1;
}

static int put_str(Out *o, PyObject *u) { /* a str's UTF-8 (UnicodeEncodeError for a lone surrogate) */
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(u, &n);
    return s != NULL && put(o, s, n);
}

static int put_new(Out *o, PyObject *u) { /* put_str of a new reference, released */
    if (u == NULL) return 0;
    int ok = put_str(o, u);
    Py_DECREF(u);
    return ok;
}

static int newline(Out *o, Py_ssize_t depth) {
    if (!put(o, "\n", 1)) return 0;
    for (Py_ssize_t i = 0; i < depth * o->indent; i++)
        if (!put(o, " ", 1)) return 0;
    return 1;
}

/* float.__repr__, with json's spellings of the non-finite values. */
static PyObject *float_text(PyObject *f) {
    double d = PyFloat_AS_DOUBLE(f);
    if (Py_IS_NAN(d)) return PyUnicode_FromString("NaN");
    if (Py_IS_INFINITY(d)) return PyUnicode_FromString(d > 0 ? "Infinity" : "-Infinity");
    return PyFloat_Type.tp_repr(f);
}

/* A dict key as json converts it, before quoting (a new reference). */
static PyObject *key_text(PyObject *k) {
    if (PyUnicode_Check(k)) return Py_NewRef(k);
    if (PyFloat_Check(k)) return float_text(k);
    if (k == Py_True) return PyUnicode_FromString("true");
    if (k == Py_False) return PyUnicode_FromString("false");
    if (k == Py_None) return PyUnicode_FromString("null");
    if (PyLong_Check(k)) return PyLong_Type.tp_repr(k);
    PyErr_Format(PyExc_TypeError, "keys must be str, int, float, bool or None, not %.100s", Py_TYPE(k)->tp_name);
    return NULL;
}

static int encode(Out *o, PyObject *v, Py_ssize_t depth);

static int encode_items(Out *o, PyObject *v, Py_ssize_t depth) {
    int is_dict = PyDict_Check(v);
    Py_ssize_t n = is_dict ? PyDict_GET_SIZE(v) : PySequence_Fast_GET_SIZE(v);
    if (n == 0) return put(o, is_dict ? "{}" : "[]", 2);
    if (!put(o, is_dict ? "{" : "[", 1)) return 0;
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *x;
    while (is_dict ? PyDict_Next(v, &pos, &k, &x) : i < n) {
        if (!is_dict) {
            if (PySequence_Fast_GET_SIZE(v) != n) {
                PyErr_SetString(PyExc_RuntimeError, "list changed size during encoding");
                return 0;
            }
            x = PySequence_Fast_GET_ITEM(v, i);
        }
        if ((i++ && !put(o, ",", 1)) || !newline(o, depth + 1)) return 0;
        if (is_dict) {
            PyObject *key = key_text(k);
            if (key == NULL) return 0;
            int ok = put_new(o, PyObject_CallOneArg(o->quote, key));
            Py_DECREF(key);
            if (!ok || !put(o, ": ", 2)) return 0;
        }
        /* the dict may change under a ``default`` call: keep the value alive */
        Py_INCREF(x);
        int ok = encode(o, x, depth + 1);
        Py_DECREF(x);
        if (!ok) return 0;
        if (is_dict && PyDict_GET_SIZE(v) != n) {
            PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during encoding");
            return 0;
        }
    }
    return newline(o, depth) && put(o, is_dict ? "}" : "]", 1);
}

static int encode(Out *o, PyObject *v, Py_ssize_t depth) {
    if (PyUnicode_Check(v)) return put_new(o, PyObject_CallOneArg(o->quote, v));
    if (v == Py_None) return put(o, "null", 4);
    if (v == Py_True) return put(o, "true", 4);
    if (v == Py_False) return put(o, "false", 5);
    if (PyLong_Check(v)) return put_new(o, PyLong_Type.tp_repr(v));
    if (PyFloat_Check(v)) return put_new(o, float_text(v));
    if (Py_EnterRecursiveCall(" while encoding a JSON report")) return 0;
    int ok;
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v) || PyDict_CheckExact(v)) {
        ok = encode_items(o, v, depth);
    } else if (PyList_Check(v) || PyTuple_Check(v) || PyDict_Check(v)) {
        /* a subclass: read through its own iteration, as json's Python encoder does */
        PyObject *exact = PyDict_Check(v) ? PyDict_New() : PySequence_List(v);
        if (exact != NULL && PyDict_Check(v)) {
            PyObject *items = PyObject_CallMethod(v, "items", NULL);
            if (items == NULL || PyDict_MergeFromSeq2(exact, items, 1) < 0) Py_CLEAR(exact);
            Py_XDECREF(items);
        }
        ok = exact != NULL && encode_items(o, exact, depth);
        Py_XDECREF(exact);
    } else if (o->deflt != Py_None) {
        PyObject *d = PyObject_CallOneArg(o->deflt, v);
        ok = d != NULL && encode(o, d, depth);
        Py_XDECREF(d);
    } else {
        PyErr_Format(PyExc_TypeError, "Object of type %.100s is not JSON serializable", Py_TYPE(v)->tp_name);
        ok = 0;
    }
    Py_LeaveRecursiveCall();
    return ok;
}

static PyObject *dumps(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj;
    Out o = {NULL, 0, 0, NULL, NULL, 0};
    if (!PyArg_ParseTuple(args, "OnOO", &obj, &o.indent, &o.quote, &o.deflt)) return NULL;
    if (o.indent < 0) {
        PyErr_SetString(PyExc_ValueError, "indent must be 0 or more");
        return NULL;
    }
    PyObject *result = encode(&o, obj, 0) ? PyUnicode_DecodeUTF8(o.buf ? o.buf : "", o.len, NULL) : NULL;
    PyMem_Free(o.buf);
    return result;
}

static PyMethodDef methods[] = {
    {"dumps", dumps, METH_VARARGS,
     "dumps(obj, indent, quote, default) -> str\n\n"
     "json.dumps(obj, indent=indent, default=default) with strings quoted by ``quote`` (json's "
     "encode_basestring_ascii or encode_basestring); default may be None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastjson", "jsonfmt.dumps in C (see jsonfmt).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__fastjson(void) { return PyModule_Create(&module); }
