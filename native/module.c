/* gwatch_nb._native: the PTX rewriter and the trace-buffer layout, for Python. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gwatch_format.h"
#include "ptx_rewrite.h"

/* instrument(ptx: str) -> (text | None, sites, entries)
 *   text:    the instrumented PTX, or None when the module holds no sentinel
 *   sites:   [(entry_index, scope_id, is_end, line)]
 *   entries: [(name, line, num_params, num_sites, num_exits)] */
static PyObject *instrument(PyObject *self, PyObject *arg) {
    (void)self;
    Py_ssize_t length = 0;
    const char *ptx = PyUnicode_AsUTF8AndSize(arg, &length);
    if (!ptx) return NULL;

    gw_result result;
    int status;
    Py_BEGIN_ALLOW_THREADS status = gw_rewrite(ptx, (size_t)length, &result);
    Py_END_ALLOW_THREADS

    if (status != 0) {
        PyErr_SetString(PyExc_ValueError, result.error);
        gw_result_free(&result);
        return NULL;
    }
    if (result.out.failed) {
        gw_result_free(&result);
        return PyErr_NoMemory();
    }

    PyObject *text = NULL, *sites = NULL, *entries = NULL, *answer = NULL;
    if (result.changed) {
        text = PyUnicode_DecodeUTF8(result.out.data, (Py_ssize_t)result.out.len, "strict");
    } else {
        text = Py_None;
        Py_INCREF(text);
    }
    sites = PyList_New((Py_ssize_t)result.num_sites);
    entries = PyList_New((Py_ssize_t)result.num_entries);
    if (!text || !sites || !entries) goto done;
    for (size_t i = 0; i < result.num_sites; i++) {
        gw_site *s = &result.sites[i];
        PyObject *item = Py_BuildValue("(iiOi)", s->entry, s->scope_id, s->is_end ? Py_True : Py_False, s->line);
        if (!item) goto done;
        PyList_SET_ITEM(sites, (Py_ssize_t)i, item);
    }
    for (size_t i = 0; i < result.num_entries; i++) {
        gw_entry *e = &result.entries[i];
        PyObject *item = Py_BuildValue("(s#iiii)", ptx + e->name_offset, (Py_ssize_t)e->name_length, e->line,
                                       e->num_params, e->num_sites, e->num_exits);
        if (!item) goto done;
        PyList_SET_ITEM(entries, (Py_ssize_t)i, item);
    }
    answer = PyTuple_Pack(3, text, sites, entries);
done:
    Py_XDECREF(text);
    Py_XDECREF(sites);
    Py_XDECREF(entries);
    gw_result_free(&result);
    return answer;
}

static PyMethodDef methods[] = {
    {"instrument", instrument, METH_O, "Rewrite gwatch sentinels in a PTX module into trace records."},
    {NULL, NULL, 0, NULL},
};

static int add_int(PyObject *dict, const char *name, long long value) {
    PyObject *v = PyLong_FromLongLong(value);
    if (!v) return -1;
    int status = PyDict_SetItemString(dict, name, v);
    Py_DECREF(v);
    return status;
}

/* FORMAT: every constant of gwatch_format.h, by name without the GWATCH_ prefix. */
static PyObject *format_constants(void) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
#define ADD(name)                                   \
    if (add_int(d, #name, (long long)GWATCH_##name)) { \
        Py_DECREF(d);                               \
        return NULL;                                \
    }
    ADD(FORMAT_VERSION)
    ADD(GLOBAL_HEADER_BYTES)
    ADD(BUFFER_MAGIC)
    ADD(GH_MAGIC)
    ADD(GH_VERSION)
    ADD(GH_CAPACITY)
    ADD(GH_SLOT_BYTES)
    ADD(GH_NUM_SLOTS)
    ADD(SLOT_HEADER_BYTES)
    ADD(WARP_MAGIC)
    ADD(SH_GT_ENTRY)
    ADD(SH_CK_ENTRY)
    ADD(SH_GT_EXIT)
    ADD(SH_CK_EXIT)
    ADD(SH_MAGIC)
    ADD(SH_WARP)
    ADD(SH_BLOCK_X)
    ADD(SH_BLOCK_Y)
    ADD(SH_BLOCK_Z)
    ADD(SH_SM)
    ADD(SH_EVENTS)
    ADD(SH_RESERVED)
    ADD(EVENT_BYTES)
    ADD(EV_CLOCK)
    ADD(EV_TAG)
    ADD(TAG_END_BIT)
    ADD(TAG_ID_SHIFT)
    ADD(MAX_SCOPE_ID)
    ADD(GROUP_MAX_EVENTS)
    ADD(SLOT_SPARE_EVENTS)
#undef ADD
    const char *names[][2] = {{"BUFFER_PARAM", GWATCH_BUFFER_PARAM}, {"CAPACITY_PARAM", GWATCH_CAPACITY_PARAM}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        PyObject *text = PyUnicode_FromString(names[i][1]);
        if (!text || PyDict_SetItemString(d, names[i][0], text)) {
            Py_XDECREF(text);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(text);
    }
    return d;
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "PTX rewriter and trace-buffer layout.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *format = format_constants();
    if (!format || PyModule_AddObject(m, "FORMAT", format)) {
        Py_XDECREF(format);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
