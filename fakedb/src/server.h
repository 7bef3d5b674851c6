/* server.h: layer 6 of libfakedb, the server. server.c (HTTP through libmicrohttpd,
 * connections, suspending requests, the ticker, fakedb_start and fakedb_stop), admin.c
 * (the /fake/... endpoints), console.c (the console under /fake/console, which admin.c
 * hands on), control.c (reset, the clock's moves, the version) and waiters.c (the
 * suspended requests). The top: it may call
 * every layer below, and nothing below calls it. */
#ifndef FAKEDB_SERVER_H
#define FAKEDB_SERVER_H

#include "protocol.h"

/* waiters.c: the suspended connections (db->waiters under db->wait_lock), made by
 * server.c's suspend. */
struct MHD_Connection;
struct fakedb__waiter {
    struct MHD_Connection *conn;
    bool *resumed;          /* the connection's flag, set when it is taken to resume */
    int64_t until_ms;       /* clock waits; INT64_MAX otherwise */
    bool requests;          /* a console long poll: due once db->recent.seq > after_seq */
    uint64_t after_seq;
    int64_t deadline_mono_ms;
    fakedb__waiter *next;
};
/* Takes the waiters that are due (all with `all`) off the list, lowering *next_deadline
 * (may be NULL) to the earliest deadline of those left; wait_lock held. */
fakedb__waiter *fakedb__waiters_take_due(fakedb *db, bool all, int64_t *next_deadline);
/* Resumes the connections of a list taken off, and frees it; wait_lock not held. */
void fakedb__waiters_resume(fakedb__waiter *list);
/* Resumes the waiters due now (after a move of the clock, or a registration). */
void fakedb__wake_waiters(fakedb *db);

/* control.c: reset, fakedb_create_table, the clock's moves, the version; and the expiry
 * of one database's items (fakedb__databases_each), which the ticker runs too. */
void fakedb__sweep_one(void *arg, fakedb__store *st, const char *key, const char *region);
void fakedb__purge_one(void *arg, fakedb__store *st, const char *key, const char *region);

/* admin.c: returns 1 when the request is a clock wait to suspend (until_ms and
 * timeout_ms filled), 2 when it is a console long poll for requests to suspend (until_ms:
 * the sequence number to see passed; timeout_ms), 0 when rs is the answer. */
int fakedb__handle_admin(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs,
                         int64_t *until_ms, int64_t *timeout_ms);
/* With credentials: whether a /fake/ request carries them; when not, rs is the 403. */
bool fakedb__admin_authorized(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs);
void fakedb__admin_wait_answer(fakedb *db, int64_t until_ms, fakedb__http_resp *rs);

/* console.c: the console under /fake/console (path: the URL after "/fake/console").
 * Answers in rs and returns 0, or returns 2 for a long poll of the recent requests to
 * suspend (after_seq, timeout_ms filled) unless rq->resumed. */
int fakedb__console_handle(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs,
                           const char *path, int64_t *after_seq, int64_t *timeout_ms);
/* Adds the console's security headers (CSP, nosniff...) to a response. */
struct MHD_Response;
void fakedb__console_headers(struct MHD_Response *resp);
/* Frees what the console remembers (the lock observations); at stop. */
void fakedb__console_free(fakedb *db);

#endif
