/* fdbt.h: helpers for the fakedb tests: a fresh in-process server per test, and calls
 * over real HTTP with libcurl (DynamoDB requests and /fake/ endpoints). */
#ifndef FDBT_H
#define FDBT_H

#include <fakedb/fakedb.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct fdbt_resp {
    long status;            /* HTTP status; 0 when the connection failed */
    int curl_code;          /* CURLcode */
    json_object *json;      /* parsed body or NULL */
    char *body;
    char request_id[80];
    char crc32[32];
} fdbt_resp;

extern fakedb *fdbt_db;

/* Starts fdbt_db with a fake clock at 1700000000000 ms (and the given db_path, or NULL). */
void fdbt_start(const char *db_path);
/* Starts fdbt_db with the given options. */
void fdbt_start_opts(const fakedb_options *o);
void fdbt_stop(void);

/* POSTs `body` as DynamoDB_20120810.<op> with a dummy SigV4 header. */
fdbt_resp fdbt_call(const char *op, const char *body);
/* Full control: any header may be NULL to leave it out. Any thread: a failure shows in
 * the response (curl_code, status 0), never as an assertion. */
fdbt_resp fdbt_raw(const char *method, const char *path, const char *target,
                   const char *content_type, const char *auth, const char *body, size_t len);
void fdbt_free(fdbt_resp *r);

/* The "__type" suffix after '#', or "" on success. */
const char *fdbt_error(const fdbt_resp *r);
const char *fdbt_message(const fdbt_resp *r);
/* A value by a dotted path, e.g. "Item.pk.S" or "Items.0.sk.N". */
json_object *fdbt_get(json_object *o, const char *path);
const char *fdbt_str(const fdbt_resp *r, const char *path);
/* The request fragment that asks for the page after r's: `,"ExclusiveStartKey":{...}`
 * from r's LastEvaluatedKey into `start` (asserting it fits), or "" after the last page;
 * true when there is a next page. Frees r. */
bool fdbt_next_page(fdbt_resp *r, char *start, size_t cap);

/* Creates a table pk (S) [+ sk with the given type]. */
void fdbt_table(const char *name, const char *sk, const char *sk_type);

/* ---- expected answers. Each asserts (Check, on the test's thread), frees the response
 * and, on failure, names the call and shows the status and body. */

/* `r` has HTTP status `status` and the __type `type` after '#' ("" for none, as an answer
 * without an error has); when msg is not NULL, its message contains msg
 * (fdbt_expect_answer) or is exactly msg (fdbt_expect_answer_exact). `what` names the
 * call in a failure (may be NULL). Frees r. */
void fdbt_expect_answer(fdbt_resp *r, long status, const char *type, const char *msg,
                        const char *what);
void fdbt_expect_answer_exact(fdbt_resp *r, long status, const char *type, const char *msg,
                              const char *what);
/* fdbt_call(op, body) answers 200. */
void fdbt_expect_ok(const char *op, const char *body);
/* fdbt_call(op, body) answers `status` with the __type `type` ("" for none). */
void fdbt_expect_call(const char *op, const char *body, long status, const char *type);
/* fdbt_call(op, body) answers 400 with `type` and, when msg is not NULL, a message that
 * contains msg (fdbt_expect_error) or is exactly msg (fdbt_expect_error_exact). */
void fdbt_expect_error(const char *op, const char *body, const char *type, const char *msg);
void fdbt_expect_error_exact(const char *op, const char *body, const char *type, const char *msg);

/* Removes a test's temporary directory and all it holds (rm -rf); the test fails when
 * that fails. */
void fdbt_remove_dir(const char *dir);

/* A TCP connection to 127.0.0.1:port (a raw client, for what libcurl will not send). */
int fdbt_dial(int port);

/* ---- the fakedb program (DYNALOCK_BINARY_DIR/fakedb/fakedb) as a process. */

/* Its path (a static buffer). */
char *fdbt_program(void);
/* Starts argv (argv[0]: the program) with its stdout on a pipe, whose read end is
 * *out_fd (the caller closes it), and its stderr on /dev/null. Its pid. */
pid_t fdbt_spawn(char *const argv[], int *out_fd);
/* Reads the program's first line from fd ("fakedb listening on http://127.0.0.1:PORT")
 * and returns PORT; the test fails on any other line. */
int fdbt_read_port(int fd);
/* Stops the program with SIGTERM and asserts that it exits 0; closes fd. */
void fdbt_stop_program(pid_t pid, int fd);

#endif
