/* The ONNX loader's hot loop in C: the main graph's nodes, read from the model file's bytes.
 *
 * onnx_loader._Converter builds one Node and up to a few Values per NodeProto. In Python that
 * loop is the largest cost of linting a big model (about 13 µs a node, 100k+ nodes in an LLM),
 * half of it in protobuf's per-field wrappers. Here the NodeProtos are read straight from the
 * serialized ModelProto (protobuf's wire format, only the fields the loop reads) and the objects
 * are made by copying a template's slots, so the result is exactly what the Python loop makes
 * (tests/test_fastbuild.py builds every test model both ways and compares).
 *
 * fill() first checks the whole main graph without touching any object; when the bytes hold
 * anything it does not read the way protobuf would (a repeated graph field, which protobuf
 * merges; an unexpected wire type; a count that differs from the parsed model's), it returns
 * None and the loader runs the Python loop instead. A string that is not UTF-8 raises
 * TypeError, as the Python loop's checks do, and the loader reloads the model decoded.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>

typedef struct {
    const unsigned char *p, *end;
} Cursor;

typedef struct {
    const unsigned char *p;
    Py_ssize_t n;
} Span;

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static int read_varint(Cursor *c, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && c->p < c->end; shift += 7) {
        unsigned char b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* 1 and the next field's number and wire type; 0 at the end; -1 on malformed bytes. */
static int read_tag(Cursor *c, uint64_t *field, int *wt) {
    uint64_t tag;
    if (c->p >= c->end) return 0;
    if (!read_varint(c, &tag)) return -1;
    *field = tag >> 3;
    *wt = (int)(tag & 7);
    return *field == 0 ? -1 : 1;
}

static int read_len(Cursor *c, Span *s) {
    uint64_t n;
    if (!read_varint(c, &n) || n > (uint64_t)(c->end - c->p)) return 0;
    s->p = c->p;
    s->n = (Py_ssize_t)n;
    c->p += n;
    return 1;
}

static int skip(Cursor *c, int wt) {
    uint64_t v;
    Span s;
    switch (wt) {
    case WT_VARINT: return read_varint(c, &v);
    case WT_LEN: return read_len(c, &s);
    case WT_I64:
        if (c->end - c->p < 8) return 0;
        c->p += 8;
        return 1;
    case WT_I32:
        if (c->end - c->p < 4) return 0;
        c->p += 4;
        return 1;
    default: return 0; /* groups: not in onnx.proto */
    }
}

/* The one length-delimited occurrence of field ``want`` in ``msg``: 1 found, 0 absent, -1 when
 * malformed, repeated, or of another wire type. */
static int only_field(Span msg, uint64_t want, Span *out) {
    Cursor c = {msg.p, msg.p + msg.n};
    uint64_t field;
    int wt, r, found = 0;
    while ((r = read_tag(&c, &field, &wt)) > 0) {
        if (field == want) {
            if (wt != WT_LEN || found) return -1;
            if (!read_len(&c, out)) return -1;
            found = 1;
        } else if (!skip(&c, wt)) {
            return -1;
        }
    }
    return r < 0 ? -1 : found;
}

/* NodeProto fields the loop reads (onnx.proto). */
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTRIBUTE = 5, NODE_DOMAIN = 7 };

/* Whether a NodeProto's bytes read cleanly, with its string and message fields length-delimited. */
static int node_ok(Span node) {
    Cursor c = {node.p, node.p + node.n};
    uint64_t field;
    int wt, r;
    while ((r = read_tag(&c, &field, &wt)) > 0) {
        switch (field) {
        case NODE_INPUT: case NODE_OUTPUT: case NODE_NAME: case NODE_OP_TYPE: case NODE_ATTRIBUTE:
        case NODE_DOMAIN:
            if (wt != WT_LEN) return 0;
            break;
        default: break;
        }
        if (!skip(&c, wt)) return 0;
    }
    return r == 0;
}

