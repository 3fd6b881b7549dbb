/* gwatch_nb._native: the PTX rewriter and the trace-buffer layout, for Python. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "expand.h"
#include "gwatch_format.h"
#include "lanes.h"
#include "ptx_rewrite.h"

/* The scope ids of an iterable of ints as a gw_scope_set; -1 with ValueError or TypeError
 * for anything else. */
static int scope_set_of(PyObject *scopes, gw_scope_set *set) {
    memset(set, 0, sizeof *set);
    PyObject *iterator = PyObject_GetIter(scopes);
    if (!iterator) return -1;
    PyObject *item;
    while ((item = PyIter_Next(iterator))) {
        long id = PyLong_AsLong(item);
        Py_DECREF(item);
        if (id == -1 && PyErr_Occurred()) break;
        if (id < 0 || id > GWATCH_MAX_SCOPE_ID) {
            PyErr_Format(PyExc_ValueError, "scope id %ld is out of range [0, %d]", id, GWATCH_MAX_SCOPE_ID);
            break;
        }
        set->bits[id / 8] |= (unsigned char)(1u << (id % 8));
    }
    Py_DECREF(iterator);
    return PyErr_Occurred() ? -1 : 0;
}

/* instrument(ptx: str, scopes: iterable of int | None = None) -> (text | None, sites, entries)
 *   scopes:  the scope ids whose markers are traced (None: all); the others stay idle
 *   text:    the instrumented PTX, or None when the module holds no traced sentinel
 *   sites:   [(entry_index, scope_id, is_end, line, reading, record_events)]
 *   entries: [(name, line, num_params, num_sites, num_exits)] */
static PyObject *instrument(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text_object, *scopes = Py_None;
    if (!PyArg_ParseTuple(args, "U|O", &text_object, &scopes)) return NULL;
    Py_ssize_t length = 0;
    const char *ptx = PyUnicode_AsUTF8AndSize(text_object, &length);
    if (!ptx) return NULL;
    gw_scope_set traced;
    if (scopes != Py_None && scope_set_of(scopes, &traced)) return NULL;

    gw_result result;
    int status;
    Py_BEGIN_ALLOW_THREADS status = gw_rewrite(ptx, (size_t)length, scopes == Py_None ? NULL : &traced, &result);
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
        PyObject *item = Py_BuildValue("(iiOiii)", s->entry, s->scope_id, s->is_end ? Py_True : Py_False, s->line,
                                       s->reading, s->record_events);
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

/* A C-contiguous buffer of `count` items of `itemsize` bytes (count = -1: any count). */
static int get_buffer(PyObject *object, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count, const char *what) {
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len % itemsize || (count >= 0 && view->len != count * itemsize)) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zd-byte items%s", what, view->len, itemsize,
                     count >= 0 ? " for every slot or site" : "");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* expand_records(records, width, n_records, tags, readings, record_events)
 *     -> (clocks: bytearray of u32, tags: bytearray of u32, held: bytearray of i64)
 * records: slots x width records of 16 bytes; n_records: i64 per slot; the site table's
 * tags (u32), readings and record_events (i64) per site. ValueError names a record that
 * starts at no record's site, or a site the table itself gets wrong. */
static PyObject *expand_records(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objects[6];
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OnOOOO", &objects[0], &width, &objects[2], &objects[3], &objects[4], &objects[5]))
        return NULL;
    Py_buffer recs = {0}, counts = {0}, tag_view = {0}, reading_view = {0}, covered_view = {0};
    PyObject *answer = NULL, *clocks = NULL, *tags = NULL, *held = NULL;
    if (width < 0) return PyErr_Format(PyExc_ValueError, "width %zd is negative", width);
    if (get_buffer(objects[3], &tag_view, 4, -1, "tags")) return NULL;
    Py_ssize_t sites = tag_view.len / 4;
    if (get_buffer(objects[4], &reading_view, 8, sites, "readings")) goto done;
    if (get_buffer(objects[5], &covered_view, 8, sites, "record_events")) goto done;
    if (get_buffer(objects[2], &counts, 8, -1, "n_records")) goto done;
    Py_ssize_t slots = counts.len / 8;
    if (get_buffer(objects[0], &recs, GWATCH_RECORD_BYTES, slots * width, "records")) goto done;
    gw_site_table table = {tag_view.buf, reading_view.buf, covered_view.buf, (size_t)sites};
    long bad_site_index = gw_bad_site(&table);
    if (bad_site_index >= 0) {
        PyErr_Format(PyExc_ValueError, "site table: site %ld has a reading or a record span outside the table",
                     bad_site_index);
        goto done;
    }
    const int64_t *n = counts.buf;
    for (Py_ssize_t w = 0; w < slots; w++)
        if (n[w] < 0 || n[w] > width) {
            PyErr_Format(PyExc_ValueError, "a warp reports %lld records, its slot holds %zd", (long long)n[w], width);
            goto done;
        }
    long long bad = 0;
    uint32_t bad_site = 0;
    long long events = gw_count_events(recs.buf, (size_t)width, n, (size_t)slots, &table, &bad, &bad_site);
    if (events < 0) {
        PyErr_Format(PyExc_ValueError, "record %lld names site %u, which starts no record of this kernel", bad,
                     (unsigned)bad_site);
        goto done;
    }
    clocks = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)events * 4);
    tags = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)events * 4);
    held = PyByteArray_FromStringAndSize(NULL, slots * 8);
    if (!clocks || !tags || !held) goto done;
    Py_BEGIN_ALLOW_THREADS
    gw_expand(recs.buf, (size_t)width, n, (size_t)slots, &table, (uint32_t *)PyByteArray_AS_STRING(clocks),
              (uint32_t *)PyByteArray_AS_STRING(tags), (int64_t *)PyByteArray_AS_STRING(held));
    Py_END_ALLOW_THREADS
    answer = PyTuple_Pack(3, clocks, tags, held);
