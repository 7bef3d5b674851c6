/* cred_sso.c: IAM Identity Center (SSO) profiles. The access token is the one `aws sso
 * login` cached under ~/.aws/sso/cache/<sha1>.json (of the sso_session name, or of the
 * legacy sso_start_url); with it the portal's GetRoleCredentials gives role credentials.
 * For an sso_session the token is refreshed (SSO-OIDC CreateToken) near its expiry. */
#include "internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CACHE_BYTES (64 * 1024)
/* A cached token this close to its expiry is refreshed first, as the SDKs do. */
#define SSO_REFRESH_BEFORE_MS (5 * 60 * 1000)

static bool sha1_hex(const char *s, char out[41])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(s, strlen(s), md, &n, EVP_sha1(), NULL) != 1 || n != 20)
        return false;
    for (unsigned i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return true;
}

static const char *jstr(json_object *o, const char *key)
{
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v))
        return NULL;
    return ddb__json_text(v);
}

/* Writes o to path through a temporary file and a rename, mode 0600. The temporary file
 * is made by mkstemp in the cache's folder (a random name, O_EXCL: never through a link
 * planted there), so the tokens and the client secret reach no other file. */
static bool write_cache(const char *path, json_object *o)
{
    char tmp[600];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= sizeof tmp)
        return false;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return false;
    const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    size_t n = strlen(text);
    bool ok = write(fd, text, n) == (ssize_t)n;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) != 0)
        ok = false;
    if (!ok)
        unlink(tmp);
    return ok;
}

/* SSO-OIDC CreateToken with the refresh token: a new access token in the cache (o and
 * the file). 0, or an error (the caller decides whether it matters). */
static int refresh_token(const ddb__cred_ctx *ctx, const char *what, const char *profile,
                         const char *sso_region, const char *path, json_object *o)
{
    const char *cid = jstr(o, "clientId"), *csec = jstr(o, "clientSecret"),
               *rt = jstr(o, "refreshToken"), *reg = jstr(o, "registrationExpiresAt");
    int64_t now = ddb_clock_wall_ms(ctx->clock);
    if (!cid || !csec || !rt)
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the cached token cannot be refreshed "
                         "(no refresh token)", what);
    if (reg && ddb__parse_iso8601_ms(reg) <= now)
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the SSO client registration has "
                         "expired", what);
    char *base = NULL, *url = NULL, *body = NULL;
    json_object *req = json_object_new_object();
    int rc = ddb__config_endpoint(ctx->cfg, profile, "SSO OIDC", sso_region, &base, ctx->err);
    if (rc != 0)
        goto out;
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        base[--bl] = '\0';
    if (!req || asprintf(&url, "%s/token", base) < 0) {
        url = NULL;
        rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    json_object_object_add(req, "grantType", json_object_new_string("refresh_token"));
    json_object_object_add(req, "clientId", json_object_new_string(cid));
    json_object_object_add(req, "clientSecret", json_object_new_string(csec));
    json_object_object_add(req, "refreshToken", json_object_new_string(rt));
    const char *hdrs[] = { "Content-Type: application/json", "Accept: application/json",
                           "Expect:" };
    ddb__cred_http_req hr = { .method = "POST", .url = url, .headers = hdrs, .n_headers = 3,
                              .body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN) };
    char terr[CURL_ERROR_SIZE];
    long status = ddb__cred_http(ctx, &hr, &body, terr, sizeof terr);
    json_object *a = status == 200 && body ? json_tokener_parse(body) : NULL;
    const char *at = jstr(a, "accessToken"), *nrt = jstr(a, "refreshToken");
    json_object *ein = NULL;
    if (a)
        json_object_object_get_ex(a, "expiresIn", &ein);
    int64_t expires_in = ein && json_object_is_type(ein, json_type_int) ? json_object_get_int64(ein) : 0;
    if (status == 0) {
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: refreshing the SSO token got no answer: "
                       "%s", what, terr);
    } else if (!at || !*at || expires_in <= 0) {
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: refreshing the SSO token failed (HTTP "
                       "%ld)", what, status);
    } else {
        char exp[32];
        time_t t = (time_t)(now / 1000 + expires_in);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(exp, sizeof exp, "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_object_object_add(o, "accessToken", json_object_new_string(at));
        json_object_object_add(o, "expiresAt", json_object_new_string(exp));
        if (nrt)
            json_object_object_add(o, "refreshToken", json_object_new_string(nrt));
        write_cache(path, o); /* best effort: the new token is used either way */
    }
    json_object_put(a);
out:
    json_object_put(req);
    ddb__free_secret(body);
    free(url);
    free(base);
    return rc;
}

