/* The slots of a Python class with __slots__, by offset: what bcast.onnx._wire and bcast.check._rows fill when they
 * make a Node or a NodeReport without calling its __init__ (each slot set once, before the object is seen). */
#ifndef BCAST_SLOTS_H
#define BCAST_SLOTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* offsets[k]: where the slot that members[k] describes lies in an instance of type; 0, or -1 with a TypeError that
 * names who asked when a member is not a slot of type holding an object */
static inline int slot_offsets(PyTypeObject *type, PyObject *members, Py_ssize_t n, Py_ssize_t *offsets,
                               const char *who) {
    if (!PyTuple_Check(members) || PyTuple_GET_SIZE(members) != n) {
        PyErr_Format(PyExc_TypeError, "%s: the layout must give %zd members", who, n);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *m = PyTuple_GET_ITEM(members, k);
        if (!Py_IS_TYPE(m, &PyMemberDescr_Type) || ((PyMemberDescrObject *)m)->d_member->type != T_OBJECT_EX ||
            ((PyMemberDescrObject *)m)->d_common.d_type != type) {
            PyErr_Format(PyExc_TypeError, "%s: each member must be a slot of %s holding an object", who, type->tp_name);
            return -1;
        }
        offsets[k] = ((PyMemberDescrObject *)m)->d_member->offset;
    }
    return 0;
}

#endif
