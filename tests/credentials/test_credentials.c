/* test_credentials.c: the credentials chain in order of precedence (explicit,
 * environment, shared files with profiles, container endpoint, IMDSv2), each step
 * against a temp HOME and a fake metadata server, and the refresh of credentials that
 * expire, driven by a fake clock. */
#include <check.h>

#include "dl_check.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_meta.h"
#include "internal.h"

static char g_home[64];
static fake_meta *g_meta;

static const char *const k_env[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_DISABLED", "AWS_REGION", "AWS_DEFAULT_REGION", NULL,
};

static void write_file(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_home, rel);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void remove_file(const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_home, rel);
    unlink(path);
}

static void setup(void)
{
    for (int i = 0; k_env[i]; i++)
        unsetenv(k_env[i]);
    snprintf(g_home, sizeof g_home, "/tmp/ddb-cred-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_home));
    char aws[128];
    snprintf(aws, sizeof aws, "%s/.aws", g_home);
    mkdir(aws, 0700);
    setenv("HOME", g_home, 1);
    /* Nothing reaches for the real metadata address unless a test points it here. */
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    g_meta = fake_meta_start();
    ck_assert_ptr_nonnull(g_meta);
    ddb__cred_set_container_base(NULL);
}

static void teardown(void)
{
    fake_meta_stop(g_meta);
    g_meta = NULL;
    ddb__cred_set_container_base(NULL);
    const char *files[] = { ".aws/credentials", ".aws/config", ".aws/other-creds",
                            ".aws/other-config", "token-file" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        remove_file(files[i]);
    char aws[128];
    snprintf(aws, sizeof aws, "%s/.aws", g_home);
    rmdir(aws);
    rmdir(g_home);
    for (int i = 0; k_env[i]; i++)
        unsetenv(k_env[i]);
}

/* Resolves with a fresh provider; returns the code, fills out and the source. */
static int resolve(const ddb_client_options *o, ddb_clock *clock, ddb__credentials *out,
                   const char **source, ddb_error *err)
{
    ddb_error local;
    if (!err)
        err = &local;
    ddb__cred_provider *p = ddb__cred_provider_new(o, NULL, clock, err);
    ck_assert_ptr_nonnull(p);
    int rc = ddb__cred_get(p, out, NULL, err);
    if (source)
        *source = ddb__cred_source(p);
    ddb__cred_provider_free(p);
    return rc;
}

static void expect(const ddb_client_options *o, const char *akid, const char *secret,
                   const char *token, const char *source)
{
    ddb__credentials c;
    const char *src = NULL;
    ddb_error err;
    ddb_error_clear(&err);
    int rc = resolve(o, NULL, &c, &src, &err);
    ck_assert_msg(rc == 0, "resolve failed: %d %s", rc, err.message);
    ck_assert_str_eq(c.access_key_id, akid);
    ck_assert_str_eq(c.secret_access_key, secret);
    if (token)
        ck_assert_str_eq(c.session_token, token);
    else
        ck_assert_ptr_null(c.session_token);
    ck_assert_str_eq(src, source);
    ddb__credentials_cleanup(&c);
}

static void expect_none(const ddb_client_options *o)
{
    ddb__credentials c;
    ddb_error err;
    ck_assert_int_eq(resolve(o, NULL, &c, NULL, &err), DDB_ECREDENTIALS);
    ck_assert_int_eq(err.code, DDB_ECREDENTIALS);
    ck_assert_ptr_nonnull(strstr(err.message, "no AWS credentials"));
    ck_assert_ptr_null(c.access_key_id);
}

/* A configured provider that fails: its error, naming it; the chain stops there. */
static void expect_error(const ddb_client_options *o, const char *needle)
{
    ddb__credentials c;
    ddb_error err;
    ck_assert_int_eq(resolve(o, NULL, &c, NULL, &err), DDB_ECREDENTIALS);
    ck_assert_int_eq(err.code, DDB_ECREDENTIALS);
    ck_assert_msg(strstr(err.message, needle), "'%s' not in '%s'", needle, err.message);
    ck_assert_ptr_null(c.access_key_id);
}

START_TEST(explicit_first)
{
    setenv("AWS_ACCESS_KEY_ID", "ENVAKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
    ddb_client_options o = { .access_key_id = "EXPAKID", .secret_access_key = "exp-secret",
                             .session_token = "exp-token" };
    expect(&o, "EXPAKID", "exp-secret", "exp-token", "explicit");
    /* Half of a pair is an error, not a fallback. */
    ddb_error err;
    ddb_client_options half = { .access_key_id = "EXPAKID" };
    ck_assert_ptr_null(ddb__cred_provider_new(&half, NULL, NULL, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
}
END_TEST

START_TEST(environment_second)
{
    write_file(".aws/credentials", "[default]\naws_access_key_id = FILEAKID\n"
                                   "aws_secret_access_key = file-secret\n");
    setenv("AWS_ACCESS_KEY_ID", "ENVAKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
    expect(NULL, "ENVAKID", "env-secret", NULL, "environment");
    setenv("AWS_SESSION_TOKEN", "env-token", 1);
    expect(NULL, "ENVAKID", "env-secret", "env-token", "environment");
    /* An incomplete pair in the environment is an error, as in the SDKs. */
    unsetenv("AWS_SECRET_ACCESS_KEY");
    expect_error(NULL, "environment: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    unsetenv("AWS_ACCESS_KEY_ID");
    expect(NULL, "FILEAKID", "file-secret", NULL, "shared-files");
}
END_TEST

START_TEST(shared_files_and_profiles)
{
    write_file(".aws/credentials",
               "# comment\n"
               "[default]\n"
               "aws_access_key_id=DEFAULTAKID\n"
               "aws_secret_access_key=default-secret\n"
               "\n"
               "[dev]\n"
               "  aws_access_key_id =  DEVAKID  \n"
               "; another comment\n"
               "  aws_secret_access_key = dev-secret\n"
               "  aws_session_token = dev-token\n");
    write_file(".aws/config",
               "[default]\nregion = eu-west-1\n"
               "[profile cfg]\nregion = ap-south-1\naws_access_key_id = CFGAKID\n"
               "aws_secret_access_key = cfg-secret\n"
               "[profile dev]\nregion = us-west-2\naws_access_key_id = NOTTHIS\n"
               "[cfg]\naws_access_key_id = WRONGSECTION\n");
    expect(NULL, "DEFAULTAKID", "default-secret", NULL, "shared-files");
    setenv("AWS_PROFILE", "dev", 1);
    expect(NULL, "DEVAKID", "dev-secret", "dev-token", "shared-files"); /* creds file wins */
    ddb_client_options o = { .profile = "cfg" };
    expect(&o, "CFGAKID", "cfg-secret", NULL, "shared-files");       /* option over env */
    /* A profile named but not in either file is an error at creation. */
    o.profile = "missing";
    ddb_error err;
    ck_assert_ptr_null(ddb__cred_provider_new(&o, NULL, NULL, &err));
    ck_assert_int_eq(err.code, DDB_ECREDENTIALS);
    ck_assert_ptr_nonnull(strstr(err.message, "profile 'missing' not found"));

    char *r = ddb__profile_region(NULL);
    ck_assert_str_eq(r, "us-west-2"); /* AWS_PROFILE=dev */
    free(r);
    r = ddb__profile_region("default");
    ck_assert_str_eq(r, "eu-west-1");
    free(r);
    r = ddb__profile_region("cfg");
    ck_assert_str_eq(r, "ap-south-1");
    free(r);
    ck_assert_ptr_null(ddb__profile_region("missing"));
}
END_TEST

START_TEST(shared_file_locations_from_env)
{
    write_file(".aws/credentials", "[default]\naws_access_key_id=HOMEAKID\n"
                                   "aws_secret_access_key=home-secret\n");
    write_file(".aws/other-creds", "[default]\naws_access_key_id=OTHERAKID\n"
                                   "aws_secret_access_key=other-secret\n");
    write_file(".aws/other-config", "[default]\nregion=sa-east-1\n");
    setenv("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/other-creds", 1);
    expect(NULL, "OTHERAKID", "other-secret", NULL, "shared-files");
    char path[256];
    snprintf(path, sizeof path, "%s/.aws/other-config", g_home);
    setenv("AWS_CONFIG_FILE", path, 1);
    char *r = ddb__profile_region(NULL);
    ck_assert_str_eq(r, "sa-east-1");
    free(r);
    /* No readable file at all: no credentials, no crash. */
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/creds", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
    expect_none(NULL);
    ck_assert_ptr_null(ddb__profile_region(NULL));
}
END_TEST

START_TEST(container_full_uri)
{
    char url[128];
    snprintf(url, sizeof url, "%s/container/creds", fake_meta_url(g_meta));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    fake_meta_set_container_token(g_meta, "Bearer secret-token");
    expect_error(NULL, "container: the credentials endpoint answered HTTP 403"); /* no token */
    ck_assert_int_eq(fake_meta_counts_get(g_meta).refused, 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Bearer wrong", 1);
    expect_error(NULL, "HTTP 403");
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Bearer secret-token", 1);
    expect(NULL, "CONTAINERAKID1", "CONTAINER-secret-1", "CONTAINER-token-1", "container");
    /* The token file wins over the variable. */
    write_file("token-file", "Bearer file-token\n");
    char tf[256];
    snprintf(tf, sizeof tf, "%s/token-file", g_home);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tf, 1);
    fake_meta_set_container_token(g_meta, "Bearer file-token");
    expect(NULL, "CONTAINERAKID2", "CONTAINER-secret-2", "CONTAINER-token-2", "container");
    ck_assert_int_eq(fake_meta_counts_get(g_meta).container_creds, 2);
}
END_TEST

START_TEST(container_relative_uri)
{
    ddb__cred_set_container_base(fake_meta_url(g_meta));
    setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/container/creds", 1);
    expect(NULL, "CONTAINERAKID1", "CONTAINER-secret-1", "CONTAINER-token-1", "container");
    /* The relative URI wins over the full one. */
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/nothing", 1);
    expect(NULL, "CONTAINERAKID2", "CONTAINER-secret-2", "CONTAINER-token-2", "container");
}
END_TEST

START_TEST(container_full_uri_must_be_local_or_https)
{
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://198.51.100.7/creds", 1);
    expect_error(NULL, "it resolves to 198.51.100.7");
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "file:///etc/passwd", 1);
    expect_error(NULL, "must be http or https");
    ck_assert_int_eq(fake_meta_counts_get(g_meta).requests, 0);
}
END_TEST

START_TEST(imds_v2)
{
    unsetenv("AWS_EC2_METADATA_DISABLED");
    ddb_client_options o = { .imds_endpoint = fake_meta_url(g_meta) };
    expect(&o, "IMDSAKID1", "IMDS-secret-1", "IMDS-token-1", "imds");
    fake_meta_counts n = fake_meta_counts_get(g_meta);
    ck_assert_int_eq(n.token_puts, 1);
    ck_assert_int_eq(n.imds_creds, 1);
    ck_assert_int_eq(n.refused, 0);
    /* The endpoint from the environment. */
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fake_meta_url(g_meta), 1);
    expect(NULL, "IMDSAKID2", "IMDS-secret-2", "IMDS-token-2", "imds");
    /* Disabled by option or by environment: not asked. */
    o.imds_disabled = true;
    expect_none(&o);
    o.imds_disabled = false;
    setenv("AWS_EC2_METADATA_DISABLED", "TRUE", 1);
    expect_none(&o);
    ck_assert_int_eq(fake_meta_counts_get(g_meta).imds_creds, 2);
    /* A failing service: none. */
    unsetenv("AWS_EC2_METADATA_DISABLED");
    fake_meta_set_failing(g_meta, true);
    expect_none(&o);
}
END_TEST

START_TEST(chain_order)
{
    unsetenv("AWS_EC2_METADATA_DISABLED");
    ddb_client_options o = { .imds_endpoint = fake_meta_url(g_meta) };
    char url[128];
    snprintf(url, sizeof url, "%s/container/creds", fake_meta_url(g_meta));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    write_file(".aws/credentials", "[default]\naws_access_key_id=FILEAKID\n"
                                   "aws_secret_access_key=file-secret\n");
    setenv("AWS_ACCESS_KEY_ID", "ENVAKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
    ddb_client_options ex = o;
    ex.access_key_id = "EXPAKID";
    ex.secret_access_key = "exp-secret";
    expect(&ex, "EXPAKID", "exp-secret", NULL, "explicit");
    expect(&o, "ENVAKID", "env-secret", NULL, "environment");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    expect(&o, "FILEAKID", "file-secret", NULL, "shared-files");
    remove_file(".aws/credentials");
    expect(&o, "CONTAINERAKID1", "CONTAINER-secret-1", "CONTAINER-token-1", "container");
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    expect(&o, "IMDSAKID1", "IMDS-secret-1", "IMDS-token-1", "imds");
    fake_meta_counts n = fake_meta_counts_get(g_meta);
    ck_assert_int_eq(n.container_creds, 1);
    ck_assert_int_eq(n.imds_creds, 1);
}
END_TEST

/* 2024-03-01T00:00:00Z */
#define T0_MS 1709251200000LL

START_TEST(expiring_credentials_refresh_on_the_clock)
{
    unsetenv("AWS_EC2_METADATA_DISABLED");
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    fake_meta_set_expiration(g_meta, T0_MS + 10 * 60 * 1000); /* in 10 minutes */
    ddb_client_options o = { .imds_endpoint = fake_meta_url(g_meta) };
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(ddb__cred_source(p), "");
    ddb__credentials c;
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "IMDSAKID1");
    ck_assert_int_eq(c.expires_wall_ms, T0_MS + 10 * 60 * 1000);
    ddb__credentials_cleanup(&c);
    /* Four minutes later: 6 minutes left, still cached. */
    ddb_fake_clock_advance(clock, 4 * 60 * 1000);
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "IMDSAKID1");
    ddb__credentials_cleanup(&c);
    ck_assert_int_eq(fake_meta_counts_get(g_meta).imds_creds, 1);
    /* Two more: within 5 minutes of expiry, refreshed. */
    fake_meta_set_expiration(g_meta, T0_MS + 70 * 60 * 1000);
    ddb_fake_clock_advance(clock, 2 * 60 * 1000);
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "IMDSAKID2");
    ddb__credentials_cleanup(&c);
    ck_assert_int_eq(fake_meta_counts_get(g_meta).imds_creds, 2);

    /* A failed refresh keeps credentials that have not expired yet... */
    fake_meta_set_failing(g_meta, true);
    ddb_fake_clock_advance(clock, 62 * 60 * 1000); /* 2 minutes before expiry */
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "IMDSAKID2");
    ddb__credentials_cleanup(&c);
    /* ...but not once they have. */
    ddb_fake_clock_advance(clock, 2 * 60 * 1000);
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), DDB_ECREDENTIALS);
    ck_assert_ptr_null(c.access_key_id);
    /* The service is back: fresh credentials (an hour more; ones that expire now would
     * be refused as still expired). */
    fake_meta_set_failing(g_meta, false);
    fake_meta_set_expiration(g_meta, T0_MS + 130 * 60 * 1000);
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "IMDSAKID3");
    ddb__credentials_cleanup(&c);
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}
END_TEST