/* The main graph's NodeProtos, in order, or 0 (no exception) when the bytes are not plain. */
static int node_spans(Span model, Span **out, Py_ssize_t *count) {
    Span graph;
    if (only_field(model, 7, &graph) != 1) return 0; /* ModelProto.graph */
    Py_ssize_t cap = 1024, n = 0;
    Span *spans = PyMem_Malloc(cap * sizeof(Span));
    if (spans == NULL) return 0;
    Cursor c = {graph.p, graph.p + graph.n};
    uint64_t field;
    int wt, r;
    while ((r = read_tag(&c, &field, &wt)) > 0) {
        if (field != 1) { /* GraphProto.node */
            if (!skip(&c, wt)) break;
            continue;
        }
        Span s;
        if (wt != WT_LEN || !read_len(&c, &s) || !node_ok(s)) {
            r = -1;
            break;
        }
        if (n == cap) {
            Span *more = PyMem_Realloc(spans, 2 * cap * sizeof(Span));
            if (more == NULL) {
                r = -1;
                break;
            }
            spans = more;
            cap *= 2;
        }
        spans[n++] = s;
    }
    if (r != 0) {
        PyMem_Free(spans);
        return 0;
    }
    *out = spans;
    *count = n;
    return 1;
}

/* Slot offsets of a class whose instances have only __slots__ (ir.Node, ir.Value). */
typedef struct {
    Py_ssize_t n;
    Py_ssize_t off[32];
} Layout;

static Py_ssize_t slot_offset(PyObject *type, PyObject *name) {
    PyObject *d = PyObject_GetAttr(type, name);
    if (d == NULL) return -1;
    Py_ssize_t off = -1;
    if (Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY)) off = m->offset;
    }
    Py_DECREF(d);
    if (off < 0) PyErr_Format(PyExc_TypeError, "%R is not a writable slot of %R", name, type);
    return off;
}

static int layout_of(PyObject *type, PyObject *names, Layout *lay) {
    if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) > 32) {
        PyErr_SetString(PyExc_TypeError, "slot names: a tuple of at most 32");
        return 0;
    }
    lay->n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < lay->n; i++)
        if ((lay->off[i] = slot_offset(type, PyTuple_GET_ITEM(names, i))) < 0) return 0;
    return 1;
}

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* A new object of the template's class with all of the template's slots (new references). */
static PyObject *copy_of(PyObject *tmpl, const Layout *lay) {
    PyTypeObject *tp = Py_TYPE(tmpl);
    PyObject *obj = tp->tp_alloc(tp, 0);
    if (obj == NULL) return NULL;
    for (Py_ssize_t i = 0; i < lay->n; i++) {
        PyObject *v = SLOT(tmpl, lay->off[i]);
        Py_XINCREF(v);
        SLOT(obj, lay->off[i]) = v;
    }
    return obj;
}

/* Stores ``v`` (a new reference, stolen) in a slot; 0 when ``v`` is NULL (an error is set). */
static int put(PyObject *obj, Py_ssize_t off, PyObject *v) {
    if (v == NULL) return 0;
    PyObject *old = SLOT(obj, off);
    SLOT(obj, off) = v;
    Py_XDECREF(old);
    return 1;
}

static PyObject *text(Span s) {
    PyObject *u = PyUnicode_DecodeUTF8((const char *)s.p, s.n, NULL);
    if (u == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear(); /* protobuf hands such a string over as bytes; the loader's checks refuse it */
        PyErr_SetString(PyExc_TypeError, "a name, op type or domain is not UTF-8");
    }
    return u;
}

typedef struct {
    PyObject *graph, *values, *value_tmpl;
    Layout vlay;
    Py_ssize_t v_name, v_graph, v_consumers, v_producer;
} Values;

/* A new Value named ``name`` (stolen) in the graph, not yet in ``values``. */
static PyObject *new_value(Values *vs, PyObject *name) {
    PyObject *v = copy_of(vs->value_tmpl, &vs->vlay);
    if (v == NULL) {
        Py_DECREF(name);
        return NULL;
    }
    Py_INCREF(vs->graph);
    if (!put(v, vs->v_name, name) || !put(v, vs->v_graph, vs->graph) || !put(v, vs->v_consumers, PyList_New(0))) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* The graph's Value named by ``s`` (a borrowed reference), created and added on first use. */
static PyObject *value_named(Values *vs, Span s) {
    PyObject *name = text(s);
    if (name == NULL) return NULL;
    PyObject *v = PyDict_GetItemWithError(vs->values, name);
    if (v != NULL || PyErr_Occurred()) {
        Py_DECREF(name);
        if (v != NULL && !Py_IS_TYPE(v, Py_TYPE(vs->value_tmpl))) { /* its slots are written below */
            PyErr_SetString(PyExc_TypeError, "graph.values holds something other than Values");
            return NULL;
        }
        return v;
    }
    v = new_value(vs, name);
    if (v == NULL) return NULL;
    int bad = PyDict_SetItem(vs->values, SLOT(v, vs->v_name), v);
    Py_DECREF(v); /* the dict holds it */
    return bad ? NULL : v;
}

static Py_ssize_t offset_of(const Layout *lay, PyObject *names, const char *name) {
    for (Py_ssize_t i = 0; i < lay->n; i++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(names, i), name) == 0) return lay->off[i];
    PyErr_Format(PyExc_TypeError, "no slot %s", name);
    return -1;
}

