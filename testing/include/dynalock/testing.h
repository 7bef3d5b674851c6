/* testing.h: libddb_testing, for tests of code that uses dynalock. It starts the fake
 * DynamoDB in the test's process, makes clients for it that share a fake clock, and
 * plays what other processes do to a lock -- hold it and crash, release it, delete its
 * item -- without the test knowing the format of the lock item.
 *
 * The simulate helpers write through the lock table's own table and client, WITHOUT
 * conditions: they work on the fake and on DynamoDB Local alike, and they are for tests
 * only, never for a table in production.
 *
 * Ownership and errors as in ddb.h. Every function may be called from any thread.
 */
#ifndef DYNALOCK_TESTING_H
#define DYNALOCK_TESTING_H

#include <dynalock/coord.h>
#include <dynalock/ddb.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the fake */

typedef struct ddb_test_server ddb_test_server;

typedef struct ddb_test_server_options {
    bool system_clock;      /* false (default): clients share a fake clock */
    int64_t start_wall_ms;  /* the fake clock's wall time at start; 0 = 2026-01-01T00:00Z */
    int log_level;          /* clients' log level; 0 = DDB_LOG_WARN */
} ddb_test_server_options;

/* Starts an in-process fake DynamoDB on an ephemeral loopback port.
 * Thread: any; ddb_test_server_stop once its clients are freed. */
DDB_API ddb_test_server *ddb_test_server_start(const ddb_test_server_options *o, ddb_error *err);
/* Stops the server and frees the fake. Clients made by it must be freed first. */
DDB_API void ddb_test_server_stop(ddb_test_server *f);
/* Creates a table with string keys (sk may be NULL), ACTIVE at once. */
DDB_API int ddb_test_server_create_table(ddb_test_server *f, const char *name, const char *pk,
                                  const char *sk, ddb_error *err);
/* A new client pointed at the fake, with dummy credentials and the fake's clock. `base`
 * (may be NULL) supplies other options (log, telemetry, retries); its endpoint, region,
 * credentials and clock are replaced. Free with ddb_client_free. Several clients behave
 * as separate processes would. */
DDB_API ddb_client *ddb_test_server_client_new(ddb_test_server *f, const ddb_client_options *base,
                                        ddb_error *err);
/* Borrowed: the clock the fake's clients share (a fake clock unless system_clock). */
DDB_API ddb_clock *ddb_test_server_clock(ddb_test_server *f);
/* Borrowed: the server, for fault injection and counters (fakedb.h). */
struct fakedb;
DDB_API struct fakedb *ddb_test_server_fakedb(ddb_test_server *f);
DDB_API const char *ddb_test_server_endpoint(const ddb_test_server *f);
/* Moves the fake clock by ms and waits until the work that the advance released (a
 * renewal and its answer, a poll) is done. */
DDB_API int ddb_test_server_advance(ddb_test_server *f, int64_t ms);

/* A clock that follows a fakedb server's clock is libddb's ddb_clock_new_server. */

/* ------------------------------------------------------- playing a process */

/* Another process holds the lock: acquired just now, never renewed, as a holder that
 * crashed. *token (may be NULL) gets its fencing token. A lease of this process is lost
 * at its next renewal (taken_over); a contender takes over once it has seen this holder
 * for a whole lease. holder_label may be NULL. Thread: any. */
DDB_API int ddb_lock_simulate_holder(ddb_lock_table *locks, const char *name, int64_t lease_ms,
                                     const char *holder_label, int64_t *token, ddb_error *err);
/* The holder released the lock, whoever it was: the next acquire finds it free and
 * raises the token. A lease of this process is lost (taken_over). */
DDB_API int ddb_lock_simulate_release(ddb_lock_table *locks, const char *name, ddb_error *err);
/* The lock item is deleted, as time to live or an operator would: a lease is lost
 * (deleted) and the next acquire starts the token at 1. */
DDB_API int ddb_lock_simulate_delete(ddb_lock_table *locks, const char *name, ddb_error *err);

/* Reads the item (strongly consistent): ddb_lock_table_get_state without a cancel token.
 * A lock without an item gives exists == false. ddb_lock_state is in coord.h.
 * Thread: any, as ddb_lock_state_equal. */
DDB_API int ddb_lock_get_state(ddb_lock_table *locks, const char *name, ddb_lock_state *out,
                               ddb_error *err);
/* true when a and b agree on what a test states of a lock: exists, is_held,
 * holder_label, lease_ms and fencing_token (not the owner id, record version, value or
 * unchanged_ms, which change with every holder and renewal). Two NULLs are equal, NULL
 * and a state are not. Thread: any. */
DDB_API bool ddb_lock_state_equal(const ddb_lock_state *a, const ddb_lock_state *b);

/* Waits for the next time a try of this lock table finds the lock `name` held and is
 * turned away: a ddb_lock_try_acquire that returns no lease, or a poll of ddb_lock_acquire
 * or ddb_lock_run_as_leader that waits on. Take the watch BEFORE the contender starts,
 * then wait on it. Thread: any; ddb_refusal_watch_free once no wait is in progress. */
typedef struct ddb_refusal_watch ddb_refusal_watch;
DDB_API ddb_refusal_watch *ddb_refusal_watch_new(ddb_lock_table *locks, const char *name,
                                                     ddb_error *err);
/* Blocks (real time, at most timeout_ms; < 0 = forever) until the refusal happened:
 * 0, DDB_ETIMEDOUT, or DDB_ECANCELED if cancel (may be NULL) is set. */
DDB_API int ddb_refusal_watch_wait(ddb_refusal_watch *w, int64_t timeout_ms, ddb_cancel *cancel);
DDB_API bool ddb_refusal_watch_happened(const ddb_refusal_watch *w);
DDB_API void ddb_refusal_watch_free(ddb_refusal_watch *w);

#ifdef __cplusplus
}
#endif
#endif
