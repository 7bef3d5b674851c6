/* sigv4.h: AWS Signature Version 4, for the client (signing) and the fake server
 * (verifying). The signing time is an input, so tests replay AWS's vectors exactly. */
#ifndef DL_SIGV4_H
#define DL_SIGV4_H

#include <stddef.h>
#include <stdint.h>

typedef struct dl_sigv4_header {
    const char *name;   /* any case; canonicalised to lower case */
    const char *value;  /* trimmed, inner runs of spaces folded, as SigV4 requires */
} dl_sigv4_header;

typedef struct dl_sigv4_request {
    const char *method;            /* "POST" */
    const char *path;              /* raw path, e.g. "/" (normalised per SigV4 rules) */
    const char *query;             /* raw query string without '?', or NULL */
    const dl_sigv4_header *headers;/* every header to sign; must include host */
    size_t n_headers;
    const void *body;
    size_t body_len;
    const char *payload_hash;      /* precomputed hex SHA-256 of body, or NULL */
} dl_sigv4_request;

typedef struct dl_sigv4_credentials {
    const char *access_key_id;
    const char *secret_access_key;
    const char *session_token;     /* NULL when none */
} dl_sigv4_credentials;

/* The results of signing; the intermediates are kept for tests against AWS vectors. */
typedef struct dl_sigv4_result {
    char amz_date[17];             /* YYYYMMDD'T'HHMMSS'Z' */
    char payload_hash[65];         /* hex SHA-256 of the body */
    char *canonical_request;       /* malloc'd */
    char *string_to_sign;          /* malloc'd */
    char signature[65];            /* hex */
    char *authorization;           /* malloc'd value of the Authorization header */
} dl_sigv4_result;

/* Signs the request at `epoch_s` (seconds since the Unix epoch) for region/service.
 * The caller adds X-Amz-Date (amz_date), Authorization, and X-Amz-Security-Token when a
 * session token is used; headers passed in must already include x-amz-date if it is to
 * be signed (the client passes it; the vectors do). 0 or -1 (out of memory / bad input). */
int dl__sigv4_sign(const dl_sigv4_request *req, const dl_sigv4_credentials *creds,
                   const char *region, const char *service, int64_t epoch_s,
                   dl_sigv4_result *out);
void dl__sigv4_result_cleanup(dl_sigv4_result *r);
/* "20150830T123600Z" for an epoch second. buf of 17 bytes. */
void dl__sigv4_amz_date(int64_t epoch_s, char buf[17]);
/* Hex SHA-256 of data into out (65 bytes). */
void dl__sha256_hex(const void *data, size_t len, char out[65]);

/* Verification (fake server): parses the Authorization header of a request, recomputes
 * the signature with `secret` for the access key it names, and compares in constant
 * time. Returns 0 when valid; otherwise -1 with one of DynamoDB's messages in err
 * (e.g. "The request signature we calculated does not match the signature you
 * provided. Check your AWS Secret Access Key and signing method. Consult the service
 * documentation for details."). `headers` are all headers of the request as received. */
typedef const char *(*dl_sigv4_secret_fn)(void *arg, const char *access_key_id);
typedef enum dl_sigv4_verdict {
    DL_SIGV4_OK = 0,
    DL_SIGV4_MISSING,        /* MissingAuthenticationTokenException */
    DL_SIGV4_MALFORMED,      /* IncompleteSignatureException */
    DL_SIGV4_UNKNOWN_KEY,    /* UnrecognizedClientException */
    DL_SIGV4_MISMATCH,       /* InvalidSignatureException */
} dl_sigv4_verdict;
dl_sigv4_verdict dl__sigv4_verify(const char *method, const char *path, const char *query,
                                  const dl_sigv4_header *headers, size_t n_headers,
                                  const void *body, size_t body_len,
                                  dl_sigv4_secret_fn secret_fn, void *arg,
                                  char *err, size_t err_len);

#endif