/* One node: its Node (a new reference) with inputs and outputs wired, or NULL. */
static PyObject *build_node(Span node, Py_ssize_t index, PyObject *node_tmpl, const Layout *nlay,
                            const Py_ssize_t *noff, Values *vs, PyObject *onnx_domain, PyObject *opsets) {
    Span name = {NULL, 0}, op = {NULL, 0}, dom = {NULL, 0}, s;
    Py_ssize_t n_in = 0, n_out = 0;
    uint64_t field;
    int wt;
    Cursor c = {node.p, node.p + node.n};
    while (read_tag(&c, &field, &wt) > 0) { /* node_ok() has vetted these bytes */
        if (wt != WT_LEN) {
            skip(&c, wt);
            continue;
        }
        read_len(&c, &s);
        switch (field) { /* singular fields: the last occurrence wins, as in protobuf */
        case NODE_NAME: name = s; break;
        case NODE_OP_TYPE: op = s; break;
        case NODE_DOMAIN: dom = s; break;
        case NODE_INPUT: n_in++; break;
        case NODE_OUTPUT: n_out++; break;
        default: break;
        }
    }
    PyObject *obj = copy_of(node_tmpl, nlay);
    if (obj == NULL) return NULL;
    PyObject *domain, *op_type;
    if (dom.n == 0 || (dom.n == 7 && memcmp(dom.p, "ai.onnx", 7) == 0)) {
        domain = Py_NewRef(onnx_domain);
    } else if ((domain = text(dom)) != NULL) {
        PyUnicode_InternInPlace(&domain);
    }
    /* noff: op_type, name, graph, index, domain, opset, inputs, outputs */
    if (!put(obj, noff[4], domain)) goto fail;
    PyObject *opset = PyDict_GetItemWithError(opsets, domain);
    if (opset == NULL && PyErr_Occurred()) goto fail;
    if ((op_type = text(op)) != NULL) PyUnicode_InternInPlace(&op_type);
    if (!put(obj, noff[2], Py_NewRef(vs->graph)) || !put(obj, noff[5], Py_NewRef(opset ? opset : Py_None)) ||
        !put(obj, noff[0], op_type) || !put(obj, noff[1], text(name)) ||
        !put(obj, noff[3], PyLong_FromSsize_t(index)))
        goto fail;
    PyObject *ins = PyList_New(n_in), *outs = PyList_New(n_out);
    if (!put(obj, noff[6], ins) || !put(obj, noff[7], outs)) goto fail;
    Py_ssize_t i = 0, o = 0;
    c.p = node.p;
    while (read_tag(&c, &field, &wt) > 0) {
        if (wt != WT_LEN) {
            skip(&c, wt);
            continue;
        }
        read_len(&c, &s);
        if (field == NODE_INPUT) {
            PyObject *v = Py_None;
            if (s.n) {
                if ((v = value_named(vs, s)) == NULL) goto fail;
                if (PyList_Append(SLOT(v, vs->v_consumers), obj) < 0) goto fail;
            }
            PyList_SET_ITEM(ins, i++, Py_NewRef(v));
        } else if (field == NODE_OUTPUT) {
            PyObject *v;
            if (s.n) {
                if ((v = value_named(vs, s)) == NULL) goto fail;
                put(v, vs->v_producer, Py_NewRef(obj));
                Py_INCREF(v);
            } else if ((v = new_value(vs, PyUnicode_FromStringAndSize(NULL, 0))) == NULL) {
                goto fail; /* an omitted optional output: a Value of its own, with no producer */
            }
            PyList_SET_ITEM(outs, o++, v);
        }
    }
    return obj;
fail:
    Py_DECREF(obj); /* lists not yet filled hold NULLs, which list dealloc skips */
    return NULL;
}

