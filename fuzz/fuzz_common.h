/* fuzz_common.h: what the libFuzzer targets here share: the entry point's prototype, the
 * input as a C string and, for the targets that define FUZZ_FAKEDB before including it,
 * a request handled by fakedb as the server handles one that came over HTTP. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The n bytes at data as a NUL-terminated string, malloc'd (the caller frees it); NULL
 * when out of memory. */
static inline char *fuzz_text(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

#ifdef FUZZ_FAKEDB
#include <stdio.h>

#include "protocol.h"
#include "sigv4.h"

/* Hands db a signed POST of body (len bytes) to op -- DynamoDB_20120810.op, or op itself
 * when it names its service ("DynamoDBStreams_20120810.GetRecords") -- as the server does
 * with a request that came over HTTP. FUZZ_SHOW=1 prints each answer on stderr. */
static void fuzz_fakedb_handle(fakedb *db, const char *op, const char *body, size_t len)
{
    char target[64];
    snprintf(target, sizeof target, "%s%s", strchr(op, '.') ? "" : "DynamoDB_20120810.", op);
    static const dl_sigv4_header headers[] = {{"x-amz-date", "20260101T000000Z"},
                                              {"host", "127.0.0.1"}};
    fakedb__http_req rq = {
        .method = "POST", .url = "/", .target = target,
        .headers = headers, .n_headers = 2,
        .content_type = "application/x-amz-json-1.0",
        .authorization = "AWS4-HMAC-SHA256 Credential=AKIDFUZZ/20260101/us-east-1/dynamodb/"
                         "aws4_request, SignedHeaders=host;x-amz-date, Signature="
                         "0000000000000000000000000000000000000000000000000000000000000000",
        .body = body, .body_len = len};
    fakedb__http_resp rs = {0};
    fakedb__handle_ddb(db, &rq, &rs, false);
    if (getenv("FUZZ_SHOW"))
        fprintf(stderr, "%d %.*s\n", rs.status, (int)rs.body_len, rs.body ? rs.body : "");
    free(rs.body);
}
#endif

#endif
