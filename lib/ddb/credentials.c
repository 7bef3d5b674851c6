/* credentials.c: the standard AWS credentials chain (explicit, environment, shared
 * files with a profile, container endpoint, IMDSv2), resolved lazily, cached, and
 * refreshed before credentials that expire do so. One refresh at a time per provider. */
#include "internal.h"

#include <ctype.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define REFRESH_BEFORE_MS (5 * 60 * 1000)
#define HTTP_CONNECT_TIMEOUT_MS 1000
#define HTTP_TIMEOUT_MS 2000
#define HTTP_MAX_BODY (64 * 1024)
#define IMDS_TOKEN_TTL_S "21600"

struct ddb__cred_provider {
    pthread_mutex_t mu; /* guards everything below; held during a refresh */
    ddb_clock *clock;
    char *explicit_akid, *explicit_secret, *explicit_token;
    char *profile;       /* NULL: AWS_PROFILE or "default", read at resolution */
    char *imds_endpoint; /* NULL: AWS_EC2_METADATA_SERVICE_ENDPOINT or the default */
    bool imds_disabled;
    bool have;
    ddb__credentials cur;
    const char *source;
};

static char *g_container_base; /* tests only */

void ddb__cred_set_container_base(const char *base_url)
{
    free(g_container_base);
    g_container_base = base_url ? strdup(base_url) : NULL;
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void ddb__credentials_cleanup(ddb__credentials *c)
{
    if (!c)
        return;
    free(c->access_key_id);
    if (c->secret_access_key) {
        memset(c->secret_access_key, 0, strlen(c->secret_access_key));
        free(c->secret_access_key);
    }
    free(c->session_token);
    memset(c, 0, sizeof *c);
}

/* Fills out with copies; false when out of memory (out then cleaned). */
static bool creds_set(ddb__credentials *out, const char *akid, const char *secret,
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

ddb__cred_provider *ddb__cred_provider_new(const ddb_client_options *opts, ddb_clock *clock,
                                           ddb_error *err)
{
    ddb_client_options none = { 0 };
    if (!opts)
        opts = &none;
    bool some = opts->access_key_id || opts->secret_access_key;
    if (some && (!opts->access_key_id || !opts->secret_access_key ||
                 !*opts->access_key_id || !*opts->secret_access_key)) {
        ddb__fail(err, DDB_EINVAL, "explicit credentials need both an access key id and a "
                                   "secret access key");
        return NULL;
    }
    ddb__cred_provider *p = calloc(1, sizeof *p);
    if (!p) {
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->clock = ddb_clock_ref(clock ? clock : ddb_clock_system());
    p->source = "";
    p->imds_disabled = opts->imds_disabled;
    bool oom = false;
    if (some) {
        p->explicit_akid = strdup(opts->access_key_id);
        p->explicit_secret = strdup(opts->secret_access_key);
        oom = !p->explicit_akid || !p->explicit_secret;
        if (opts->session_token && *opts->session_token) {
            p->explicit_token = strdup(opts->session_token);
            oom = oom || !p->explicit_token;
        }
    }
    if (opts->profile) {
        p->profile = strdup(opts->profile);
        oom = oom || !p->profile;
    }
    if (opts->imds_endpoint) {
        p->imds_endpoint = strdup(opts->imds_endpoint);
        oom = oom || !p->imds_endpoint;
    }
    if (oom) {
        ddb__cred_provider_free(p);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    return p;
}

void ddb__cred_provider_free(ddb__cred_provider *p)
{
    if (!p)
        return;
    ddb__credentials_cleanup(&p->cur);
    free(p->explicit_akid);
    if (p->explicit_secret) {
        memset(p->explicit_secret, 0, strlen(p->explicit_secret));
        free(p->explicit_secret);
    }
    free(p->explicit_token);
    free(p->profile);
    free(p->imds_endpoint);
    ddb_clock_unref(p->clock);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

const char *ddb__cred_source(ddb__cred_provider *p)
{
    pthread_mutex_lock(&p->mu);
    const char *s = p->source;
    pthread_mutex_unlock(&p->mu);
    return s;
}

/* ---- shared files */

typedef struct profile_vals {
    char *akid, *secret, *token, *region;
} profile_vals;

static void profile_vals_free(profile_vals *v)
{
    free(v->akid);
    if (v->secret) {
        memset(v->secret, 0, strlen(v->secret));
        free(v->secret);
    }
    free(v->token);
    free(v->region);
    memset(v, 0, sizeof *v);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* A path from an environment variable (with "~/" expanded) or $HOME/.aws/<name>. */
static char *aws_file_path(const char *env, const char *name)
{
    const char *v = env_nonempty(env);
    const char *home = getenv("HOME");
    char *out = NULL;
    if (v) {
        if (v[0] == '~' && v[1] == '/' && home) {
            if (asprintf(&out, "%s%s", home, v + 1) < 0)
                out = NULL;
        } else {
            out = strdup(v);
        }
        return out;
    }
    if (!home)
        return NULL;
    if (asprintf(&out, "%s/.aws/%s", home, name) < 0)
        return NULL;
    return out;
}

/* Reads the keys of section `profile` from an INI file. In the config file a profile is
 * "[profile name]" ("[default]" for the default, "[profile default]" also accepted); in
 * the credentials file it is "[name]". Values already set in v are kept. */
static void read_profile(const char *path, const char *profile, bool config_file,
                         profile_vals *v)
{
    if (!path)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    bool in = false;
    while (getline(&line, &cap, f) >= 0) {
        char *s = trim(line);
        if (*s == '#' || *s == ';' || *s == '\0')
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (!end) {
                in = false;
                continue;
            }
            *end = '\0';
            char *name = trim(s + 1);
            if (config_file) {
                if (strncmp(name, "profile", 7) == 0 && isspace((unsigned char)name[7]))
                    in = strcmp(trim(name + 8), profile) == 0;
                else
                    in = strcmp(profile, "default") == 0 && strcmp(name, "default") == 0;
            } else {
                in = strcmp(name, profile) == 0;
            }
            continue;
        }
        if (!in)
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char *key = trim(s);
        char *val = trim(eq + 1);
        char **slot = NULL;
        if (strcasecmp(key, "aws_access_key_id") == 0)
            slot = &v->akid;
        else if (strcasecmp(key, "aws_secret_access_key") == 0)
            slot = &v->secret;
        else if (strcasecmp(key, "aws_session_token") == 0)
            slot = &v->token;
        else if (strcasecmp(key, "region") == 0)
            slot = &v->region;
        if (slot && !*slot && *val)
            *slot = strdup(val);
    }
    free(line);
    fclose(f);
}

static const char *profile_name(const char *explicit_profile)
{
    if (explicit_profile && *explicit_profile)
        return explicit_profile;
    const char *e = env_nonempty("AWS_PROFILE");
    return e ? e : "default";
}

static void read_shared(const char *profile, profile_vals *v)
{
    char *cred_path = aws_file_path("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    char *conf_path = aws_file_path("AWS_CONFIG_FILE", "config");
    read_profile(cred_path, profile, false, v); /* the credentials file wins */
    read_profile(conf_path, profile, true, v);
    free(cred_path);
    free(conf_path);
}

char *ddb__profile_region(const char *profile)
{
    profile_vals v = { 0 };
    char *conf_path = aws_file_path("AWS_CONFIG_FILE", "config");
    read_profile(conf_path, profile_name(profile), true, &v);
    free(conf_path);
    char *region = v.region;
    v.region = NULL;
    profile_vals_free(&v);
    return region;
}

/* ---- HTTP (container endpoint and IMDS) */

typedef struct http_body {
    char *p;
    size_t len;
    bool too_big;
} http_body;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    http_body *b = arg;
    size_t n = size * nmemb;
    if (b->len + n > HTTP_MAX_BODY) {
        b->too_big = true;
        return 0;
    }
    char *np = realloc(b->p, b->len + n + 1);
    if (!np)
        return 0;
    b->p = np;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return n;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    return ddb_cancel_is_set(arg) ? 1 : 0;
}

/* One request. Returns the HTTP status (0 on a transport failure or a cancel) and the
 * body in *body (malloc'd, caller frees; may be NULL). */
static long http_call(const char *method, const char *url, const char *const *headers,
                      size_t n_headers, ddb_cancel *cancel, char **body)
{
    *body = NULL;
    CURL *h = curl_easy_init();
    if (!h)
        return 0;
    struct curl_slist *hl = NULL;
    for (size_t i = 0; i < n_headers; i++) {
        struct curl_slist *n = curl_slist_append(hl, headers[i]);
        if (!n) {
            curl_slist_free_all(hl);
            curl_easy_cleanup(h);
            return 0;
        }
        hl = n;
    }
    http_body b = { 0 };
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)HTTP_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)HTTP_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    if (cancel) {
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, cancel);
    }
    long status = 0;
    if (curl_easy_perform(h) == CURLE_OK && !b.too_big)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    if (status == 0) {
        free(b.p);
        return 0;
    }
    *body = b.p;
    return status;
}

/* "2024-01-02T03:04:05Z", with optional fraction and offset. 0 when unparsable. */
static int64_t parse_iso8601_ms(const char *s)
{
    struct tm tm = { 0 };
    int consumed = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
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
    }
    return t * 1000;
}

/* Parses {"AccessKeyId","SecretAccessKey","Token","Expiration"} (container and IMDS). */
static bool parse_cred_json(const char *body, ddb__credentials *out)
{
    if (!body)
        return false;
    json_object *o = json_tokener_parse(body);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return false;
    }
    json_object *a = NULL, *s = NULL, *t = NULL, *e = NULL, *code = NULL;
    json_object_object_get_ex(o, "AccessKeyId", &a);
    json_object_object_get_ex(o, "SecretAccessKey", &s);
    json_object_object_get_ex(o, "Token", &t);
    json_object_object_get_ex(o, "Expiration", &e);
    json_object_object_get_ex(o, "Code", &code);
    bool ok = a && s && json_object_is_type(a, json_type_string) &&
              json_object_is_type(s, json_type_string) && json_object_get_string_len(a) > 0 &&
              json_object_get_string_len(s) > 0;
    if (code && json_object_is_type(code, json_type_string) &&
        strcmp(json_object_get_string(code), "Success") != 0)
        ok = false;
    if (ok) {
        const char *tok = t && json_object_is_type(t, json_type_string)
                              ? json_object_get_string(t) : NULL;
        int64_t exp = e && json_object_is_type(e, json_type_string)
                          ? parse_iso8601_ms(json_object_get_string(e)) : 0;
        ok = creds_set(out, json_object_get_string(a), json_object_get_string(s), tok, exp);
    }
    json_object_put(o);
    return ok;
}

