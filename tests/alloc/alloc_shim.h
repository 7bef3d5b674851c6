/* alloc_shim.h: SQLite's technique for the out-of-memory paths: the test binary wraps
 * the allocation functions of the libraries it links statically (-Wl,--wrap), and the
 * shim fails the Nth allocation made by the calling thread. The server in the test's
 * process allocates on threads of its own and is never failed. */
#ifndef ALLOC_SHIM_H
#define ALLOC_SHIM_H

#include <stdbool.h>

/* Fails the n-th allocation (1-based) the calling thread makes from now on, and only
 * that one; 0 disarms. */
void shim_fail_nth(long n);
/* Whether the armed failure has happened. */
bool shim_fired(void);
/* Allocations the calling thread made since the last shim_fail_nth. */
long shim_count(void);

#endif
