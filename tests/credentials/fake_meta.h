/* fake_meta.h: a small HTTP server on loopback (libmicrohttpd) that plays the EC2
 * instance metadata service (IMDSv2, with its session token) and the container
 * credentials endpoint, for the tests of the credentials chain. */
#ifndef FAKE_META_H
#define FAKE_META_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fake_meta fake_meta;

fake_meta *fake_meta_start(void);
void fake_meta_stop(fake_meta *m);
/* "http://127.0.0.1:PORT" */
const char *fake_meta_url(const fake_meta *m);
/* The Expiration served with credentials (ms since the epoch); 0 serves none. */
void fake_meta_set_expiration(fake_meta *m, int64_t wall_ms);
/* The Authorization value the container endpoint requires (NULL: any). */
void fake_meta_set_container_token(fake_meta *m, const char *token);
/* When set, every request fails with 500. */
void fake_meta_set_failing(fake_meta *m, bool failing);

typedef struct fake_meta_counts {
    int token_puts;        /* PUT /latest/api/token answered */
    int imds_creds;        /* IMDS credentials served */
    int container_creds;   /* container credentials served */
    int refused;           /* requests refused for a missing or wrong token */
    int requests;          /* all requests */
} fake_meta_counts;
fake_meta_counts fake_meta_counts_get(fake_meta *m);

#endif
