/* cred_sts.c: temporary credentials from AWS STS: AssumeRoleWithWebIdentity (EKS IRSA and
 * other OIDC tokens; an unsigned call) and AssumeRole (signed with SigV4 by the source
 * profile's credentials). The query API: a form-encoded POST, an XML answer. */
#include "internal.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "sigv4.h"

#define MAX_TOKEN_BYTES (16 * 1024)

/* Reads an STS answer: credentials on 200, else the error's code and message. */
static int read_answer(const ddb__cred_ctx *ctx, const char *what, const char *action,
                       long status, const char *body, const char *transport,
                       ddb__credentials *out)
{
    char result[64];
    snprintf(result, sizeof result, "%sResult", action);
    if (status == 0) {
        if (ddb_cancel_is_set(ctx->cancel))
            return ddb__fail(ctx->err, DDB_ECANCELED, "%s: cancelled while calling STS", what);
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: STS %s got no answer: %s", what,
                         action, transport);
    }
    if (status != 200) {
        char *code = ddb__xml_text(body, "Error", "Code");
        char *msg = ddb__xml_text(body, "Error", "Message");
        char *rid = ddb__xml_text(body, NULL, "RequestId");
        int rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: STS %s failed (HTTP %ld): %s: %.200s",
                           what, action, status, code ? code : "unknown error",
                           msg ? msg : "no message");
        if (ctx->err) {
            ctx->err->http_status = (int)status;
            snprintf(ctx->err->aws_type, sizeof ctx->err->aws_type, "%s", code ? code : "");
            snprintf(ctx->err->request_id, sizeof ctx->err->request_id, "%s", rid ? rid : "");
        }
        free(code);
        free(msg);
        free(rid);
        return rc;
    }
    char *akid = ddb__xml_text(body, result, "AccessKeyId");
    char *secret = ddb__xml_text(body, result, "SecretAccessKey");
    char *token = ddb__xml_text(body, result, "SessionToken");
    char *exp = ddb__xml_text(body, result, "Expiration");
    int rc = 0;
    int64_t exp_ms = exp ? ddb__parse_iso8601_ms(exp) : 0;
    if (!akid || !secret || !token || !*akid || !*secret || !*token || exp_ms == 0)
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS,
                       "%s: the answer of STS %s has no complete credentials", what, action);
    else if (!ddb__creds_set(out, akid, secret, token, exp_ms))
        rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
    free(akid);
    if (secret) {
        memset(secret, 0, strlen(secret));
        free(secret);
    }
    if (token) {
        memset(token, 0, strlen(token));
        free(token);
    }
    free(exp);
    return rc;
}

/* Whether an STS failure is worth another try: no answer (unless cancelled), a 5xx, or
 * throttling / an identity provider that did not answer, as the SDKs retry them. */
static bool transient(const ddb__cred_ctx *ctx, long status, const char *body)
{
    if (status == 0)
        return !ddb_cancel_is_set(ctx->cancel);
    if (status >= 500)
        return true;
    char *code = status == 200 ? NULL : ddb__xml_text(body, "Error", "Code");
    bool t = code && (strcmp(code, "Throttling") == 0 || strcmp(code, "ThrottlingException") == 0 ||
                      strcmp(code, "RequestLimitExceeded") == 0 ||
                      strcmp(code, "IDPCommunicationError") == 0);
    free(code);
    return t;
}

#define STS_BASE_DELAY_MS 100

/* One STS call with the standard mode's attempts, waiting between them (retry.c's full
 * jitter from STS_BASE_DELAY_MS, on the client's clock, so a cancel ends the wait). */
static int sts_call(const ddb__cred_ctx *ctx, const char *what, const char *action,
                    const ddb__cred_http_req *req, ddb__credentials *out)
{
    ddb__retry_state *rs = ddb__retry_state_new_policy(&(ddb__policy){
        .max_attempts = DDB__DEFAULT_MAX_ATTEMPTS,
        .base_delay_ms = STS_BASE_DELAY_MS,
        .max_backoff_ms = DDB__DEFAULT_MAX_BACKOFF_MS,
        .retry_quota = -1,
    });
    if (!rs)
        return ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
    int rc;
    for (int attempt = 1;; attempt++) {
        char *body = NULL, terr[CURL_ERROR_SIZE];
        long status = ddb__cred_http(ctx, req, &body, terr, sizeof terr);
        if (attempt < ddb__retry_max_attempts(rs) && transient(ctx, status, body)) {
            ddb__free_secret(body);
            int64_t delay_ms = ddb__retry_backoff_ms(rs, attempt);
            int64_t deadline = ddb_clock_mono_ns(ctx->clock) + delay_ms * 1000000;
            if (ddb__clock_wait_until(ctx->clock, deadline, ctx->cancel) == DDB_ECANCELED) {
                rc = ddb__fail(ctx->err, DDB_ECANCELED, "%s: cancelled while calling STS", what);
                break;
            }
            continue;
        }
        rc = read_answer(ctx, what, action, status, body, terr, out);
        ddb__free_secret(body);
        break;
    }
    ddb__retry_state_free(rs);
    return rc;
}

static bool add_common(char **form, const char *action, const ddb__assume_role *a)
{
    bool ok = ddb__form_add(form, "Action", action) &&
              ddb__form_add(form, "Version", "2011-06-15") &&
              ddb__form_add(form, "RoleArn", a->role_arn) &&
              ddb__form_add(form, "RoleSessionName", a->session_name);
    if (ok && a->duration_s > 0) {
        char d[16];
        snprintf(d, sizeof d, "%d", a->duration_s);
        ok = ddb__form_add(form, "DurationSeconds", d);
    }
    if (ok && a->external_id)
        ok = ddb__form_add(form, "ExternalId", a->external_id);
    return ok;
}

