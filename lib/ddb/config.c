/* config.c: the shared AWS config and credentials files (~/.aws/config, ~/.aws/credentials)
 * read as the SDKs read them, and the settings resolved from them and the environment:
 * profile, region (validated), endpoints (service-specific, FIPS, dual-stack, the
 * partition's domain), CA bundle, max attempts. Used by client.c and the credentials. */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The most attempts a max_attempts setting may ask for; more is ignored (the default
 * stands). */
#define CONFIG_MAX_ATTEMPTS_LIMIT 100
/* A config or credentials file larger than this is not read (AWS_CONFIG_FILE=/dev/zero
 * would otherwise be read until memory runs out); the largest real ones are a few
 * hundred kilobytes. */
#define CONFIG_FILE_MAX (4 * 1024 * 1024)

typedef struct kv {
    char *key; /* "region", or "dynamodb.endpoint_url" for a nested value */
    char *val;
} kv;

typedef struct section {
    int kind;  /* DDB__SEC_* */
    char *name;
    kv *kvs;
    size_t n, cap;
} section;

struct ddb__config {
    section *secs;
    size_t n, cap;
    bool oom;
    char problem[300]; /* a file that could not be read, or "" */
};

const char *ddb__env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

bool ddb__truthy(const char *v)
{
    return v && strcasecmp(v, "true") == 0;
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

char *ddb__aws_file_path(const char *env, const char *name)
{
    const char *v = ddb__env(env);
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

static section *add_section(ddb__config *c, int kind, const char *name)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        section *ns = realloc(c->secs, cap * sizeof *ns);
        if (!ns) {
            c->oom = true;
            return NULL;
        }
        c->secs = ns;
        c->cap = cap;
    }
    section *s = &c->secs[c->n];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->name = strdup(name);
    if (!s->name) {
        c->oom = true;
        return NULL;
    }
    c->n++;
    return s;
}

static void add_kv(ddb__config *c, section *s, const char *key, const char *val)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        kv *nk = realloc(s->kvs, cap * sizeof *nk);
        if (!nk) {
            c->oom = true;
            return;
        }
        s->kvs = nk;
        s->cap = cap;
    }
    kv *e = &s->kvs[s->n];
    e->key = strdup(key);
    e->val = strdup(val);
    if (!e->key || !e->val) {
        free(e->key);
        free(e->val);
        c->oom = true;
        return;
    }
    s->n++;
}

/* Reads one INI file. In the config file "[default]" and "[profile NAME]" are profiles,
 * "[sso-session NAME]" and "[services NAME]" their own kinds; in the credentials file
 * every "[NAME]" is a profile. An indented "key = value" under a key with an empty value
 * is stored as "parent.key". A missing file is no error. */