typedef struct getter {
    ddb__cred_provider *p;
    int ok;
} getter;

static void *get_many(void *arg)
{
    getter *g = arg;
    for (int i = 0; i < 20; i++) {
        ddb__credentials c;
        if (ddb__cred_get(g->p, &c, NULL, NULL) == 0 && c.access_key_id)
            g->ok++;
        ddb__credentials_cleanup(&c);
    }
    return NULL;
}

START_TEST(one_refresh_at_a_time)
{
    unsetenv("AWS_EC2_METADATA_DISABLED");
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    fake_meta_set_expiration(g_meta, T0_MS + 60 * 60 * 1000);
    ddb_client_options o = { .imds_endpoint = fake_meta_url(g_meta) };
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, NULL);
    getter g[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        g[i] = (getter){ p, 0 };
        pthread_create(&th[i], NULL, get_many, &g[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(g[i].ok, 20);
    }
    ck_assert_int_eq(fake_meta_counts_get(g_meta).imds_creds, 1);
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}
END_TEST

START_TEST(imds_endpoint_too_long_is_refused_not_cut)
{
    unsetenv("AWS_EC2_METADATA_DISABLED");
    char endpoint[700];
    int n = snprintf(endpoint, sizeof endpoint, "%s/", fake_meta_url(g_meta));
    memset(endpoint + n, 'a', sizeof endpoint - 1 - (size_t)n);
    endpoint[sizeof endpoint - 1] = '\0';
    ddb_client_options o = { .imds_endpoint = endpoint };
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, NULL, NULL);
    ddb__credentials c;
    ddb_error err;
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), DDB_ECREDENTIALS);
    ck_assert_msg(strstr(err.message, "an endpoint longer than 511 bytes"), "%s", err.message);
    ck_assert_int_eq(fake_meta_counts_get(g_meta).requests, 0);
    ddb__cred_provider_free(p);
}
END_TEST

