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


cdef inline int64_t _check_priority(object value, str name) except? -1:
    if type(value) is int:
        try:
            return <int64_t>value
        except OverflowError:
            pass
    return <int64_t>check_priority(value, name)


cdef inline void _check_callable(object value, str name) except *:
    if not callable(value):
        check_callable(value, name)


cdef inline Py_hash_t _check_hashable(object value, str name) except? -1:
    try:
        return hash(value)
    except TypeError:
        return check_hashable(value, name)