static void read_file(ddb__config *c, const char *path, bool config_file)
{
    if (!path)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    /* Read whole, in a buffer that grows to the cap. */
    char *text = NULL;
    size_t len = 0, cap = 0;
    bool more = false;
    for (;;) {
        if (len == cap) {
            if (cap == CONFIG_FILE_MAX) {
                more = fgetc(f) != EOF;
                break;
            }
            size_t ncap = cap ? cap * 4 : 16 * 1024;
            if (ncap > CONFIG_FILE_MAX)
                ncap = CONFIG_FILE_MAX;
            char *nt = realloc(text, ncap + 1);
            if (!nt) {
                free(text);
                fclose(f);
                c->oom = true;
                return;
            }
            text = nt;
            cap = ncap;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    if (more) {
        snprintf(c->problem, sizeof c->problem, "the shared %s file %.200s is larger than "
                 "%d bytes; not read", config_file ? "config" : "credentials", path,
                 CONFIG_FILE_MAX);
        free(text);
        return;
    }
    text[len] = '\0';
    section *cur = NULL;
    char parent[128] = "";
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        bool indented = line[0] == ' ' || line[0] == '\t';
        char *s = trim(line);
        if (*s == '#' || *s == ';' || *s == '\0')
            continue;
        if (*s == '[') {
            cur = NULL;
            parent[0] = '\0';
            char *end = strrchr(s, ']');
            if (!end)
                continue;
            *end = '\0';
            char *name = trim(s + 1);
            int kind = DDB__SEC_PROFILE;
            if (config_file) {
                if (strncmp(name, "profile", 7) == 0 && isspace((unsigned char)name[7])) {
                    name = trim(name + 8);
                } else if (strncmp(name, "sso-session", 11) == 0 &&
                           isspace((unsigned char)name[11])) {
                    kind = DDB__SEC_SSO_SESSION;
                    name = trim(name + 12);
                } else if (strncmp(name, "services", 8) == 0 && isspace((unsigned char)name[8])) {
                    kind = DDB__SEC_SERVICES;
                    name = trim(name + 9);
                } else if (strcmp(name, "default") != 0) {
                    continue; /* "[name]" in the config file is not a profile */
                }
            }
            if (*name)
                cur = add_section(c, kind, name);
            continue;
        }
        if (!cur)
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char *key = trim(s);
        char *val = trim(eq + 1);
        if (indented && parent[0]) {
            char full[300];
            snprintf(full, sizeof full, "%s.%s", parent, key);
            add_kv(c, cur, full, val);
            continue;
        }
        if (*val == '\0') {
            snprintf(parent, sizeof parent, "%s", key);
            continue;
        }
        parent[0] = '\0';
        add_kv(c, cur, key, val);
    }
    memset(text, 0, len); /* may hold secret keys */
    free(text);
}

ddb__config *ddb__config_load(void)
{
    ddb__config *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    char *cred_path = ddb__aws_file_path("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    char *conf_path = ddb__aws_file_path("AWS_CONFIG_FILE", "config");
    /* The credentials file first: its keys win over the config file's. */
    read_file(c, cred_path, false);
    read_file(c, conf_path, true);
    free(cred_path);
    free(conf_path);
    if (c->oom) {
        ddb__config_free(c);
        return NULL;
    }
    return c;
}

const char *ddb__config_problem(const ddb__config *c)
{
    return c && c->problem[0] ? c->problem : NULL;
}

void ddb__config_free(ddb__config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        for (size_t j = 0; j < c->secs[i].n; j++) {
            kv *e = &c->secs[i].kvs[j];
            free(e->key);
            if (e->val) {
                memset(e->val, 0, strlen(e->val)); /* may be a secret key */
                free(e->val);
            }
        }
        free(c->secs[i].kvs);
        free(c->secs[i].name);
    }
    free(c->secs);
    free(c);
}

bool ddb__config_has(const ddb__config *c, int kind, const char *name)
{
    for (size_t i = 0; c && i < c->n; i++)
        if (c->secs[i].kind == kind && strcmp(c->secs[i].name, name) == 0)
            return true;
    return false;
}

const char *ddb__config_get(const ddb__config *c, int kind, const char *name, const char *key)
{
    for (size_t i = 0; c && name && i < c->n; i++) {
        const section *s = &c->secs[i];
        if (s->kind != kind || strcmp(s->name, name) != 0)
            continue;
        for (size_t j = 0; j < s->n; j++)
            if (strcasecmp(s->kvs[j].key, key) == 0 && s->kvs[j].val[0])
                return s->kvs[j].val;
    }
    return NULL;
}

const char *ddb__config_profile_name(const char *explicit_profile)
{
    if (explicit_profile && *explicit_profile)
        return explicit_profile;
    const char *e = ddb__env("AWS_PROFILE");
    return e ? e : "default";
}

bool ddb__config_profile_named(const char *explicit_profile)
{
    return (explicit_profile && *explicit_profile) || ddb__env("AWS_PROFILE");
}

/* ---- region */

bool ddb__region_valid(const char *r)
{
    /* botocore's rule: a valid host label (letters, digits, inner hyphens, 1-63). */
    size_t n = r ? strlen(r) : 0;
    if (n == 0 || n > 63 || r[0] == '-' || r[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)r[i]) && r[i] != '-')
            return false;
    return true;
}