int ddb__sts_web_identity(const ddb__cred_ctx *ctx, const char *what,
                          const ddb__assume_role *a, const char *token_file,
                          ddb__credentials *out)
{
    errno = 0;
    char *token = ddb__read_small_file(token_file, MAX_TOKEN_BYTES);
    if (!token)
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: cannot read the token file %.200s: %s",
                         what, token_file, strerror(errno ? errno : EIO));
    bool good = *token != '\0';
    for (const char *p = token; *p && good; p++)
        good = isgraph((unsigned char)*p);
    if (!good) {
        ddb__free_secret(token);
        return ddb__fail(ctx->err, DDB_ECREDENTIALS,
                         "%s: the token file %.200s does not hold a token (empty, or not one "
                         "line of printable text)", what, token_file);
    }
    char *url = NULL;
    int rc = ddb__config_endpoint(ctx->cfg, a->profile, "STS", ctx->region, &url, ctx->err);
    if (rc != 0) {
        ddb__free_secret(token);
        return rc;
    }
    char *form = NULL;
    if (!add_common(&form, "AssumeRoleWithWebIdentity", a) ||
        !ddb__form_add(&form, "WebIdentityToken", token)) {
        ddb__free_secret(token);
        ddb__free_secret(form);
        free(url);
        return ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
    }
    ddb__free_secret(token);
    const char *hdrs[] = { "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                           "Accept: text/xml", "Expect:" };
    ddb__cred_http_req req = { .method = "POST", .url = url, .headers = hdrs, .n_headers = 3,
                               .body = form };
    rc = sts_call(ctx, what, "AssumeRoleWithWebIdentity", &req, out);
    ddb__free_secret(form);
    free(url);
    return rc;
}

/* The Host header value and the path of url, for signing. */
static bool url_parts(const char *url, char **host, char **path)
{
    *host = *path = NULL;
    CURLU *u = curl_url();
    if (!u)
        return false;
    char *h = NULL, *port = NULL, *p = NULL;
    bool ok = curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_PATH, &p, 0) == CURLUE_OK;
    if (ok) {
        curl_url_get(u, CURLUPART_PORT, &port, 0); /* only when given */
        if (port ? asprintf(host, "%s:%s", h, port) < 0 : !(*host = strdup(h)))
            *host = NULL;
        *path = strdup(p && *p ? p : "/");
        ok = *host && *path;
    }
    curl_free(h);
    curl_free(port);
    curl_free(p);
    curl_url_cleanup(u);
    return ok;
}

int ddb__sts_assume_role(const ddb__cred_ctx *ctx, const char *what, const ddb__assume_role *a,
                         const ddb__credentials *src, ddb__credentials *out)
{
    char *url = NULL;
    int rc = ddb__config_endpoint(ctx->cfg, a->profile, "STS", ctx->region, &url, ctx->err);
    if (rc != 0)
        return rc;
    char *host = NULL, *path = NULL, *form = NULL;
    char *hdr_buf = NULL;
    dl_sigv4_result sig = { 0 };
    if (!url_parts(url, &host, &path)) {
        rc = ddb__fail(ctx->err, DDB_EINVAL, "%s: the STS endpoint '%.200s' is not a URL", what, url);
        goto out;
    }
    if (!add_common(&form, "AssumeRole", a)) {
        rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    int64_t epoch_s = ddb_clock_wall_ms(ctx->clock) / 1000;
    char amz_date[17];
    dl__sigv4_amz_date(epoch_s, amz_date);
    static const char ctype[] = "application/x-www-form-urlencoded; charset=utf-8";
    dl_sigv4_header sh[4] = {
        { "host", host },
        { "content-type", ctype },
        { "x-amz-date", amz_date },
        { "x-amz-security-token", src->session_token },
    };
    dl_sigv4_request sreq = { .method = "POST", .path = path, .headers = sh,
                              .n_headers = src->session_token ? 4 : 3, .body = form,
                              .body_len = strlen(form) };
    dl_sigv4_credentials sc = { src->access_key_id, src->secret_access_key, src->session_token };
    if (dl__sigv4_sign(&sreq, &sc, ctx->region, "sts", epoch_s, &sig) != 0) {
        rc = ddb__fail(ctx->err, DDB_ENOMEM, "%s: the STS request could not be signed", what);
        goto out;
    }
    const char *tok = src->session_token ? src->session_token : "";
    if (asprintf(&hdr_buf, "X-Amz-Date: %s%cAuthorization: %s%cX-Amz-Security-Token: %s", amz_date,
                 0, sig.authorization, 0, tok) < 0) {
        hdr_buf = NULL;
        rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    const char *date_l = hdr_buf;
    const char *auth_l = date_l + strlen(date_l) + 1;
    const char *tok_l = auth_l + strlen(auth_l) + 1;
    const char *hdrs[] = { "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                           "Accept: text/xml", "Expect:", date_l, auth_l, tok_l };
    ddb__cred_http_req req = { .method = "POST", .url = url, .headers = hdrs,
                               .n_headers = src->session_token ? 6 : 5, .body = form };
    rc = sts_call(ctx, what, "AssumeRole", &req, out);
out:
    if (hdr_buf) {
        size_t n = strlen(hdr_buf);
        n += 1 + strlen(hdr_buf + n + 1);
        n += 1 + strlen(hdr_buf + n + 1);
        memset(hdr_buf, 0, n);
        free(hdr_buf);
    }
    dl__sigv4_result_cleanup(&sig);
    free(form);
    free(host);
    free(path);
    free(url);
    return rc;
}