/* The container endpoint may be plain http only on a loopback or the ECS/EKS hosts. */
static bool container_url_allowed(const char *url)
{
    if (strncasecmp(url, "https://", 8) == 0)
        return true;
    if (strncasecmp(url, "http://", 7) != 0)
        return false;
    const char *host = url + 7;
    static const char *const ok[] = { "127.", "localhost", "[::1]", "169.254.170.2",
                                      "169.254.170.23", "[fd00:ec2::23]" };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t n = strlen(ok[i]);
        if (strncasecmp(host, ok[i], n) == 0) {
            char next = host[n];
            if (ok[i][n - 1] == '.' || next == '\0' || next == ':' || next == '/')
                return true;
        }
    }
    return false;
}

static int from_container(ddb_cancel *cancel, ddb__credentials *out, bool *tried)
{
    const char *rel = env_nonempty("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = env_nonempty("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    *tried = rel || full;
    if (!*tried)
        return DDB_ECREDENTIALS;
    char *url = NULL;
    if (rel) {
        const char *base = g_container_base ? g_container_base : "http://169.254.170.2";
        if (asprintf(&url, "%s%s%s", base, rel[0] == '/' ? "" : "/", rel) < 0)
            return DDB_ENOMEM;
    } else {
        if (!container_url_allowed(full))
            return DDB_ECREDENTIALS;
        url = strdup(full);
        if (!url)
            return DDB_ENOMEM;
    }
    char *token = NULL;
    const char *token_file = env_nonempty("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (token_file) {
        FILE *f = fopen(token_file, "r");
        if (f) {
            char buf[4096];
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            token = strdup(trim(buf));
        }
    } else if (env_nonempty("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
        token = strdup(env_nonempty("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
    }
    char *auth_hdr = NULL;
    const char *hdrs[2] = { "Accept: application/json", NULL };
    size_t nh = 1;
    if (token && strpbrk(token, "\r\n") == NULL) {
        if (asprintf(&auth_hdr, "Authorization: %s", token) >= 0)
            hdrs[nh++] = auth_hdr;
    }
    char *body = NULL;
    long status = http_call("GET", url, hdrs, nh, cancel, &body);
    int rc = DDB_ECREDENTIALS;
    if (status == 200 && parse_cred_json(body, out))
        rc = 0;
    free(body);
    free(auth_hdr);
    free(token);
    free(url);
    return rc;
}

static int from_imds(const char *endpoint, ddb_cancel *cancel, ddb__credentials *out)
{
    char base[512];
    snprintf(base, sizeof base, "%s", endpoint);
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        base[--bl] = '\0';
    char url[1024];
    char *token = NULL, *body = NULL;
    int rc = DDB_ECREDENTIALS;

    snprintf(url, sizeof url, "%s/latest/api/token", base);
    const char *put_hdrs[] = { "X-aws-ec2-metadata-token-ttl-seconds: " IMDS_TOKEN_TTL_S };
    if (http_call("PUT", url, put_hdrs, 1, cancel, &token) != 200 || !token)
        goto out;
    char *tk = trim(token);
    if (!*tk || strpbrk(tk, "\r\n"))
        goto out;
    char tok_hdr[1024];
    if (snprintf(tok_hdr, sizeof tok_hdr, "X-aws-ec2-metadata-token: %s", tk) >= (int)sizeof tok_hdr)
        goto out;
    const char *get_hdrs[] = { tok_hdr };

    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/", base);
    if (http_call("GET", url, get_hdrs, 1, cancel, &body) != 200 || !body)
        goto out;
    char *role = trim(body);
    role[strcspn(role, "\r\n")] = '\0';
    if (!*role || strchr(role, '/') || strlen(role) > 256)
        goto out;
    char role_copy[257];
    snprintf(role_copy, sizeof role_copy, "%s", role);
    free(body);
    body = NULL;

    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%s", base, role_copy);
    if (http_call("GET", url, get_hdrs, 1, cancel, &body) != 200)
        goto out;
    if (parse_cred_json(body, out))
        rc = 0;
out:
    free(token);
    free(body);
    return rc;
}

static bool imds_disabled_by_env(void)
{
    const char *v = getenv("AWS_EC2_METADATA_DISABLED");
    return v && strcasecmp(v, "true") == 0;
}

/* Walks the chain; fills out and the source. Called with p->mu held. */
static int resolve(ddb__cred_provider *p, ddb_cancel *cancel, ddb__credentials *out,
                   const char **source)
{
    if (p->explicit_akid) {
        *source = "explicit";
        return creds_set(out, p->explicit_akid, p->explicit_secret, p->explicit_token, 0)
                   ? 0 : DDB_ENOMEM;
    }
    const char *ak = env_nonempty("AWS_ACCESS_KEY_ID");
    const char *sk = env_nonempty("AWS_SECRET_ACCESS_KEY");
    if (ak && sk) {
        *source = "environment";
        return creds_set(out, ak, sk, env_nonempty("AWS_SESSION_TOKEN"), 0) ? 0 : DDB_ENOMEM;
    }
    profile_vals v = { 0 };
    read_shared(profile_name(p->profile), &v);
    if (v.akid && v.secret) {
        *source = "shared-files";
        int rc = creds_set(out, v.akid, v.secret, v.token, 0) ? 0 : DDB_ENOMEM;
        profile_vals_free(&v);
        return rc;
    }
    profile_vals_free(&v);
    if (ddb_cancel_is_set(cancel))
        return DDB_ECANCELED;
    bool tried = false;
    int rc = from_container(cancel, out, &tried);
    if (tried) {
        if (rc == 0)
            *source = "container";
        return rc; /* a configured container endpoint is the last word, as in the SDKs */
    }
    if (ddb_cancel_is_set(cancel))
        return DDB_ECANCELED;
    if (!p->imds_disabled && !imds_disabled_by_env()) {
        const char *ep = p->imds_endpoint ? p->imds_endpoint
                                          : env_nonempty("AWS_EC2_METADATA_SERVICE_ENDPOINT");
        rc = from_imds(ep ? ep : "http://169.254.169.254", cancel, out);
        if (rc == 0) {
            *source = "imds";
            return 0;
        }
    }
    return ddb_cancel_is_set(cancel) ? DDB_ECANCELED : DDB_ECREDENTIALS;
}

static bool fresh(const ddb__credentials *c, int64_t now_wall_ms)
{
    return c->expires_wall_ms == 0 || now_wall_ms < c->expires_wall_ms - REFRESH_BEFORE_MS;
}

int ddb__cred_get(ddb__cred_provider *p, ddb__credentials *out, ddb_cancel *cancel,
                  ddb_error *err)
{
    if (!p || !out)
        return ddb__fail(err, DDB_EINVAL, "no credentials provider");
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&p->mu);
    int64_t now = ddb_clock_wall_ms(p->clock);
    if (!p->have || !fresh(&p->cur, now)) {
        ddb__credentials got = { 0 };
        const char *source = "";
        int rc = resolve(p, cancel, &got, &source);
        if (rc == 0) {
            ddb__credentials_cleanup(&p->cur);
            p->cur = got;
            p->have = true;
            p->source = source;
        } else if (!p->have || now >= p->cur.expires_wall_ms) {
            /* Nothing usable: no credentials yet, or the old ones have expired. */
            pthread_mutex_unlock(&p->mu);
            if (rc == DDB_ECANCELED)
                return ddb__fail(err, rc, "cancelled while fetching credentials");
            if (rc == DDB_ENOMEM)
                return ddb__fail(err, rc, "out of memory");
            return ddb__fail(err, DDB_ECREDENTIALS,
                             "no AWS credentials were found (explicit, environment, shared "
                             "files for profile '%s', container endpoint, instance metadata)",
                             profile_name(p->profile));
        }
        /* else: refresh failed, the old credentials are still valid for a while. */
    }
    bool ok = creds_set(out, p->cur.access_key_id, p->cur.secret_access_key,
                        p->cur.session_token, p->cur.expires_wall_ms);
    pthread_mutex_unlock(&p->mu);
    return ok ? 0 : ddb__fail(err, DDB_ENOMEM, "out of memory");
}