static int region_in(const ddb__config *cfg, const char *opt_region, const char *profile,
                     char **out, const char **from, ddb_error *err)
{
    *out = NULL;
    const char *src = "option";
    const char *r = opt_region && *opt_region ? opt_region : NULL;
    if (!r && (r = ddb__env("AWS_REGION")))
        src = "AWS_REGION";
    if (!r && (r = ddb__env("AWS_DEFAULT_REGION")))
        src = "AWS_DEFAULT_REGION";
    if (!r) {
        r = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "region");
        src = "profile";
    }
    if (!r) {
        r = "us-east-1";
        src = "default (no region configured)";
    }
    if (from)
        *from = src;
    int rc = 0;
    if (!ddb__region_valid(r))
        rc = ddb__fail(err, DDB_EINVAL,
                       "the region '%.64s' is not a valid region name (letters, digits and "
                       "inner hyphens only)", r);
    else if (!(*out = strdup(r)))
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    return rc;
}

/* ---- endpoints */

typedef struct partition {
    const char *prefix;    /* region prefix, "" for the default partition */
    const char *dns;       /* dnsSuffix */
    const char *dualstack; /* dualStackDnsSuffix, NULL when not supported */
} partition;

/* Most specific first; a region matching none is in the "aws" partition. */
static const partition k_partitions[] = {
    { "us-gov-", "amazonaws.com", "api.aws" },
    { "us-isob-", "sc2s.sgov.gov", NULL },
    { "us-isof-", "csp.hci.ic.gov", NULL },
    { "us-iso-", "c2s.ic.gov", NULL },
    { "eu-isoe-", "cloud.adc-e.uk", NULL },
    { "cn-", "amazonaws.com.cn", "api.amazonwebservices.com.cn" },
    { "", "amazonaws.com", "api.aws" },
};

static const partition *partition_of(const char *region)
{
    size_t n = sizeof k_partitions / sizeof k_partitions[0];
    for (size_t i = 0; i < n - 1; i++)
        if (strncmp(region, k_partitions[i].prefix, strlen(k_partitions[i].prefix)) == 0)
            return &k_partitions[i];
    return &k_partitions[n - 1];
}

const char *ddb__partition_name(const char *region)
{
    const partition *p = partition_of(region);
    static const char *const names[] = { "aws-us-gov", "aws-iso-b", "aws-iso-f", "aws-iso",
                                         "aws-iso-e", "aws-cn", "aws" };
    return names[p - k_partitions];
}

/* A boolean setting: environment variable, else the profile key. */
static bool flag(const ddb__config *cfg, const char *profile, const char *env, const char *key)
{
    const char *v = ddb__env(env);
    if (!v)
        v = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, key);
    return ddb__truthy(v);
}

