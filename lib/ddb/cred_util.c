/* cred_util.c: what the credential providers share: one HTTP request through http.c's
 * ddb__http_send (no proxy and short timeouts for metadata endpoints, the CA bundle for
 * STS and SSO, a cap on the answer, the cancel token's eventfd),
 * ISO 8601 times, the few XML elements of an STS answer, form encoding, small files. */
#include "internal.h"
#include "buf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dynalock/version.h>

/* A provider's answers are small documents: a larger one is refused, not read. */
#define CRED_HTTP_MAX_ANSWER (64 * 1024)
/* Header lines a provider's request carries at most (besides the User-Agent). */
#define CRED_HTTP_MAX_HEADER_LINES 8
/* A link-local or loopback metadata endpoint answers at once or not at all. */
#define CRED_METADATA_CONNECT_TIMEOUT_MS 1000
#define CRED_METADATA_TIMEOUT_MS 2000
/* STS and SSO, over the internet. */
#define CRED_HTTP_CONNECT_TIMEOUT_MS 3000
#define CRED_HTTP_TIMEOUT_MS 10000

bool ddb__creds_set(ddb__credentials *out, const char *akid, const char *secret,
                    const char *token, int64_t expires_wall_ms)
{
    memset(out, 0, sizeof *out);
    out->access_key_id = strdup(akid);
    out->secret_access_key = strdup(secret);
    out->session_token = token && *token ? strdup(token) : NULL;
    out->expires_wall_ms = expires_wall_ms;
    if (!out->access_key_id || !out->secret_access_key || (token && *token && !out->session_token)) {
        ddb__credentials_cleanup(out);
        return false;
    }
    return true;
}

long ddb__cred_http(const ddb__cred_ctx *ctx, const ddb__cred_http_req *r, char **body,
                    char *transport_err, size_t n)
{
    *body = NULL;
    if (transport_err && n)
        transport_err[0] = '\0';
    /* The provider's header lines and ours, on the stack: a provider sends a few. */
    const char *lines[CRED_HTTP_MAX_HEADER_LINES + 1];
    if (r->n_headers > CRED_HTTP_MAX_HEADER_LINES) {
        snprintf(transport_err, n, "%zu header lines, more than the %d a provider sends",
                 r->n_headers, CRED_HTTP_MAX_HEADER_LINES);
        return 0;
    }
    for (size_t i = 0; i < r->n_headers; i++)
        lines[i] = r->headers[i];
    lines[r->n_headers] = "User-Agent: dynalock/" DDB_VERSION_STRING;
    ddb__http_request req = {
        .method = r->method,
        .url = r->url,
        .headers = lines,
        .n_headers = r->n_headers + 1,
        .body = r->body,
        .body_len = r->body ? strlen(r->body) : 0,
        .connect_timeout_ms = r->metadata ? CRED_METADATA_CONNECT_TIMEOUT_MS
                                          : CRED_HTTP_CONNECT_TIMEOUT_MS,
        .timeout_ms = r->metadata ? CRED_METADATA_TIMEOUT_MS : CRED_HTTP_TIMEOUT_MS,
        .max_answer = CRED_HTTP_MAX_ANSWER,
        /* metadata never goes through a proxy, and needs no CA bundle */
        .no_proxy = r->metadata,
        .ca_bundle = !r->metadata && ctx ? ctx->ca_bundle : NULL,
        .resolve = r->resolve,
    };
    ddb__http_answer a;
    ddb_error err;
    ddb_error_clear(&err);
    if (ddb__http_send(NULL, &req, ctx ? ctx->cancel : NULL, &a, &err) != 0) {
        snprintf(transport_err, n, "%s", err.message);
        return 0;
    }
    *body = a.body;
    a.body = NULL;
    long status = a.status;
    ddb__http_answer_cleanup(&a);
    return status;
}