done:
    Py_XDECREF(clocks);
    Py_XDECREF(tags);
    Py_XDECREF(held);
    if (recs.obj) PyBuffer_Release(&recs);
    if (counts.obj) PyBuffer_Release(&counts);
    if (tag_view.obj) PyBuffer_Release(&tag_view);
    if (reading_view.obj) PyBuffer_Release(&reading_view);
    if (covered_view.obj) PyBuffer_Release(&covered_view);
    return answer;
}

/* lanes(start, end, events) -> bytearray of i32: each instance's row in its warp (lanes.h);
 * start and end are i64 event positions, one per instance. ValueError for positions that
 * do not make instances of `events` events. */
static PyObject *lanes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *start_object, *end_object;
    Py_ssize_t events;
    if (!PyArg_ParseTuple(args, "OOn", &start_object, &end_object, &events)) return NULL;
    if (events < 0) return PyErr_Format(PyExc_ValueError, "events %zd is negative", events);
    Py_buffer start = {0}, end = {0};
    PyObject *answer = NULL;
    if (get_buffer(start_object, &start, 8, -1, "start")) return NULL;
    Py_ssize_t intervals = start.len / 8;
    if (get_buffer(end_object, &end, 8, intervals, "end")) goto done;
    answer = PyByteArray_FromStringAndSize(NULL, intervals * 4);
    if (!answer) goto done;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = gw_lanes(start.buf, end.buf, (size_t)intervals, (size_t)events, (int32_t *)PyByteArray_AS_STRING(answer));
    Py_END_ALLOW_THREADS
    if (status) {
        Py_CLEAR(answer);
        if (status == -1)
            PyErr_SetString(PyExc_ValueError, "instances must start before they end, each at its own event");
        else
            PyErr_NoMemory();
    }
done:
    if (start.obj) PyBuffer_Release(&start);
    if (end.obj) PyBuffer_Release(&end);
    return answer;
}

static PyMethodDef methods[] = {
    {"instrument", instrument, METH_VARARGS, "Rewrite gwatch sentinels in a PTX module into trace records."},
    {"expand_records", expand_records, METH_VARARGS, "Trace records of a launch's warps -> their events."},
    {"lanes", lanes, METH_VARARGS, "Each scope instance's display row in its warp (greedy, in program order)."},
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
    ADD(GH_SLOT_RECORDS)
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
    ADD(SH_RECORDS)
    ADD(RECORD_BYTES)
    ADD(READINGS_PER_RECORD)
    ADD(REC_CLOCKS)
    ADD(REC_SITE)
    ADD(MAX_SCOPE_ID)
    ADD(GROUP_MAX_EVENTS)
    ADD(SASS_OVERFLOW_ROWS)
    ADD(SASS_SH_ROOM)
    ADD(SASS_SH_NEXT)
#undef ADD
    const char *names[][2] = {{"MARKER_START", GWATCH_MARKER_START},
                               {"MARKER_END", GWATCH_MARKER_END},
                               {"BUFFER_PARAM", GWATCH_BUFFER_PARAM},
                               {"CAPACITY_PARAM", GWATCH_CAPACITY_PARAM},
                               {"SLOT_RECORDS_PARAM", GWATCH_SLOT_RECORDS_PARAM}};
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
