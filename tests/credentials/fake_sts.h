/* fake_sts.h: a small HTTP server on loopback (libmicrohttpd) that plays AWS STS
 * (AssumeRoleWithWebIdentity, AssumeRole with a SigV4 check) and the IAM Identity Center
 * portal (GetRoleCredentials), for the tests of the credentials providers. Tests point
 * the client at it with AWS_ENDPOINT_URL_STS and AWS_ENDPOINT_URL_SSO. */
#ifndef FAKE_STS_H
#define FAKE_STS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fake_sts fake_sts;

fake_sts *fake_sts_start(void);
void fake_sts_stop(fake_sts *s);
const char *fake_sts_url(const fake_sts *s); /* "http://127.0.0.1:PORT" */
/* The Expiration of the credentials served (ms since the epoch). Default 2099. */
void fake_sts_set_expiration(fake_sts *s, int64_t wall_ms);
/* When code is not NULL, STS answers every call with this error and status. */
void fake_sts_set_error(fake_sts *s, const char *code, int status);
/* STS answers the next n calls with this error and status, then as before. */
void fake_sts_fail_next(fake_sts *s, const char *code, int status, int n);
/* The web identity token STS accepts (NULL: any). */
void fake_sts_set_web_token(fake_sts *s, const char *token);
/* A key AssumeRole calls may be signed with (the fake verifies the signature). */
void fake_sts_add_key(fake_sts *s, const char *akid, const char *secret);
/* The SSO bearer token the portal accepts. */
void fake_sts_set_sso_token(fake_sts *s, const char *token);

/* The refresh token SSO-OIDC's CreateToken accepts (POST /token); it answers with a new
 * access token "sso-refreshed-N" valid for an hour, and makes that the one the portal
 * accepts. */
void fake_sts_set_refresh_token(fake_sts *s, const char *token);

typedef struct fake_sts_counts {
    int web_identity;  /* AssumeRoleWithWebIdentity answered with credentials */
    int assume_role;   /* AssumeRole answered with credentials */
    int sso;           /* GetRoleCredentials answered with credentials */
    int oidc;          /* CreateToken refreshes answered */
    int refused;       /* calls refused (bad token, bad signature, set error) */
} fake_sts_counts;
fake_sts_counts fake_sts_counts_get(fake_sts *s);
/* A form field of the last STS call ("" when absent), or the last SSO query's
 * account_id / role_name; the access key id that signed the last AssumeRole. */
void fake_sts_last(fake_sts *s, const char *field, char *out, size_t n);

#endif
