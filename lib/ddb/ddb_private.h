/* ddb_private.h: what lib/coord uses of the client beyond the public API, and nothing
 * more. lib/coord is built into the same shared library as lib/ddb (libddb.so) because
 * it needs the client's state, not only its functions: it starts asynchronous requests
 * on the client's scheduler, schedules its renewals and deadlines on that scheduler, and
 * holds the thread for a fake clock's settle. None of this is exported from the shared
 * library (the tests and benchmarks reach it through the static build), and none of it
 * is public API. lib/coord includes this header, never internal.h (which includes this
 * one). See docs/internals/modules.md. */
#ifndef DDB_PRIVATE_H
#define DDB_PRIVATE_H

#include <dynalock/ddb.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors (error.c) */
/* Fills err (if not NULL) with code and a printf-style message; returns code. The other
 * fields (aws_type, http_status, request_id, retries) are left as they are. */
int ddb__fail(ddb_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- the clock (clock.c) */
/* Waits until mono deadline on the clock, or cancel is set. Marks the calling thread as
 * waiting for ddb_fake_clock_settle. 0 when the deadline passed, DDB_ECANCELED. */
int ddb__clock_wait_until(ddb_clock *c, int64_t deadline_mono_ns, ddb_cancel *cancel);
/* The scope of a library call, for a fake clock's settle, which waits for the work an
 * advance released: a thread woken by an advance stays counted until it waits on the
 * clock again or its library call ends. Every public call that makes a request or waits
 * on the clock declares one scope first in its body, and the scope's end marks the call's
 * end, whatever return ends it:
 *   DDB__CALL_SCOPE(clock)  at the end the thread is idle for settle;
 *   DDB__HOLD_SCOPE(clock)  also holds the thread for the scope: a call that makes several
 *                           requests and waits on the clock between them (an acquire, an
 *                           election, a renewal) counts as busy from its start, except
 *                           while it waits on the clock for a deadline not yet due.
 * Scopes nest; only the outermost marks the end. clock may be NULL (no fake clock:
 * nothing to do). tests/layers/settle.py reads the object files and fails when an
 * exported function can reach a request or a clock wait without passing a scope. */
typedef struct ddb__scope {
    ddb_clock *clock;
} ddb__scope;
ddb__scope ddb__scope_hold(ddb_clock *c);
void ddb__scope_unhold(ddb__scope *s);
void ddb__scope_end(ddb__scope *s);
#define DDB__CALL_SCOPE(clk)                                                              \
    ddb__scope ddb__call_scope __attribute__((cleanup(ddb__scope_end), unused)) = { .clock = (clk) }
#define DDB__HOLD_SCOPE(clk)                                                              \
    ddb__scope ddb__hold_scope __attribute__((cleanup(ddb__scope_unhold), unused)) = ddb__scope_hold(clk)

/* ---- logging and telemetry through the client (client.c) */
/* Whether a record at level would reach the client's log sink. */
bool ddb__client_log_enabled(ddb_client *c, int level);
/* Logs through the client's sink (when its level lets the record through). */
void ddb__client_log(ddb_client *c, int level, int event_id, const char *category,
                     const char *message, const ddb_log_field *fields, size_t n);
/* Spans of the client and of the lock layer (telemetry.c), given the client's telemetry
 * (ddb_client_telemetry, NULL for none): a new span (0 when there are no span
 * callbacks), its attributes (a NULL string is left out) and its end. No-ops on span 0.
 * Any thread. */
uint64_t ddb__span_start(const ddb_telemetry *t, const char *name, uint64_t parent,
                         const uint64_t *links, size_t n_links);
void ddb__span_str(const ddb_telemetry *t, uint64_t span, const char *key, const char *v);
void ddb__span_int(const ddb_telemetry *t, uint64_t span, const char *key, int64_t v);
void ddb__span_bool(const ddb_telemetry *t, uint64_t span, const char *key, bool v);
void ddb__span_end(const ddb_telemetry *t, uint64_t span, const char *error_type);
/* Connections the client opened so far (for the tests of keep-alive reuse). */
long ddb__client_connections_opened(ddb_client *c);

/* ---- asynchronous single-item writes (ops.c), for the leases: the request runs on
 * the client's scheduler thread with the client's retries, and fn runs there once with
 * the outcome (res and err borrowed for the call; on DDB_ECONDITION with
 * return_old_on_condition_fail, res->item is the item as it is). cancel aborts it.
 * 0 when started (fn then runs exactly once), or an error (fn never runs). Any thread. */
typedef void (*ddb__item_reply_fn)(void *arg, int rc, ddb_result *res, ddb_error *err);
int ddb__update_item_start(ddb_table *t, const ddb_item *key, const char *update,
                           const ddb_write_options *o, ddb_cancel *cancel,
                           ddb__item_reply_fn fn, void *arg, ddb_error *err);

/* ---- transactions (tx.c): poisons a transaction with an error, so that its send
 * fails with it (a fenced write whose lease is gone). */
void ddb__tx_set_error(ddb_tx *tx, const ddb_error *err);

/* ---- the scheduler of the client's background time: tasks, ddb__sched_at,
 * ddb__sched_cancel and ddb__client_sched (the leases' heartbeats and deadlines). */
#include "scheduler.h"

#endif