START_TEST(cancelled_fetch)
{
    unsetenv("AWS_EC2_METADATA_DISABLED");
    ddb_client_options o = { .imds_endpoint = fake_meta_url(g_meta) };
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, NULL, NULL);
    ddb_cancel *k = ddb_cancel_new();
    ddb_cancel_set(k);
    ddb__credentials c;
    ddb_error err;
    ck_assert_int_eq(ddb__cred_get(p, &c, k, &err), DDB_ECANCELED);
    ck_assert_int_eq(err.code, DDB_ECANCELED);
    ck_assert_int_eq(fake_meta_counts_get(g_meta).requests, 0);
    ddb_cancel_unref(k);
    ddb__cred_provider_free(p);
    ddb__credentials_cleanup(NULL);
    ddb__cred_provider_free(NULL);
}
END_TEST

static Suite *credentials_suite(void)
{
    Suite *s = suite_create("credentials");
    TCase *tc = tcase_create("chain");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, explicit_first);
    tcase_add_test(tc, environment_second);
    tcase_add_test(tc, shared_files_and_profiles);
    tcase_add_test(tc, shared_file_locations_from_env);
    tcase_add_test(tc, container_full_uri);
    tcase_add_test(tc, container_relative_uri);
    tcase_add_test(tc, container_full_uri_must_be_local_or_https);
    tcase_add_test(tc, imds_v2);
    tcase_add_test(tc, chain_order);
    tcase_add_test(tc, expiring_credentials_refresh_on_the_clock);
    tcase_add_test(tc, one_refresh_at_a_time);
    tcase_add_test(tc, cancelled_fetch);
    tcase_add_test(tc, imds_endpoint_too_long_is_refused_not_cut);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(credentials_suite());
}
