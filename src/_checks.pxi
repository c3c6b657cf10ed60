# Mirrors pysched/_validate.py: each _check_x is its check_x with a C fast path
# for the common types. Anything else goes to pysched._validate, which owns
# every error message.

cdef inline double _check_time(object value, str name) except? -1.0:
    cdef double seconds
    if type(value) is float:
        seconds = <double>value
        if isfinite(seconds):
            return seconds
    return <double>check_time(value, name)


cdef extern from "Python.h":
    long long PyLong_AsLongLongAndOverflow(object value, int* overflow) except? -1


cdef inline int64_t _check_priority(object value, str name) except? -1:
    cdef int overflow
    cdef long long priority
    if type(value) is int:
        # An int too big for 64 bits sets overflow instead of raising, so no
        # exception is made and caught on the way to check_priority's message.
        priority = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            return priority
    return <int64_t>check_priority(value, name)


cdef inline void _check_callable(object value, str name) except *:
    if not callable(value):
        check_callable(value, name)


cdef inline Py_hash_t _check_hashable(object value, str name) except? -1:
    try:
        return hash(value)
    except TypeError:
        return check_hashable(value, name)