/* The cached access token (malloc'd) for cache_key, checked against the clock; for an
 * sso_session, refreshed within 5 minutes of its expiry as the SDKs do. */
bool ddb__sso_cache_parse(const char *text, json_object **o, const char **token,
                          const char **expires, int64_t *expires_ms)
{
    *o = json_tokener_parse(text);
    *token = jstr(*o, "accessToken");
    *expires = jstr(*o, "expiresAt");
    *expires_ms = *expires ? ddb__parse_iso8601_ms(*expires) : 0;
    return *token && **token && *expires_ms != 0;
}

static int cached_token(const ddb__cred_ctx *ctx, const char *what, const char *profile,
                        const char *cache_key, bool can_refresh, const char *sso_region,
                        char **token)
{
    *token = NULL;
    char hex[41];
    const char *home = getenv("HOME");
    if (!home || !sha1_hex(cache_key, hex))
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: no home directory for the SSO cache",
                         what);
    char path[512];
    snprintf(path, sizeof path, "%s/.aws/sso/cache/%s.json", home, hex);
    errno = 0;
    char *text = ddb__read_small_file(path, MAX_CACHE_BYTES);
    if (!text)
        return ddb__fail(ctx->err, DDB_ECREDENTIALS,
                         "%s: no cached SSO token (%.200s: %s); run 'aws sso login'", what, path,
                         strerror(errno ? errno : EIO));
    json_object *o = NULL;
    const char *at = NULL, *exp = NULL;
    int64_t exp_ms = 0;
    bool whole = ddb__sso_cache_parse(text, &o, &at, &exp, &exp_ms);
    ddb__free_secret(text);
    int64_t now = ddb_clock_wall_ms(ctx->clock);
    int rc = 0;
    if (!whole) {
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS,
                       "%s: the cached SSO token %.200s is malformed (accessToken, expiresAt)",
                       what, path);
        goto out;
    }
    if (can_refresh && now >= exp_ms - SSO_REFRESH_BEFORE_MS) {
        ddb_error rerr;
        ddb_error_clear(&rerr);
        ddb__cred_ctx rctx = *ctx;
        rctx.err = &rerr;
        if (refresh_token(&rctx, what, profile, sso_region, path, o) == 0) {
            at = jstr(o, "accessToken");
            exp = jstr(o, "expiresAt");
            exp_ms = ddb__parse_iso8601_ms(exp);
        } else if (now >= exp_ms) {
            size_t wl = strlen(what);
            const char *why = strncmp(rerr.message, what, wl) == 0 && rerr.message[wl] == ':'
                                  ? rerr.message + wl + 2 : rerr.message;
            rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: the SSO session has expired (at "
                           "%.40s) and %.200s; run 'aws sso login'", what, exp, why);
            goto out;
        }
    }
    if (!ddb__header_value_ok(at)) /* it becomes the x-amz-sso_bearer_token header */
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: invalid header value: the cached "
                       "SSO access token holds a line break or another control character; "
                       "refused", what);
    else if (now >= exp_ms)
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS,
                       "%s: the SSO session has expired (at %.40s); run 'aws sso login'", what, exp);
    else if (!(*token = strdup(at)))
        rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
out:
    json_object_put(o);
    return rc;
}