int ddb__config_endpoint(const ddb__config *cfg, const char *profile, const char *service_id,
                         const char *region, char **out, ddb_error *err)
{
    *out = NULL;
    /* Configured endpoints, in the SDKs' order: AWS_ENDPOINT_URL_<SERVICE>,
     * AWS_ENDPOINT_URL, the profile's services section, the profile's endpoint_url. */
    const char *url = NULL;
    if (!ddb__truthy(ddb__env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) &&
        !ddb__truthy(ddb__config_get(cfg, DDB__SEC_PROFILE, profile,
                                     "ignore_configured_endpoint_urls"))) {
        char env[64], key[64];
        size_t i = 0;
        snprintf(env, sizeof env, "AWS_ENDPOINT_URL_%s", service_id);
        for (char *p = env; *p; p++)
            *p = *p == ' ' ? '_' : (char)toupper((unsigned char)*p);
        for (i = 0; service_id[i] && i < sizeof key - 16; i++)
            key[i] = service_id[i] == ' ' ? '_' : (char)tolower((unsigned char)service_id[i]);
        snprintf(key + i, sizeof key - i, ".endpoint_url");
        url = ddb__env(env);
        if (!url)
            url = ddb__env("AWS_ENDPOINT_URL");
        if (!url) {
            const char *services = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "services");
            url = ddb__config_get(cfg, DDB__SEC_SERVICES, services, key);
        }
        if (!url)
            url = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "endpoint_url");
    }
    if (url) {
        if (!(*out = strdup(url)))
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
        return 0;
    }
    char host[32];
    size_t i;
    for (i = 0; service_id[i] && i < sizeof host - 1; i++)
        host[i] = (char)tolower((unsigned char)service_id[i]);
    host[i] = '\0';
    if (strcmp(region, "local") == 0 && strcmp(host, "dynamodb") == 0) {
        *out = strdup("http://localhost:8000");
        return *out ? 0 : ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    bool fips = flag(cfg, profile, "AWS_USE_FIPS_ENDPOINT", "use_fips_endpoint");
    bool dual = flag(cfg, profile, "AWS_USE_DUALSTACK_ENDPOINT", "use_dualstack_endpoint");
    const partition *p = partition_of(region);
    if (dual && !p->dualstack)
        return ddb__fail(err, DDB_EINVAL,
                         "dual-stack endpoints are not available in the partition %s of "
                         "region %s", ddb__partition_name(region), region);
    const char *suffix = dual ? p->dualstack : p->dns;
    /* In GovCloud DynamoDB's ordinary endpoint is FIPS already. */
    bool fips_name = fips && !(strcmp(p->prefix, "us-gov-") == 0 && !dual &&
                               strcmp(host, "dynamodb") == 0);
    if (strcmp(host, "sso") == 0) /* the IAM Identity Center portal */
        snprintf(host, sizeof host, "portal.sso");
    else if (strcmp(host, "sso oidc") == 0)
        snprintf(host, sizeof host, "oidc");
    if (asprintf(out, "https://%s%s.%s.%s", host, fips_name ? "-fips" : "", region, suffix) < 0) {
        *out = NULL;
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    return 0;
}

char *ddb__config_ca_bundle(const ddb__config *cfg, const char *profile)
{
    const char *v = ddb__env("AWS_CA_BUNDLE");
    if (!v)
        v = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "ca_bundle");
    return v ? strdup(v) : NULL;
}

static int max_attempts_in(const ddb__config *cfg, const char *profile)
{
    const char *v = ddb__env("AWS_MAX_ATTEMPTS");
    if (!v)
        v = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "max_attempts");
    int n = 0;
    if (v) {
        char *end;
        long l = strtol(v, &end, 10);
        if (*end == '\0' && l > 0 && l <= CONFIG_MAX_ATTEMPTS_LIMIT)
            n = (int)l;
    }
    return n;
}

static bool retry_adaptive_in(const ddb__config *cfg, const char *profile)
{
    const char *v = ddb__env("AWS_RETRY_MODE");
    if (!v)
        v = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "retry_mode");
    return v && strcasecmp(v, "adaptive") == 0;
}

/* ---- a client's settings, resolved once */

int ddb__settings_resolve(const ddb_client_options *o, ddb__settings *out, ddb_error *err)
{
    ddb_client_options none = { 0 };
    if (!o)
        o = &none;
    memset(out, 0, sizeof *out);
    ddb__config *cfg = ddb__config_load();
    if (!cfg)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    const char *profile = ddb__config_profile_name(o->profile);
    out->profile_named = ddb__config_profile_named(o->profile);
    out->profile_found = ddb__config_has(cfg, DDB__SEC_PROFILE, profile);
    out->max_attempts = max_attempts_in(cfg, profile);
    out->retry_adaptive = retry_adaptive_in(cfg, profile);
    int rc = 0;
    if (!(out->profile = strdup(profile)))
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    if (rc == 0)
        rc = region_in(cfg, o->region, profile, &out->region, &out->region_from, err);
    if (rc == 0 && o->endpoint && *o->endpoint) {
        if (!(out->endpoint = strdup(o->endpoint)))
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    } else if (rc == 0) {
        rc = ddb__config_endpoint(cfg, profile, "DynamoDB", out->region, &out->endpoint, err);
    }
    if (rc == 0) {
        out->ca_bundle = ddb__config_ca_bundle(cfg, profile);
        if (!out->ca_bundle && ddb__env("AWS_CA_BUNDLE"))
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    ddb__config_free(cfg);
    if (rc != 0)
        ddb__settings_cleanup(out);
    return rc;
}

void ddb__settings_cleanup(ddb__settings *s)
{
    free(s->profile);
    free(s->region);
    free(s->endpoint);
    free(s->ca_bundle);
    memset(s, 0, sizeof *s);
}