static PyObject *fill(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer buf;
    PyObject *graph, *node_tmpl, *node_slots, *value_tmpl, *value_slots, *onnx_domain, *opsets, *special;
    Py_ssize_t expected;
    if (!PyArg_ParseTuple(args, "y*nOOO!OO!UO!O", &buf, &expected, &graph, &node_tmpl, &PyTuple_Type, &node_slots,
                          &value_tmpl, &PyTuple_Type, &value_slots, &onnx_domain, &PyDict_Type, &opsets,
                          &special))
        return NULL;
    PyObject *result = NULL, *nodes = NULL;
    Values vs = {.graph = graph, .values = NULL, .value_tmpl = value_tmpl};
    Layout nlay;
    Py_ssize_t noff[8];
    static const char *node_fields[8] = {"op_type", "name", "graph", "index", "domain", "opset", "inputs", "outputs"};
    Span *spans = NULL;
    Py_ssize_t count = 0;
    if (!layout_of((PyObject *)Py_TYPE(node_tmpl), node_slots, &nlay) ||
        !layout_of((PyObject *)Py_TYPE(value_tmpl), value_slots, &vs.vlay))
        goto done;
    for (int k = 0; k < 8; k++)
        if ((noff[k] = offset_of(&nlay, node_slots, node_fields[k])) < 0) goto done;
    if ((vs.v_name = offset_of(&vs.vlay, value_slots, "name")) < 0 ||
        (vs.v_graph = offset_of(&vs.vlay, value_slots, "graph")) < 0 ||
        (vs.v_consumers = offset_of(&vs.vlay, value_slots, "consumers")) < 0 ||
        (vs.v_producer = offset_of(&vs.vlay, value_slots, "producer")) < 0)
        goto done;
    Span model = {buf.buf, buf.len};
    if (!node_spans(model, &spans, &count) || count != expected) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if ((nodes = PyObject_GetAttrString(graph, "nodes")) == NULL ||
        (vs.values = PyObject_GetAttrString(graph, "values")) == NULL)
        goto done;
    if (!PyList_Check(nodes) || !PyDict_Check(vs.values)) {
        PyErr_SetString(PyExc_TypeError, "graph.nodes must be a list and graph.values a dict");
        goto done;
    }
    PyObject *picked = PyList_New(0); /* nodes the loader finishes in Python (see onnx_loader) */
    if (picked == NULL) goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *node = build_node(spans[i], i, node_tmpl, &nlay, noff, &vs, onnx_domain, opsets);
        if (node == NULL || PyList_Append(nodes, node) < 0) {
            Py_XDECREF(node);
            Py_DECREF(picked);
            goto done;
        }
        int pick = SLOT(node, noff[4]) != onnx_domain;
        if (!pick && (pick = PySet_Contains(special, SLOT(node, noff[0]))) < 0) {
            Py_DECREF(node);
            Py_DECREF(picked);
            goto done;
        }
        Py_DECREF(node);
        PyObject *at;
        if (pick && ((at = PyLong_FromSsize_t(i)) == NULL || PyList_Append(picked, at) < 0)) {
            Py_XDECREF(at);
            Py_DECREF(picked);
            goto done;
        }
        if (pick) Py_DECREF(at);
    }
    result = picked;
done:
    PyMem_Free(spans);
    Py_XDECREF(nodes);
    Py_XDECREF(vs.values);
    PyBuffer_Release(&buf);
    return result;
}

/* ValueInfoProto: name (1) and type (2, kept serialized: the loader decodes each distinct one once). */
static int value_info(Span vi, Span *name, Span *type) {
    Cursor c = {vi.p, vi.p + vi.n};
    uint64_t field;
    int wt, r;
    *name = (Span){NULL, 0};
    *type = (Span){NULL, 0};
    while ((r = read_tag(&c, &field, &wt)) > 0) {
        if (field == 1 || field == 2) { /* the last occurrence wins, as in the loader's look-alike parse */
            if (wt != WT_LEN || !read_len(&c, field == 1 ? name : type)) return 0;
        } else if (!skip(&c, wt)) {
            return 0;
        }
    }
    return r == 0;
}

typedef struct {
    Span *at;
    Py_ssize_t n, cap;
} Spans;