int64_t ddb__parse_iso8601_ms(const char *s)
{
    struct tm tm = { 0 };
    int consumed = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
        return 0;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    int64_t t = (int64_t)timegm(&tm);
    const char *p = s + consumed;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    if (*p == '+' || *p == '-') {
        int oh = 0, om = 0;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) >= 1)
            t -= (*p == '+' ? 1 : -1) * (int64_t)(oh * 3600 + om * 60);
    } else if (*p != 'Z' && *p != 'z' && *p != '\0') {
        return 0;
    }
    return t * 1000;
}

/* The start of the content of the first <tag> or <tag attr...> at or after p, *end at
 * its closing tag; NULL when none. */
static const char *find_element(const char *p, const char *end_limit, const char *tag,
                                const char **end)
{
    size_t tl = strlen(tag);
    for (;;) {
        const char *lt = strchr(p, '<');
        if (!lt || (end_limit && lt >= end_limit))
            return NULL;
        if (strncmp(lt + 1, tag, tl) == 0 && (lt[1 + tl] == '>' || isspace((unsigned char)lt[1 + tl]))) {
            const char *gt = strchr(lt, '>');
            if (!gt)
                return NULL;
            const char *content = gt + 1;
            char close[80];
            snprintf(close, sizeof close, "</%s>", tag);
            const char *c = strstr(content, close);
            if (!c || (end_limit && c > end_limit))
                return NULL;
            *end = c;
            return content;
        }
        p = lt + 1;
    }
}

char *ddb__xml_text(const char *doc, const char *within, const char *tag)
{
    if (!doc)
        return NULL;
    const char *wend = NULL, *start = doc;
    if (within) {
        start = find_element(doc, NULL, within, &wend);
        if (!start)
            return NULL;
    }
    const char *tend;
    const char *t = find_element(start, wend, tag, &tend);
    if (!t)
        return NULL;
    size_t n = (size_t)(tend - t);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    static const struct { const char *ent; char c; } ents[] = {
        { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
    };
    for (size_t i = 0; i < n;) {
        if (t[i] == '&') {
            bool done = false;
            for (size_t e = 0; e < sizeof ents / sizeof ents[0] && !done; e++) {
                size_t el = strlen(ents[e].ent);
                if (i + el <= n && strncmp(t + i, ents[e].ent, el) == 0) {
                    out[o++] = ents[e].c;
                    i += el;
                    done = true;
                }
            }
            if (done)
                continue;
        }
        if (t[i] == '<') { /* an element inside: not a text value */
            free(out);
            return NULL;
        }
        out[o++] = t[i++];
    }
    out[o] = '\0';
    /* trim */
    size_t s = 0;
    while (isspace((unsigned char)out[s]))
        s++;
    while (o > s && isspace((unsigned char)out[o - 1]))
        out[--o] = '\0';
    if (s)
        memmove(out, out + s, o - s + 1);
    return out;
}

bool ddb__form_add(char **buf, const char *key, const char *value)
{
    size_t have = *buf ? strlen(*buf) : 0;
    size_t need = have + 1 + strlen(key) + 1 + 3 * strlen(value) + 1;
    char *nb = realloc(*buf, need);
    if (!nb)
        return false;
    *buf = nb;
    char *p = nb + have;
    if (have)
        *p++ = '&';
    p += sprintf(p, "%s=", key);
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *v = (const unsigned char *)value; *v; v++) {
        if (isalnum(*v) || *v == '-' || *v == '_' || *v == '.' || *v == '~') {
            *p++ = (char)*v;
        } else {
            *p++ = '%';
            *p++ = hex[*v >> 4];
            *p++ = hex[*v & 15];
        }
    }
    *p = '\0';
    return true;
}

char *ddb__read_small_file(const char *path, size_t max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = malloc(max + 1);
    if (!buf) {
        fclose(f);
        errno = ENOMEM;
        return NULL;
    }
    size_t n = fread(buf, 1, max, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    if (more) {
        free(buf);
        errno = EFBIG;
        return NULL;
    }
    buf[n] = '\0';
    size_t s = 0;
    while (isspace((unsigned char)buf[s]))
        s++;
    while (n > s && isspace((unsigned char)buf[n - 1]))
        buf[--n] = '\0';
    memmove(buf, buf + s, n - s + 1);
    return buf;
}
