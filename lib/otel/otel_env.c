/* otel_env.c: the exporter's configuration, from its options and the standard OTEL_*
 * variables with the specification's precedence (option, per-signal variable, general
 * variable, default) and path rules, and W3C traceparent parsing. Pure functions of
 * their inputs (the environment comes through a lookup function) for the unit tests. */
#include "otel_internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ENDPOINT "http://localhost:4318"

void ddb__otel_hex(const uint8_t *p, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[p[i] >> 4];
        out[2 * i + 1] = hx[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* uppercase is not valid in a traceparent */
}

static int anyhexval(char c)
{
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return hexval(c);
}

static bool parse_lower_hex(const char *s, size_t nbytes, uint8_t *out)
{
    for (size_t i = 0; i < nbytes; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

int ddb__otel_parse_traceparent(const char *s, uint8_t trace_id[16], uint8_t span_id[8],
                                uint8_t *flags)
{
    /* 00-<32 hex>-<16 hex>-<2 hex>, exactly 55 characters for version 00. */
    if (!s || strlen(s) != 55)
        return -1;
    if (s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' || s[52] != '-')
        return -1;
    uint8_t t[16], p[8], f;
    if (!parse_lower_hex(s + 3, 16, t) || !parse_lower_hex(s + 36, 8, p) ||
        !parse_lower_hex(s + 53, 1, &f))
        return -1;
    if (all_zero(t, 16) || all_zero(p, 8))
        return -1;
    memcpy(trace_id, t, 16);
    memcpy(span_id, p, 8);
    if (flags)
        *flags = f;
    return 0;
}

void ddb__otel_format_traceparent(const uint8_t trace_id[16], const uint8_t span_id[8],
                                  uint8_t flags, char out[DDB_OTEL_TRACEPARENT_SIZE])
{
    char t[33], p[17], f[3];
    ddb__otel_hex(trace_id, 16, t);
    ddb__otel_hex(span_id, 8, p);
    ddb__otel_hex(&flags, 1, f);
    snprintf(out, DDB_OTEL_TRACEPARENT_SIZE, "00-%s-%s-%s", t, p, f);
}

char *ddb__otel_percent_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < n ? anyhexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? anyhexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                free(out);
                return NULL;
            }
            out[j++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[j++] = s[i];
        }
    }
    out[j] = '\0';
    return out;
}

void ddb__otel_kv_free(ddb__otel_kv *kv, size_t n)
{
    for (size_t i = 0; kv && i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

static void trim(const char **b, const char **e)
{
    while (*b < *e && isspace((unsigned char)**b))
        (*b)++;
    while (*e > *b && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

int ddb__otel_parse_kv_list(const char *s, ddb__otel_kv **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    ddb__otel_kv *kv = NULL;
    size_t cnt = 0;
    const char *p = s;
    while (p && *p) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *b = p, *e = end;
        trim(&b, &e);
        if (b == e) { /* an empty member, e.g. a trailing comma: skipped */
            p = *end ? end + 1 : end;
            continue;
        }
        const char *eq = memchr(b, '=', (size_t)(e - b));
        if (!eq)
            goto bad;
        const char *kb = b, *ke = eq, *vb = eq + 1, *ve = e;
        trim(&kb, &ke);
        trim(&vb, &ve);
        if (kb == ke)
            goto bad;
        for (const char *q = kb; q < ke; q++)
            if (*q <= ' ' || *q == '"' || *q == ';' || *q == '\\' || (unsigned char)*q >= 127)
                goto bad;
        ddb__otel_kv *nk = realloc(kv, (cnt + 1) * sizeof *kv);
        if (!nk) {
            ddb__otel_kv_free(kv, cnt);
            return DDB_ENOMEM;
        }
        kv = nk;
        kv[cnt].key = strndup(kb, (size_t)(ke - kb));
        kv[cnt].value = ddb__otel_percent_decode(vb, (size_t)(ve - vb));
        cnt++;
        if (!kv[cnt - 1].key || !kv[cnt - 1].value)
            goto bad;
        p = *end ? end + 1 : end;
    }
    *out = kv;
    *n = cnt;
    return 0;
bad:
    ddb__otel_kv_free(kv, cnt);
    return DDB_EINVAL;
}

/* ---- configuration */

static const char *env_get(void *arg, const char *name)
{
    (void)arg;
    return getenv(name);
}

typedef struct envr {
    ddb__otel_getenv_fn fn;
    void *arg;
    bool off;
} envr;

static const char *ev(const envr *e, const char *name)
{
    if (e->off)
        return NULL;
    const char *v = e->fn(e->arg, name);
    return v && *v ? v : NULL;
}

static bool valid_url(const char *u)
{
    return (strncmp(u, "http://", 7) == 0 && u[7]) || (strncmp(u, "https://", 8) == 0 && u[8]);
}

/* url for an error message, its user info (a user name and password before an '@' in
 * the authority) replaced by "***", as curl and the SDKs keep passwords out of logs. */
static void redacted(const char *url, char *buf, size_t n)
{
    const char *sep = strstr(url, "://");
    const char *auth = sep ? sep + 3 : url;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < auth + alen; p++)
        if (*p == '@')
            at = p;
    if (at)
        snprintf(buf, n, "%.*s***%.*s", (int)(auth - url), url, 200, at);
    else
        snprintf(buf, n, "%.240s", url);
}

/* The base endpoint with the signal's path: "v1/traces" after a '/'. */
static char *signal_url(const char *base, const char *path)
{
    size_t n = strlen(base);
    bool slash = n && base[n - 1] == '/';
    size_t len = n + strlen(path) + 2;
    char *u = malloc(len);
    if (u)
        snprintf(u, len, "%s%s%s", base, slash ? "" : "/", path);
    return u;
}

/* A number of ms from a variable: a non-negative integer, else ignored (the default). */
static int64_t env_ms(const envr *e, const char *name, int64_t dflt)
{
    const char *v = ev(e, name);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    while (*end == ' ')
        end++;
    if (errno || *end || x < 0)
        return dflt;
    return (int64_t)x;
}

static int resolve_url(const char *opt_signal, const char *opt_base, const envr *e,
                       const char *env_signal, const char *path, char **out, ddb_error *err)
{
    const char *v;
    char *u;
    if (opt_signal) {
        v = opt_signal;
        u = strdup(v);
    } else if (!opt_base && (v = ev(e, env_signal))) {
        u = strdup(v);
    } else {
        v = opt_base ? opt_base : ev(e, "OTEL_EXPORTER_OTLP_ENDPOINT");
        if (!v)
            v = DEFAULT_ENDPOINT;
        u = signal_url(v, path);
    }
    if (!u)
        return ddb_error_set(err, DDB_ENOMEM, NULL);
    if (!valid_url(u)) {
        char shown[300];
        redacted(v, shown, sizeof shown);
        ddb_error_set(err, DDB_EINVAL, "The OTLP endpoint \"%s\" is not an http:// or https:// URL.",
                      shown);
        free(u);
        return DDB_EINVAL;
    }
    *out = u;
    return 0;
}

static int resolve_headers(const char *opt, const envr *e, const char *env_signal,
                           ddb__otel_kv **out, size_t *n, ddb_error *err)
{
    const char *v = opt ? opt : ev(e, env_signal);
    const char *from = opt ? "the headers option" : env_signal;
    if (!v) {
        v = ev(e, "OTEL_EXPORTER_OTLP_HEADERS");
        from = "OTEL_EXPORTER_OTLP_HEADERS";
    }
    if (!v)
        return 0;
    int rc = ddb__otel_parse_kv_list(v, out, n);
    if (rc == DDB_EINVAL)
        return ddb_error_set(err, rc, "%s is not a list of name=value pairs.", from);
    if (rc)
        return ddb_error_set(err, rc, NULL);
    for (size_t i = 0; i < *n; i++)
        for (const char *q = (*out)[i].value; *q; q++)
            if (*q == '\r' || *q == '\n') {
                ddb__otel_kv_free(*out, *n);
                *out = NULL;
                *n = 0;
                return ddb_error_set(err, DDB_EINVAL, "%s has a header value with a line break.", from);
            }
    return 0;
}

static int add_kv(ddb__otel_config *c, const char *k, const char *v)
{
    ddb__otel_kv *nk = realloc(c->resource, (c->n_resource + 1) * sizeof *nk);
    if (!nk)
        return DDB_ENOMEM;
    c->resource = nk;
    nk[c->n_resource].key = strdup(k);
    nk[c->n_resource].value = strdup(v);
    c->n_resource++;
    if (!nk[c->n_resource - 1].key || !nk[c->n_resource - 1].value)
        return DDB_ENOMEM;
    return 0;
}

int ddb__otel_config_resolve(const ddb_otel_options *opt, ddb__otel_getenv_fn getenv_fn,
                             void *getenv_arg, ddb__otel_config *c, ddb_error *err)
{
    static const ddb_otel_options zero;
    if (!opt)
        opt = &zero;
    memset(c, 0, sizeof *c);
    envr e = { getenv_fn ? getenv_fn : env_get, getenv_arg, opt->ignore_environment };
    if (opt->timeout_ms < 0 || opt->max_queue_size < 0 || opt->max_export_batch_size < 0 ||
        opt->schedule_delay_ms < 0 || opt->metric_export_interval_ms < 0 ||
        opt->shutdown_timeout_ms < 0 || opt->max_attempts < 0 || opt->retry_base_ms < 0)
        return ddb_error_set(err, DDB_EINVAL, "An exporter option is negative.");
    int rc;
    if ((rc = resolve_url(opt->traces_endpoint, opt->endpoint, &e,
                          "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "v1/traces", &c->traces_url, err)) ||
        (rc = resolve_url(opt->metrics_endpoint, opt->endpoint, &e,
                          "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "v1/metrics", &c->metrics_url, err)) ||
        (rc = resolve_headers(opt->headers, &e, "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                              &c->trace_headers, &c->n_trace_headers, err)) ||
        (rc = resolve_headers(opt->headers, &e, "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
                              &c->metric_headers, &c->n_metric_headers, err)))
        goto fail;

    int64_t t = env_ms(&e, "OTEL_EXPORTER_OTLP_TIMEOUT", 10000);
    c->traces_timeout_ms = opt->timeout_ms ? opt->timeout_ms
                                           : env_ms(&e, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", t);
    c->metrics_timeout_ms = opt->timeout_ms ? opt->timeout_ms
                                            : env_ms(&e, "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", t);
    if (c->traces_timeout_ms == 0)
        c->traces_timeout_ms = 10000;
    if (c->metrics_timeout_ms == 0)
        c->metrics_timeout_ms = 10000;
    c->max_queue = opt->max_queue_size ? opt->max_queue_size
                                       : (int)env_ms(&e, "OTEL_BSP_MAX_QUEUE_SIZE", 2048);
    c->batch = opt->max_export_batch_size ? opt->max_export_batch_size
                                          : (int)env_ms(&e, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512);
    if (c->max_queue <= 0 || c->max_queue > 1 << 24)
        c->max_queue = 2048;
    if (c->batch <= 0 || c->batch > c->max_queue)
        c->batch = c->max_queue < 512 ? c->max_queue : 512;
    c->delay_ms = opt->schedule_delay_ms ? opt->schedule_delay_ms
                                         : env_ms(&e, "OTEL_BSP_SCHEDULE_DELAY", 5000);
    if (c->delay_ms <= 0)
        c->delay_ms = 5000;
    c->metric_interval_ms = opt->metric_export_interval_ms
                                ? opt->metric_export_interval_ms
                                : env_ms(&e, "OTEL_METRIC_EXPORT_INTERVAL", 60000);
    if (c->metric_interval_ms <= 0)
        c->metric_interval_ms = 60000;
    c->shutdown_ms = opt->shutdown_timeout_ms ? opt->shutdown_timeout_ms : 5000;
    c->max_attempts = opt->max_attempts ? opt->max_attempts : 5;
    c->retry_base_ms = opt->retry_base_ms ? opt->retry_base_ms : 1000;

    /* Resource: service.name from the option, OTEL_SERVICE_NAME, the list, or the default;
     * then the list's other attributes, then the SDK's. */
    ddb__otel_kv *ra = NULL;
    size_t nra = 0;
    const char *ras = opt->resource_attributes ? opt->resource_attributes
                                               : ev(&e, "OTEL_RESOURCE_ATTRIBUTES");
    if (ras && ddb__otel_parse_kv_list(ras, &ra, &nra) != 0) {
        ra = NULL; /* malformed: discarded as a whole */
        nra = 0;
    }
    const char *svc = opt->service_name ? opt->service_name : ev(&e, "OTEL_SERVICE_NAME");
    for (size_t i = 0; !svc && i < nra; i++)
        if (strcmp(ra[i].key, "service.name") == 0)
            svc = ra[i].value;
    rc = add_kv(c, "service.name", svc ? svc : "unknown_service");
    for (size_t i = 0; !rc && i < nra; i++) {
        bool dup = strcmp(ra[i].key, "service.name") == 0;
        for (size_t j = i + 1; !dup && j < nra; j++)
            dup = strcmp(ra[i].key, ra[j].key) == 0; /* the last one wins */
        if (!dup)
            rc = add_kv(c, ra[i].key, ra[i].value);
    }
    ddb__otel_kv_free(ra, nra);
    if (!rc)
        rc = add_kv(c, "telemetry.sdk.name", "dynalock");
    if (!rc)
        rc = add_kv(c, "telemetry.sdk.language", "c");
    if (!rc)
        rc = add_kv(c, "telemetry.sdk.version", ddb_version());
    if (rc) {
        ddb_error_set(err, rc, NULL);
        goto fail;
    }
    return 0;
fail:
    ddb__otel_config_cleanup(c);
    return rc;
}

void ddb__otel_config_cleanup(ddb__otel_config *c)
{
    free(c->traces_url);
    free(c->metrics_url);
    ddb__otel_kv_free(c->trace_headers, c->n_trace_headers);
    ddb__otel_kv_free(c->metric_headers, c->n_metric_headers);
    ddb__otel_kv_free(c->resource, c->n_resource);
    memset(c, 0, sizeof *c);
}