static int add_span(Spans *ss, Span s) {
    if (ss->n == ss->cap) {
        Py_ssize_t cap = ss->cap ? 2 * ss->cap : 1024;
        Span *more = PyMem_Realloc(ss->at, cap * sizeof(Span));
        if (more == NULL) return 0;
        ss->at = more;
        ss->cap = cap;
    }
    ss->at[ss->n++] = s;
    return 1;
}

/* The index of a serialized TypeProto among the distinct ones met so far (``keys``), adding it
 * when new; -1 on error. A model has a few dozen distinct types: they are compared as bytes
 * first (``seen``), and a bytes object is made only for a new one. */
#define SEEN_MAX 64
typedef struct {
    Span seen[SEEN_MAX];
    PyObject *keys, *index; /* list of the distinct keys; dict key -> position, past SEEN_MAX */
} Distinct;

static Py_ssize_t type_id(Distinct *d, Span type) {
    Py_ssize_t n = PyList_GET_SIZE(d->keys);
    for (Py_ssize_t i = 0; i < n && i < SEEN_MAX; i++)
        if (d->seen[i].n == type.n && (type.n == 0 || memcmp(d->seen[i].p, type.p, type.n) == 0)) return i;
    PyObject *key = PyBytes_FromStringAndSize((const char *)type.p, type.n);
    if (key == NULL) return -1;
    Py_ssize_t id = -1;
    PyObject *at = n > SEEN_MAX ? PyDict_GetItemWithError(d->index, key) : NULL;
    if (at != NULL) {
        id = PyLong_AsSsize_t(at);
    } else if (!PyErr_Occurred()) {
        PyObject *pos = PyLong_FromSsize_t(n);
        if (pos != NULL && PyDict_SetItem(d->index, key, pos) == 0 && PyList_Append(d->keys, key) == 0) {
            if (n < SEEN_MAX) d->seen[n] = type;
            id = n;
        }
        Py_XDECREF(pos);
    }
    Py_DECREF(key);
    return id;
}

static PyObject *value_types(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *result = NULL, *names = NULL, *ids = NULL;
    Distinct d = {.keys = NULL, .index = NULL};
    Spans infos[3] = {{NULL, 0, 0}, {NULL, 0, 0}, {NULL, 0, 0}}; /* value_info, input, output */
    Span model = {buf.buf, buf.len}, graph;
    if (only_field(model, 7, &graph) != 1) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* One pass over the graph (its tags are spread over megabytes of weights), then the entries
     * in the order the loader lists them: value_info (13), input (11), output (12). */
    Cursor c = {graph.p, graph.p + graph.n};
    uint64_t field;
    int wt, r;
    while ((r = read_tag(&c, &field, &wt)) > 0) {
        int k = field == 13 ? 0 : field == 11 ? 1 : field == 12 ? 2 : -1;
        Span vi;
        if (k < 0) {
            if (!skip(&c, wt)) r = -1;
        } else if (wt != WT_LEN || !read_len(&c, &vi)) {
            r = -1;
        } else if (!add_span(&infos[k], vi)) {
            PyErr_NoMemory();
            goto done;
        }
        if (r < 0) break;
    }
    if (r != 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if ((names = PyList_New(0)) == NULL || (ids = PyList_New(0)) == NULL || (d.keys = PyList_New(0)) == NULL ||
        (d.index = PyDict_New()) == NULL)
        goto done;
    for (int k = 0; k < 3; k++) {
        for (Py_ssize_t i = 0; i < infos[k].n; i++) {
            Span name, type;
            if (!value_info(infos[k].at[i], &name, &type)) {
                result = Py_NewRef(Py_None);
                goto done;
            }
            PyObject *n = PyUnicode_DecodeUTF8((const char *)name.p, name.n, NULL);
            if (n == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto done;
                PyErr_Clear(); /* not UTF-8: the loader's Python path keeps what protobuf gives */
                result = Py_NewRef(Py_None);
                goto done;
            }
            int bad = PyList_Append(names, n) < 0;
            Py_DECREF(n);
            Py_ssize_t id = bad ? -1 : type_id(&d, type);
            PyObject *at = id < 0 ? NULL : PyLong_FromSsize_t(id);
            bad = at == NULL || PyList_Append(ids, at) < 0;
            Py_XDECREF(at);
            if (bad) goto done;
        }
    }
    result = PyTuple_Pack(3, names, ids, d.keys);
done:
    for (int k = 0; k < 3; k++) PyMem_Free(infos[k].at);
    Py_XDECREF(names);
    Py_XDECREF(ids);
    Py_XDECREF(d.keys);
    Py_XDECREF(d.index);
    PyBuffer_Release(&buf);
    return result;
}

/* Whether a node's bytes hold AttributeProto.type = GRAPH (5) or GRAPHS (10), as protobuf encodes
 * them (field 20, varint: a0 01 05 / a0 01 0a); may also match inside other bytes (a tensor's), which
 * only costs the loader a parse. */
static int has_graph_mark(Span node) {
    const unsigned char *p = node.p, *end = node.p + node.n;
    while (end - p >= 3 && (p = memchr(p, 0xa0, end - p - 2)) != NULL) {
        if (p[1] == 0x01 && (p[2] == 0x05 || p[2] == 0x0a)) return 1;
        p++;
    }
    return 0;
}

static PyObject *graph_holders(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0) return NULL;
    Span *spans = NULL, model = {buf.buf, buf.len};
    Py_ssize_t count = 0;
    PyObject *result = NULL;
    if (!node_spans(model, &spans, &count)) {
        result = Py_NewRef(Py_None);
    } else if ((result = PyList_New(0)) != NULL) {
        for (Py_ssize_t i = 0; i < count; i++) {
            if (!has_graph_mark(spans[i])) continue;
            PyObject *at = PyLong_FromSsize_t(i);
            if (at == NULL || PyList_Append(result, at) < 0) {
                Py_XDECREF(at);
                Py_CLEAR(result);
                break;
            }
            Py_DECREF(at);
        }
    }
    PyMem_Free(spans);
    PyBuffer_Release(&buf);
    return result;
}

