/* fdbt.h: helpers for the fakedb tests: a fresh in-process server per test, and calls
 * over real HTTP with libcurl (DynamoDB requests and /fake/ endpoints). */
#ifndef FDBT_H
#define FDBT_H

#include <fakedb/fakedb.h>
#include <json-c/json.h>
#include <stdbool.h>

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

/* Creates a table pk (S) [+ sk with the given type]. */
void fdbt_table(const char *name, const char *sk, const char *sk_type);

#endif
