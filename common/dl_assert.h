/* dl_assert.h: DL_ASSERT, the invariants the code relies on (a lease's deadlines, the
 * scheduler's heap, a buffer's bounds), said in code and checked where tests run: on when
 * DYNALOCK_ASSERTS is defined (CMake defines it for Debug builds and for the sanitizer and
 * valgrind runs), compiled out otherwise, so that a release build pays nothing. The
 * condition is not evaluated when off: it must have no side effect. */
#ifndef DL_ASSERT_H
#define DL_ASSERT_H

#ifdef DYNALOCK_ASSERTS
#include <stdio.h>
#include <stdlib.h>
#define DL_ASSERT(cond)                                                                    \
    ((cond) ? (void)0                                                                      \
            : (fprintf(stderr, "%s:%d: %s: invariant broken: %s\n", __FILE__, __LINE__,    \
                       __func__, #cond),                                                   \
               abort()))
#else
#define DL_ASSERT(cond) ((void)0)
#endif

#endif