static PyObject *assign(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *values, *types, *slots, *cls;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &values, &PyList_Type, &types, &PyType_Type, &cls,
                          &PyTuple_Type, &slots))
        return NULL;
    Layout lay;
    Py_ssize_t dtype_off, shape_off;
    if (!layout_of(cls, slots, &lay) || (dtype_off = offset_of(&lay, slots, "dtype")) < 0 ||
        (shape_off = offset_of(&lay, slots, "shape")) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (PyList_GET_SIZE(types) != n) {
        PyErr_SetString(PyExc_ValueError, "values and types differ in length");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(values, i), *t = PyList_GET_ITEM(types, i);
        if (!Py_IS_TYPE(v, (PyTypeObject *)cls) || !PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2) {
            PyErr_SetString(PyExc_TypeError, "assign() takes Values and (dtype, shape) pairs");
            return NULL;
        }
        put(v, dtype_off, Py_NewRef(PyTuple_GET_ITEM(t, 0)));
        put(v, shape_off, Py_NewRef(PyTuple_GET_ITEM(t, 1)));
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fill", fill, METH_VARARGS,
     "fill(model_bytes, node_count, graph, node_template, node_slots, value_template, value_slots, "
     "onnx_domain, opsets, special_op_types) -> list[int] | None\n\n"
     "Build the main graph's nodes from the serialized ModelProto into graph.nodes and graph.values "
     "(as onnx_loader's Python loop does); the indices of nodes that are not in onnx_domain or whose "
     "op type is in special_op_types, or None (nothing built) when the bytes are not plain protobuf "
     "or hold another node count."},
    {"value_types", value_types, METH_O,
     "value_types(model_bytes) -> tuple[list[str], list[int], list[bytes]] | None\n\n"
     "The main graph's value_info, input and output entries (in that order): their names, and for each "
     "the index of its serialized TypeProto among the distinct ones, which come third; None when the "
     "bytes are not plain protobuf or a name is not UTF-8."},
    {"graph_holders", graph_holders, METH_O,
     "graph_holders(model_bytes) -> list[int] | None\n\n"
     "Indices of the main graph's nodes whose bytes hold a graph-typed attribute's mark (a superset "
     "of the nodes with graph attributes), or None when the bytes are not plain protobuf."},
    {"assign", assign, METH_VARARGS,
     "assign(values, types, value_class, value_slots) -> None\n\n"
     "Set values[i].dtype, values[i].shape = types[i] (every value exactly of value_class)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastbuild",
                                    "The ONNX loader's node loop in C (see onnx_loader).", -1, methods};

PyMODINIT_FUNC PyInit__fastbuild(void) { return PyModule_Create(&module); }