int ddb__sso_role_credentials(const ddb__cred_ctx *ctx, const char *what, const char *body,
                              ddb__credentials *out)
{
    json_object *o = json_tokener_parse(body ? body : "");
    json_object *rcj = NULL, *exp = NULL;
    if (o)
        json_object_object_get_ex(o, "roleCredentials", &rcj);
    const char *a = jstr(rcj, "accessKeyId"), *s = jstr(rcj, "secretAccessKey"),
               *t = jstr(rcj, "sessionToken");
    if (rcj)
        json_object_object_get_ex(rcj, "expiration", &exp);
    int64_t exp_ms = exp && (json_object_is_type(exp, json_type_int) ||
                             json_object_is_type(exp, json_type_double))
                         ? json_object_get_int64(exp) : 0;
    int rc = 0;
    if (!a || !s || !t || !*a || !*s || !*t || exp_ms <= 0)
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS,
                       "%s: the answer of GetRoleCredentials has no complete credentials", what);
    else if (!ddb__creds_set(out, a, s, t, exp_ms))
        rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
    json_object_put(o);
    return rc;
}

int ddb__cred_sso(const ddb__cred_ctx *ctx, const char *profile, ddb__credentials *out)
{
    char what[160];
    snprintf(what, sizeof what, "sso of profile '%.100s'", profile);
    const ddb__config *cfg = ctx->cfg;
    const char *session = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "sso_session");
    const char *start_url, *sso_region;
    if (session) {
        if (!ddb__config_has(cfg, DDB__SEC_SSO_SESSION, session))
            return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: sso-session '%.100s' not found",
                             what, session);
        start_url = ddb__config_get(cfg, DDB__SEC_SSO_SESSION, session, "sso_start_url");
        sso_region = ddb__config_get(cfg, DDB__SEC_SSO_SESSION, session, "sso_region");
    } else {
        start_url = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "sso_start_url");
        sso_region = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "sso_region");
    }
    const char *account = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "sso_account_id");
    const char *role = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "sso_role_name");
    if (!start_url || !sso_region || !account || !role)
        return ddb__fail(ctx->err, DDB_ECREDENTIALS,
                         "%s: incomplete: needs sso_start_url, sso_region, sso_account_id and "
                         "sso_role_name", what);
    if (!ddb__region_valid(sso_region))
        return ddb__fail(ctx->err, DDB_EINVAL, "%s: sso_region '%.64s' is not a valid region",
                         what, sso_region);
    char *token = NULL;
    int rc = cached_token(ctx, what, profile, session ? session : start_url, session != NULL,
                          sso_region, &token);
    if (rc != 0)
        return rc;
    char *base = NULL, *url = NULL, *hdr = NULL, *body = NULL;
    char *ea = curl_easy_escape(NULL, account, 0), *er = curl_easy_escape(NULL, role, 0);
    rc = ddb__config_endpoint(cfg, profile, "SSO", sso_region, &base, ctx->err);
    if (rc != 0)
        goto out;
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        base[--bl] = '\0';
    if (ea && er &&
        asprintf(&url, "%s/federation/credentials?account_id=%s&role_name=%s", base, ea, er) < 0)
        url = NULL;
    if (url && asprintf(&hdr, "x-amz-sso_bearer_token: %s", token) < 0)
        hdr = NULL;
    if (!url || !hdr) {
        rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    const char *hdrs[] = { "Accept: application/json", hdr };
    ddb__cred_http_req req = { .method = "GET", .url = url, .headers = hdrs, .n_headers = 2 };
    char terr[CURL_ERROR_SIZE];
    long status = ddb__cred_http(ctx, &req, &body, terr, sizeof terr);
    if (status == 0) {
        rc = ddb_cancel_is_set(ctx->cancel)
                 ? ddb__fail(ctx->err, DDB_ECANCELED, "%s: cancelled", what)
                 : ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: GetRoleCredentials got no answer: %s",
                             what, terr);
        goto out;
    }
    json_object *o = json_tokener_parse(body ? body : "");
    if (status != 200) {
        const char *m = jstr(o, "message");
        if (!m)
            m = jstr(o, "Message");
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS,
                       "%s: GetRoleCredentials failed (HTTP %ld): %.200s%s", what, status,
                       m ? m : "no message",
                       status == 401 || status == 403 ? "; run 'aws sso login'" : "");
        if (ctx->err)
            ctx->err->http_status = (int)status;
        json_object_put(o);
        goto out;
    }
    json_object_put(o);
    rc = ddb__sso_role_credentials(ctx, what, body, out);
out:
    curl_free(ea);
    curl_free(er);
    ddb__free_secret(token);
    ddb__free_secret(hdr);
    ddb__free_secret(body);
    free(url);
    free(base);
    return rc;
}
