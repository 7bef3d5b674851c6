/* server.h: layer 6 of libfakedb, the server. server.c (HTTP through libmicrohttpd,
 * connections, suspended requests, the ticker, the public fakedb_* calls that start,
 * stop and move the clock), admin.c (the /fake/... endpoints) and console.c (the console
 * under /fake/console, which admin.c hands on). The top: it may call
 * every layer below, and nothing below calls it. */
#ifndef FAKEDB_SERVER_H
#define FAKEDB_SERVER_H

#include "protocol.h"

/* server.c: the suspended-connection registry used by delays and clock waits. */
void fakedb__wake_waiters(fakedb *db);

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
