# cython: language_level=3, embedsignature=True
"""The Cython core of pysched: flat C arrays behind the same API as the pure twin.

Bounds and wraparound checks are off for the whole module (setup.py sets the
directives, so that the debug build can turn them back on). Every index used
on a C array is either a heap position below ``n`` or a slot number read from
the id table, and both are kept in range by the invariants stated next to each
structure; PYSCHED_DEBUG_BUILD=1 turns the checks back on to test that claim.
Keys in the heaps are C scalars, so no Python code can run during a sift and no
array can change size under one (unlike ``_heapq``, which needs its "list
changed size during iteration" check).

Each part lives in an included file of its own; the pure twins in ``pysched/``
are the spec, and the parts mirror their names and structure.
"""

cimport cython
from cpython.exc cimport PyErr_Clear
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.math cimport isfinite
from libc.string cimport memcpy, memmove, memset
from libc.stdint cimport int32_t, int64_t, uint64_t

from pysched._errors import InvalidTransition
from pysched._validate import (
    check_callable,
    check_capacity,
    check_hashable,
    check_iterable,
    check_priority,
    check_schedule_item,
    check_time,
    not_a_task,
)

# A hint to start loading memory that is about to be used: at a million tasks
# most loads miss every cache, and overlapping them with other work is what
# the drain gains most from.
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define PYSCHED_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define PYSCHED_PREFETCH(p) ((void)(p))
    #endif
    """
    void PYSCHED_PREFETCH(const void* p) noexcept nogil

cdef extern from *:
    """
    /* CPython's small-object allocator (3.10 and later, 64-bit) carves 16 KiB
       pools, each starting with a header that freeing any object of the pool
       reads and writes. Freed in random order, each of a million objects
       finds its pool's header (and page) out of the caches. Prefetching an
       address is harmless if the guess is wrong (an object from elsewhere). */
    #define PYSCHED_POOL_START(p) ((const void*)((uintptr_t)(p) & ~(uintptr_t)16383))
    """
    const void* PYSCHED_POOL_START(const void* p) noexcept nogil

cdef extern from "Python.h":
    PyObject** PySequence_Fast_ITEMS(object o)
    # PyList_SetSlice with no items: deletes a slice without making a slice object.
    int _list_cut "PyList_SetSlice"(object lst, Py_ssize_t low, Py_ssize_t high,
                                    PyObject* no_items) noexcept


# Big arrays are read at random (a bucket of the id table, an id's record): at
# ten million ids nearly every read also misses the TLB, and a page walk costs
# as much again. Asking for transparent huge pages on them, where the system
# offers them only on request (Linux's "madvise" setting), cuts those walks.
# Advice only: nothing changes where it is refused or not offered.
cdef extern from *:
    """
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    #include <stdint.h>
    static void pysched_advise_huge(void* p, size_t n) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        const uintptr_t huge = (uintptr_t)1 << 21;
        uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1);
        uintptr_t end = ((uintptr_t)p + n) & ~(huge - 1);
        if (end > start) {
            (void)madvise((void*)start, end - start, MADV_HUGEPAGE);
        }
    #else
        (void)p; (void)n;
    #endif
    }
    static size_t pysched_list_room(PyObject* list) {
        return (size_t)((PyListObject*)list)->allocated * sizeof(PyObject*);
    }
    static void* pysched_list_items(PyObject* list) {
        return (void*)((PyListObject*)list)->ob_item;
    }
    """
    void _advise_huge "pysched_advise_huge"(void* p, size_t n) noexcept nogil
    size_t _list_room "pysched_list_room"(object lst) noexcept
    void* _list_items "pysched_list_items"(object lst) noexcept

cdef size_t _HUGE_ENOUGH = 4 << 20  # two huge pages: smaller arrays gain nothing


# One growth helper for every C array, and one for giving memory back. Callers
# set their capacity once every array of that capacity has its new size.
cdef int _grow(void** array, Py_ssize_t n, size_t item) except -1:
    """Reallocate ``array`` to ``n`` items of ``item`` bytes; a MemoryError leaves it as it was."""
    cdef void* resized = PyMem_Realloc(array[0], n * item)
    if resized == NULL:
        raise MemoryError()
    array[0] = resized
    if n * item >= _HUGE_ENOUGH:
        _advise_huge(resized, n * item)
    return 0


cdef inline Py_ssize_t _grown(Py_ssize_t capacity, Py_ssize_t needed) noexcept:
    """The next capacity: doubled (at least 16), and at least ``needed``."""
    return max(16, 2 * capacity, needed)


cdef void _shrink(void** array, Py_ssize_t n, size_t item) noexcept:
    """Reallocate ``array`` down to ``n`` items of ``item`` bytes; on failure it stays as it was."""
    cdef void* resized = PyMem_Realloc(array[0], n * item)
    if resized != NULL:
        array[0] = resized


cdef Py_ssize_t _fitted(void** array, Py_ssize_t capacity, Py_ssize_t used, size_t item) noexcept:
    """Give memory back: the new capacity of ``array``, cut to ``2 * used`` (at least 16)
    once under a quarter of it is used, so that an oscillating load does not
    resize at every step; else ``capacity`` unchanged."""
    cdef Py_ssize_t n = max(16, 2 * used)
    if used * 4 >= capacity or n >= capacity:
        return capacity
    _shrink(array, n, item)
    return n


include "_checks.pxi"
include "_id_table.pxi"
include "_scheduler_heap.pxi"
include "_scheduler_ladder.pxi"
include "_scheduler_task.pxi"
include "_scheduler.pxi"
include "_scheduler_batch.pxi"
include "_scheduler_prefetch.pxi"
include "_scheduler_check.pxi"
include "_bounded_heap.pxi"
include "_bounded_entry.pxi"
include "_bounded_queue.pxi"
include "_bounded_memory.pxi"
include "_bounded_check.pxi"
