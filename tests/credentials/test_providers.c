/* test_providers.c: the credential providers beyond static keys, end to end against local
 * fakes (STS and the SSO portal in fake_sts.c, the container endpoint in fake_meta.c):
 * web identity, assume-role profiles, credential_process, SSO; refresh on a fake clock;
 * the bad days (malformed token file, garbage and hanging processes, expired SSO token,
 * profile cycles, STS errors); the security checks; no secret in any log line or error. */
#include <check.h>

#include "dl_check.h"
#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_meta.h"
#include "fake_sts.h"
#include "client.h"
#include "internal.h"

/* 2024-03-01T00:00:00Z */
#define T0_MS 1709251200000LL

static char g_home[64];
static fake_sts *g_sts;
static fake_meta *g_meta;

static const char *const k_env[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_DISABLED", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL_SSO", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_USE_FIPS_ENDPOINT",
    "AWS_USE_DUALSTACK_ENDPOINT", "AWS_CA_BUNDLE", "AWS_MAX_ATTEMPTS",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_ENDPOINT_URL_SSO_OIDC", NULL,
};

/* ---- a log sink that keeps every line */

static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[65536];
static size_t g_log_len;

static void capture(void *arg, int level, int event_id, const char *category, const char *msg,
                    const ddb_log_field *f, size_t n)
{
    (void)arg, (void)level, (void)event_id;
    pthread_mutex_lock(&g_log_mu);
    char line[2048];
    int l = snprintf(line, sizeof line, "%s %s", category, msg);
    for (size_t i = 0; i < n && l > 0 && (size_t)l < sizeof line; i++)
        l += snprintf(line + l, sizeof line - (size_t)l, " %s=%s", f[i].key, f[i].value);
    if (l > 0 && g_log_len + (size_t)l + 2 < sizeof g_log) {
        memcpy(g_log + g_log_len, line, (size_t)l);
        g_log_len += (size_t)l;
        g_log[g_log_len++] = '\n';
        g_log[g_log_len] = '\0';
    }
    pthread_mutex_unlock(&g_log_mu);
}

static ddb_client_options opts(void)
{
    return (ddb_client_options){ .log = capture, .log_level = DDB_LOG_TRACE };
}

static void write_file(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_home, rel);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    chmod(path, 0700);
}

static const char *home_path(const char *rel)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_home, rel);
    return path;
}

static void setup(void)
{
    for (int i = 0; k_env[i]; i++)
        unsetenv(k_env[i]);
    snprintf(g_home, sizeof g_home, "/tmp/ddb-prov-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_home));
    mkdir(home_path(".aws"), 0700);
    mkdir(home_path(".aws/sso"), 0700);
    mkdir(home_path(".aws/sso/cache"), 0700);
    setenv("HOME", g_home, 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    g_sts = fake_sts_start();
    ck_assert_ptr_nonnull(g_sts);
    g_meta = fake_meta_start();
    ck_assert_ptr_nonnull(g_meta);
    setenv("AWS_ENDPOINT_URL_STS", fake_sts_url(g_sts), 1);
    setenv("AWS_ENDPOINT_URL_SSO", fake_sts_url(g_sts), 1);
    setenv("AWS_ENDPOINT_URL_SSO_OIDC", fake_sts_url(g_sts), 1);
    g_log_len = 0;
    g_log[0] = '\0';
    ddb__cred_set_process_timeout_ms(0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void teardown(void)
{
    fake_sts_stop(g_sts);
    fake_meta_stop(g_meta);
    nftw(g_home, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; k_env[i]; i++)
        unsetenv(k_env[i]);
    ddb__cred_set_process_timeout_ms(0);
}

/* Resolves with a fresh provider on clock (NULL: system). */
static int resolve(const ddb_client_options *o, ddb_clock *clock, ddb__credentials *out,
                   const char **source, ddb_error *err)
{
    ddb__cred_provider *p = ddb__cred_provider_new(o, NULL, clock, err);
    ck_assert_msg(p != NULL, "provider: %s", err->message);
    int rc = ddb__cred_get(p, out, NULL, err);
    if (source)
        *source = ddb__cred_source(p);
    ddb__cred_provider_free(p);
    return rc;
}

static void expect(const ddb_client_options *o, const char *akid, const char *token,
                   const char *source)
{
    ddb__credentials c;
    const char *src = NULL;
    ddb_error err;
    ddb_error_clear(&err);
    int rc = resolve(o, NULL, &c, &src, &err);
    ck_assert_msg(rc == 0, "resolve failed: %d %s", rc, err.message);
    ck_assert_str_eq(c.access_key_id, akid);
    if (token)
        ck_assert_str_eq(c.session_token, token);
    ck_assert_str_eq(src, source);
    ddb__credentials_cleanup(&c);
}

/* Saved error messages, for the check that no secret leaks into any of them. */
static char g_errors[16384];

static void expect_error(const ddb_client_options *o, int code, const char *needle)
{
    ddb__credentials c;
    ddb_error err;
    ddb_error_clear(&err);
    int rc = resolve(o, NULL, &c, NULL, &err);
    ck_assert_msg(rc == code, "rc %d, want %d: %s", rc, code, err.message);
    ck_assert_int_eq(err.code, code);
    ck_assert_msg(strstr(err.message, needle), "'%s' not in '%s'", needle, err.message);
    ck_assert_ptr_null(c.access_key_id);
    size_t l = strlen(g_errors);
    snprintf(g_errors + l, sizeof g_errors - l, "%s\n", err.message);
}

/* ---------------------------------------------------------------- web identity */

START_TEST(web_identity_from_environment)
{
    write_file("token", "eyJhbGciOi.web-token.sig\n");
    fake_sts_set_web_token(g_sts, "eyJhbGciOi.web-token.sig");
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", home_path("token"), 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/app", 1);
    setenv("AWS_ROLE_SESSION_NAME", "my session", 1);
    /* A profile with static keys comes later in the chain: not used. */
    write_file(".aws/credentials", "[default]\naws_access_key_id=FILEAKID\n"
                                   "aws_secret_access_key=file-secret\n");
    ddb_client_options o = opts();
    expect(&o, "WEBAKID1", "WEB-token-1&x", "web-identity");
    char v[256];
    fake_sts_last(g_sts, "RoleArn", v, sizeof v);
    ck_assert_str_eq(v, "arn:aws:iam::123456789012:role/app");
    fake_sts_last(g_sts, "RoleSessionName", v, sizeof v);
    ck_assert_str_eq(v, "my session");
    fake_sts_last(g_sts, "Version", v, sizeof v);
    ck_assert_str_eq(v, "2011-06-15");
    /* Without a session name, one is made up. */
    unsetenv("AWS_ROLE_SESSION_NAME");
    expect(&o, "WEBAKID2", NULL, "web-identity");
    fake_sts_last(g_sts, "RoleSessionName", v, sizeof v);
    ck_assert_ptr_nonnull(strstr(v, "dynalock-"));
}
END_TEST

START_TEST(web_identity_from_profile)
{
    write_file("token", "profile-token");
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[profile eks]\nrole_arn = arn:aws:iam::1:role/eks\nweb_identity_token_file = %s\n"
             "role_session_name = eks-session\n", home_path("token"));
    write_file(".aws/config", cfg);
    setenv("AWS_PROFILE", "eks", 1);
    ddb_client_options o = opts();
    expect(&o, "WEBAKID1", NULL, "web-identity");
    char v[256];
    fake_sts_last(g_sts, "RoleSessionName", v, sizeof v);
    ck_assert_str_eq(v, "eks-session");
    fake_sts_last(g_sts, "WebIdentityToken", v, sizeof v);
    ck_assert_str_eq(v, "profile-token");
}
END_TEST

START_TEST(web_identity_bad_days)
{
    unsetenv("AWS_EC2_METADATA_DISABLED");
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fake_meta_url(g_meta), 1);
    ddb_client_options o = opts();
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", home_path("token"), 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
    /* No file, an empty one, one that is not a token: each an error naming the provider,
     * and the chain does not fall through to the node's role (IMDS). */
    expect_error(&o, DDB_ECREDENTIALS, "web identity (AWS_WEB_IDENTITY_TOKEN_FILE): cannot read "
                                       "the token file");
    write_file("token", "");
    expect_error(&o, DDB_ECREDENTIALS, "does not hold a token");
    write_file("token", "two\nlines");
    expect_error(&o, DDB_ECREDENTIALS, "does not hold a token");
    write_file("token", "binary\001token");
    expect_error(&o, DDB_ECREDENTIALS, "does not hold a token");
    /* STS refuses the token. */
    write_file("token", "wrong-token");
    fake_sts_set_web_token(g_sts, "right-token");
    expect_error(&o, DDB_ECREDENTIALS, "STS AssumeRoleWithWebIdentity failed (HTTP 400): "
                                       "InvalidIdentityToken");
    /* STS is down. */
    fake_sts_set_error(g_sts, "ServiceUnavailable", 503);
    expect_error(&o, DDB_ECREDENTIALS, "HTTP 503");
    /* A token file but no role. */
    unsetenv("AWS_ROLE_ARN");
    expect_error(&o, DDB_ECREDENTIALS, "no role ARN");
    ck_assert_int_eq(fake_meta_counts_get(g_meta).requests, 0);
    /* STS unreachable. */
    setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
    setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1", 1);
    expect_error(&o, DDB_ECREDENTIALS, "got no answer");
}
END_TEST

START_TEST(sts_transient_errors_are_retried)
{
    write_file("token", "tok");
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", home_path("token"), 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
    ddb_client_options o = opts();
    /* The identity provider did not answer STS twice: the third attempt succeeds. */
    fake_sts_fail_next(g_sts, "IDPCommunicationError", 400, 2);
    expect(&o, "WEBAKID1", NULL, "web-identity");
    ck_assert_int_eq(fake_sts_counts_get(g_sts).refused, 2);
    /* Throttled three times: the attempts run out and the error is STS's. */
    fake_sts_fail_next(g_sts, "Throttling", 400, 3);
    expect_error(&o, DDB_ECREDENTIALS, "Throttling");
    ck_assert_int_eq(fake_sts_counts_get(g_sts).refused, 5);
    /* A refused token is not retried. */
    fake_sts_fail_next(g_sts, "InvalidIdentityToken", 400, 3);
    expect_error(&o, DDB_ECREDENTIALS, "InvalidIdentityToken");
    ck_assert_int_eq(fake_sts_counts_get(g_sts).refused, 6);
}
END_TEST

START_TEST(web_identity_refreshes_on_the_clock)
{
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    fake_sts_set_expiration(g_sts, T0_MS + 15 * 60 * 1000);
    write_file("token", "tok");
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", home_path("token"), 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
    ddb_client_options o = opts();
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
    ck_assert_ptr_nonnull(p);
    ddb__credentials c;
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "WEBAKID1");
    ck_assert_int_eq(c.expires_wall_ms, T0_MS + 15 * 60 * 1000);
    ddb__credentials_cleanup(&c);
    ddb_fake_clock_advance(clock, 9 * 60 * 1000); /* 6 minutes left: still cached */
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "WEBAKID1");
    ddb__credentials_cleanup(&c);
    fake_sts_set_expiration(g_sts, T0_MS + 75 * 60 * 1000);
    ddb_fake_clock_advance(clock, 2 * 60 * 1000); /* 4 minutes left: refreshed */
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "WEBAKID2");
    ddb__credentials_cleanup(&c);
    ck_assert_int_eq(fake_sts_counts_get(g_sts).web_identity, 2);
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}
END_TEST

/* ---------------------------------------------------------------- assume role */

START_TEST(assume_role_with_source_profile)
{
    fake_sts_add_key(g_sts, "BASEAKID", "base-secret");
    write_file(".aws/credentials", "[base]\naws_access_key_id = BASEAKID\n"
                                   "aws_secret_access_key = base-secret\n");
    write_file(".aws/config", "[profile ops]\nrole_arn = arn:aws:iam::2:role/ops\n"
                              "source_profile = base\nexternal_id = ext-42\n"
                              "duration_seconds = 1800\nrole_session_name = ops-session\n"
                              "region = eu-west-1\n");
    ddb_client_options o = opts();
    o.profile = "ops";
    expect(&o, "ROLEAKID1", "ROLE-token-1&x", "assume-role");
    char v[256];
    fake_sts_last(g_sts, "signer", v, sizeof v); /* signed by the source's key, verified */
    ck_assert_str_eq(v, "BASEAKID");
    fake_sts_last(g_sts, "ExternalId", v, sizeof v);
    ck_assert_str_eq(v, "ext-42");
    fake_sts_last(g_sts, "DurationSeconds", v, sizeof v);
    ck_assert_str_eq(v, "1800");
    fake_sts_last(g_sts, "RoleSessionName", v, sizeof v);
    ck_assert_str_eq(v, "ops-session");
    fake_sts_last(g_sts, "RoleArn", v, sizeof v);
    ck_assert_str_eq(v, "arn:aws:iam::2:role/ops");
}
END_TEST

START_TEST(assume_role_chain_and_credential_source)
{
    fake_sts_add_key(g_sts, "BASEAKID", "base-secret");
    fake_sts_add_key(g_sts, "ROLEAKID1", "ROLE-secret-1");
    fake_sts_add_key(g_sts, "ENVAKID", "env-secret");
    write_file(".aws/config",
               "[profile base]\naws_access_key_id = BASEAKID\naws_secret_access_key = base-secret\n"
               "[profile first]\nrole_arn = arn:aws:iam::1:role/first\nsource_profile = base\n"
               "[profile second]\nrole_arn = arn:aws:iam::2:role/second\nsource_profile = first\n"
               "[profile fromenv]\nrole_arn = arn:aws:iam::3:role/e\ncredential_source = Environment\n"
               "[profile self]\nrole_arn = arn:aws:iam::4:role/s\nsource_profile = self\n"
               "aws_access_key_id = BASEAKID\naws_secret_access_key = base-secret\n");
    ddb_client_options o = opts();
    /* second -> first -> base: two calls, the second signed with the first's result. */
    o.profile = "second";
    expect(&o, "ROLEAKID2", NULL, "assume-role");
    char v[256];
    fake_sts_last(g_sts, "signer", v, sizeof v);
    ck_assert_str_eq(v, "ROLEAKID1");
    ck_assert_int_eq(fake_sts_counts_get(g_sts).assume_role, 2);
    /* credential_source = Environment. A profile chosen in the options skips the
     * environment step of the chain (as botocore and aws-sdk-go-v2 do). */
    o.profile = "fromenv";
    expect_error(&o, DDB_ECREDENTIALS, "credential_source Environment of profile 'fromenv': "
                                       "nothing is configured there");
    setenv("AWS_ACCESS_KEY_ID", "ENVAKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
    expect(&o, "ROLEAKID3", NULL, "assume-role");
    fake_sts_last(g_sts, "signer", v, sizeof v);
    ck_assert_str_eq(v, "ENVAKID");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    /* A profile that is its own source uses its static keys. */
    o.profile = "self";
    expect(&o, "ROLEAKID4", NULL, "assume-role");
}
END_TEST

START_TEST(assume_role_bad_days)
{
    fake_sts_add_key(g_sts, "BASEAKID", "base-secret");
    write_file(".aws/config",
               "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n"
               "[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n"
               "[profile nosrc]\nrole_arn = arn:aws:iam::1:role/n\n"
               "[profile gone]\nrole_arn = arn:aws:iam::1:role/g\nsource_profile = nowhere\n"
               "[profile base]\naws_access_key_id = BASEAKID\naws_secret_access_key = base-secret\n"
               "[profile ok]\nrole_arn = arn:aws:iam::1:role/ok\nsource_profile = base\n"
               "[profile baddur]\nrole_arn = arn:aws:iam::1:role/ok\nsource_profile = base\n"
               "duration_seconds = 12\n"
               "[profile mfa]\nrole_arn = arn:aws:iam::1:role/ok\nsource_profile = base\n"
               "mfa_serial = arn:aws:iam::1:mfa/me\n"
               "[profile badsrc]\nrole_arn = arn:aws:iam::1:role/ok\ncredential_source = Moon\n");
    ddb_client_options o = opts();
    o.profile = "a";
    expect_error(&o, DDB_ECREDENTIALS, "profile 'a': the source_profile chain has a cycle: "
                                       "a -> b -> a");
    o.profile = "nosrc";
    expect_error(&o, DDB_ECREDENTIALS, "role_arn needs source_profile or credential_source");
    o.profile = "gone";
    expect_error(&o, DDB_ECREDENTIALS, "source_profile 'nowhere' not found");
    o.profile = "baddur";
    expect_error(&o, DDB_ECREDENTIALS, "duration_seconds '12'");
    o.profile = "mfa";
    expect_error(&o, DDB_ECREDENTIALS, "mfa_serial");
    o.profile = "badsrc";
    expect_error(&o, DDB_ECREDENTIALS, "credential_source 'Moon'");
    o.profile = "ok";
    fake_sts_set_error(g_sts, "AccessDenied", 403);
    expect_error(&o, DDB_ECREDENTIALS, "assume role of profile 'ok': STS AssumeRole failed "
                                       "(HTTP 403): AccessDenied");
    ck_assert_int_eq(fake_sts_counts_get(g_sts).assume_role, 0);
}
END_TEST

/* ---------------------------------------------------------------- credential_process */

static void process_profile(const char *script)
{
    write_file("proc.sh", script);
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[default]\ncredential_process = %s --flag 'a b'\n",
             home_path("proc.sh"));
    write_file(".aws/config", cfg);
}

START_TEST(credential_process_good_and_refreshed)
{
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    process_profile("#!/bin/sh\n"
                    "test \"$2\" = 'a b' || exit 9\n"
                    "n=$(cat \"$HOME/count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$HOME/count\"\n"
                    "echo '{\"Version\": 1, \"AccessKeyId\": \"PROCAKID'$n'\", "
                    "\"SecretAccessKey\": \"proc-secret\", \"SessionToken\": \"proc-token\", "
                    "\"Expiration\": \"2024-03-01T00:20:00Z\"}'\n");
    ddb_client_options o = opts();
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
    ck_assert_ptr_nonnull(p);
    ddb__credentials c;
    ck_assert_msg(ddb__cred_get(p, &c, NULL, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.access_key_id, "PROCAKID1");
    ck_assert_str_eq(c.session_token, "proc-token");
    ck_assert_int_eq(c.expires_wall_ms, T0_MS + 20 * 60 * 1000);
    ck_assert_str_eq(ddb__cred_source(p), "process");
    ddb__credentials_cleanup(&c);
    ddb_fake_clock_advance(clock, 14 * 60 * 1000);
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "PROCAKID1");
    ddb__credentials_cleanup(&c);
    ddb_fake_clock_advance(clock, 2 * 60 * 1000); /* within 5 minutes of the expiry */
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "PROCAKID2");
    ddb__credentials_cleanup(&c);
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}
END_TEST

START_TEST(credential_process_bad_days)
{
    ddb_client_options o = opts();
    process_profile("#!/bin/sh\necho 'this is not json'\n");
    expect_error(&o, DDB_ECREDENTIALS, "credential_process of profile 'default': the command's "
                                       "output is not a JSON object");
    process_profile("#!/bin/sh\necho '{\"Version\": 2, \"AccessKeyId\": \"A\", "
                    "\"SecretAccessKey\": \"B\"}'\n");
    expect_error(&o, DDB_ECREDENTIALS, "\"Version\": 1");
    process_profile("#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"A\"}'\n");
    expect_error(&o, DDB_ECREDENTIALS, "lacks AccessKeyId or SecretAccessKey");
    process_profile("#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"A\", "
                    "\"SecretAccessKey\": \"B\", \"Expiration\": \"soon\"}'\n");
    expect_error(&o, DDB_ECREDENTIALS, "Expiration is not an ISO 8601 time");
    process_profile("#!/bin/sh\necho 'token expired, log in again' >&2\nexit 3\n");
    expect_error(&o, DDB_ECREDENTIALS, "the command failed (exit status 3): token expired, log in "
                                       "again");
    /* A command that hangs is killed after the timeout (a short real bound here). */
    ddb__cred_set_process_timeout_ms(300);
    process_profile("#!/bin/sh\nexec sleep 30\n");
    expect_error(&o, DDB_ECREDENTIALS, "did not finish within 300 ms and was killed");
    ddb__cred_set_process_timeout_ms(0); /* back to the default: the rest must not race it */
    /* A command that cannot run. */
    write_file(".aws/config", "[default]\ncredential_process = /nonexistent/tool\n");
    expect_error(&o, DDB_ECREDENTIALS, "exit status 127");
}
END_TEST

/* ---------------------------------------------------------------- SSO */

/* sha1("my-sso") and sha1 of the legacy start URL, computed independently. */
#define SSO_SESSION_FILE ".aws/sso/cache/0ad374308c5a4e22f723adf10145eafad7c4031c.json"
#define SSO_LEGACY_FILE ".aws/sso/cache/7487b5b67d5fa1132cf33fa93ae51ef38cc37752.json"

START_TEST(sso_session_and_legacy)
{
    write_file(".aws/config",
               "[profile dev]\nsso_session = my-sso\nsso_account_id = 111122223333\n"
               "sso_role_name = Dev Role\nregion = us-west-2\n"
               "[sso-session my-sso]\nsso_region = us-east-1\n"
               "sso_start_url = https://d-1234567890.awsapps.com/start\n"
               "[profile legacy]\nsso_start_url = https://d-1234567890.awsapps.com/start\n"
               "sso_region = eu-west-1\nsso_account_id = 444455556666\nsso_role_name = Old\n");
    write_file(SSO_SESSION_FILE, "{\"startUrl\":\"x\",\"region\":\"us-east-1\","
                                 "\"accessToken\":\"sso-access\",\"expiresAt\":\"2099-01-01T00:00:00Z\"}");
    write_file(SSO_LEGACY_FILE, "{\"accessToken\":\"sso-legacy\",\"expiresAt\":\"2099-01-01T00:00:00Z\"}");
    fake_sts_set_sso_token(g_sts, "sso-access");
    ddb_client_options o = opts();
    o.profile = "dev";
    expect(&o, "SSOAKID1", "SSO-token-1", "sso");
    char v[128];
    fake_sts_last(g_sts, "account_id", v, sizeof v);
    ck_assert_str_eq(v, "111122223333");
    fake_sts_last(g_sts, "role_name", v, sizeof v);
    ck_assert_str_eq(v, "Dev Role");
    fake_sts_set_sso_token(g_sts, "sso-legacy");
    o.profile = "legacy";
    expect(&o, "SSOAKID2", NULL, "sso");
}
END_TEST

START_TEST(sso_refreshes_on_the_clock)
{
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    write_file(".aws/config",
               "[default]\nsso_session = my-sso\nsso_account_id = 1\nsso_role_name = r\n"
               "[sso-session my-sso]\nsso_region = us-east-1\nsso_start_url = https://x\n");
    write_file(SSO_SESSION_FILE, "{\"accessToken\":\"t\",\"expiresAt\":\"2024-03-01T08:00:00Z\"}");
    fake_sts_set_sso_token(g_sts, "t");
    fake_sts_set_expiration(g_sts, T0_MS + 60 * 60 * 1000);
    ddb_client_options o = opts();
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
    ddb__credentials c;
    ck_assert_msg(ddb__cred_get(p, &c, NULL, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.access_key_id, "SSOAKID1");
    ddb__credentials_cleanup(&c);
    fake_sts_set_expiration(g_sts, T0_MS + 2 * 60 * 60 * 1000);
    ddb_fake_clock_advance(clock, 56 * 60 * 1000);
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), 0);
    ck_assert_str_eq(c.access_key_id, "SSOAKID2");
    ddb__credentials_cleanup(&c);
    /* The SSO session itself has expired by 08:00: once the role credentials run out,
     * the error says to log in again. */
    ddb_fake_clock_advance(clock, 8 * 60 * 60 * 1000);
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), DDB_ECREDENTIALS);
    ck_assert_ptr_nonnull(strstr(err.message, "the SSO session has expired"));
    ck_assert_ptr_nonnull(strstr(err.message, "aws sso login"));
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}
END_TEST

START_TEST(sso_token_refreshed_near_its_expiry)
{
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    write_file(".aws/config",
               "[default]\nsso_session = my-sso\nsso_account_id = 1\nsso_role_name = r\n"
               "[sso-session my-sso]\nsso_region = us-east-1\nsso_start_url = https://x\n");
    /* Two minutes left on the access token, and a refresh token. */
    write_file(SSO_SESSION_FILE, "{\"accessToken\":\"old\",\"expiresAt\":\"2024-03-01T00:02:00Z\","
                                 "\"clientId\":\"cid\",\"clientSecret\":\"csecret\","
                                 "\"refreshToken\":\"rt-1\",\"registrationExpiresAt\":"
                                 "\"2099-01-01T00:00:00Z\"}");
    fake_sts_set_refresh_token(g_sts, "rt-1");
    ddb_client_options o = opts();
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
    ddb__credentials c;
    ck_assert_msg(ddb__cred_get(p, &c, NULL, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.access_key_id, "SSOAKID1");
    ddb__credentials_cleanup(&c);
    ck_assert_int_eq(fake_sts_counts_get(g_sts).oidc, 1);
    /* The new token went back into the cache, with its expiry on the client's clock. */
    char *text = ddb__read_small_file(home_path(SSO_SESSION_FILE), 65536);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strstr(text, "sso-refreshed-1") && strstr(text, "2024-03-01T01:00:00Z"), "%s",
                  text);
    free(text);
    ddb__cred_provider_free(p);
    /* An expired token whose refresh is refused: the error says both. */
    write_file(SSO_SESSION_FILE, "{\"accessToken\":\"old\",\"expiresAt\":\"2020-01-01T00:00:00Z\","
                                 "\"clientId\":\"cid\",\"clientSecret\":\"csecret\","
                                 "\"refreshToken\":\"rt-revoked\"}");
    p = ddb__cred_provider_new(&o, NULL, clock, &err);
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), DDB_ECREDENTIALS);
    ck_assert_msg(strstr(err.message, "has expired") &&
                      strstr(err.message, "refreshing the SSO token failed (HTTP 400)"),
                  "%s", err.message);
    ck_assert_ptr_null(strstr(err.message, "csecret"));
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}
END_TEST

START_TEST(sso_bad_days)
{
    write_file(".aws/config",
               "[default]\nsso_session = my-sso\nsso_account_id = 1\nsso_role_name = r\n"
               "[sso-session my-sso]\nsso_region = us-east-1\nsso_start_url = https://x\n"
               "[profile half]\nsso_session = my-sso\n"
               "[profile nosession]\nsso_session = other\nsso_account_id = 1\nsso_role_name = r\n");
    ddb_client_options o = opts();
    expect_error(&o, DDB_ECREDENTIALS, "sso of profile 'default': no cached SSO token");
    write_file(SSO_SESSION_FILE, "{\"accessToken\":\"t\",\"expiresAt\":\"2020-01-01T00:00:00Z\"}");
    expect_error(&o, DDB_ECREDENTIALS, "the SSO session has expired (at 2020-01-01T00:00:00Z)");
    write_file(SSO_SESSION_FILE, "{not json");
    expect_error(&o, DDB_ECREDENTIALS, "is malformed");
    write_file(SSO_SESSION_FILE, "{\"accessToken\":\"stale\",\"expiresAt\":\"2099-01-01T00:00:00Z\"}");
    fake_sts_set_sso_token(g_sts, "fresh");
    expect_error(&o, DDB_ECREDENTIALS, "GetRoleCredentials failed (HTTP 401): Session token not "
                                       "found or invalid; run 'aws sso login'");
    o.profile = "half";
    expect_error(&o, DDB_ECREDENTIALS, "incomplete");
    o.profile = "nosession";
    expect_error(&o, DDB_ECREDENTIALS, "sso-session 'other' not found");
}
END_TEST

/* ---------------------------------------------------------------- container, security */

START_TEST(container_host_must_resolve_to_allowed_addresses)
{
    ddb_client_options o = opts();
    char url[256];
    /* The old prefix check took "127." for a loopback address. */
    snprintf(url, sizeof url, "http://127.evil.example:%s/container/creds",
             strrchr(fake_meta_url(g_meta), ':') + 1);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Bearer secret-token", 1);
    expect_error(&o, DDB_ECREDENTIALS, "container: the host '127.evil.example'");
    /* User info that makes a URL look local. */
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1@198.51.100.7/creds", 1);
    expect_error(&o, DDB_ECREDENTIALS, "user info");
    /* Link-local, but not one of the ECS/EKS addresses. */
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.170.3/creds", 1);
    expect_error(&o, DDB_ECREDENTIALS, "resolves to 169.254.170.3");
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://[fd00:ec2::24]/creds", 1);
    expect_error(&o, DDB_ECREDENTIALS, "resolves to fd00:ec2::24");
    ck_assert_int_eq(fake_meta_counts_get(g_meta).requests, 0);
    /* The allowed ones pass the check (no request made here). */
    char *pin = NULL;
    ddb_error err;
    const char *ok[] = { "http://169.254.170.2/v2/credentials/x", "http://169.254.170.23/v1/creds",
                         "http://[fd00:ec2::23]/v1/creds", "http://127.0.0.2:9/x", "http://[::1]/x",
                         "https://creds.example.com/x" };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ck_assert_msg(ddb__container_url_check(ok[i], &pin, &err) == 0, "%s: %s", ok[i], err.message);
        ck_assert_ptr_null(pin); /* numeric hosts and https need no pinning */
    }
    /* A name is pinned to the loopback addresses it was checked with. */
    ck_assert_int_eq(ddb__container_url_check("http://localhost:8080/x", &pin, &err), 0);
    ck_assert_ptr_nonnull(pin);
    ck_assert_ptr_nonnull(strstr(pin, "localhost:8080:"));
    free(pin);
    /* A token with a line break is refused rather than sent. */
    char good[256];
    snprintf(good, sizeof good, "%s/container/creds", fake_meta_url(g_meta));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", good, 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Bearer x\r\nX-Injected: 1", 1);
    expect_error(&o, DDB_ECREDENTIALS, "line break");
    ck_assert_int_eq(fake_meta_counts_get(g_meta).requests, 0);
}
END_TEST

START_TEST(eks_pod_identity)
{
    /* EKS Pod Identity: a full URI and a token file the agent rotates; the fake on
     * 127.0.0.1 stands in for 169.254.170.23. */
    char url[256];
    snprintf(url, sizeof url, "%s/container/creds", fake_meta_url(g_meta));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", home_path("eks-token"), 1);
    ddb_client_options o = opts();
    expect_error(&o, DDB_ECREDENTIALS, "container: cannot read the authorization token file");
    write_file("eks-token", "pod-token-1\n");
    fake_meta_set_container_token(g_meta, "pod-token-1");
    expect(&o, "CONTAINERAKID1", NULL, "container");
    write_file("eks-token", "pod-token-2");
    fake_meta_set_container_token(g_meta, "pod-token-2");
    expect(&o, "CONTAINERAKID2", NULL, "container");
}
END_TEST

/* ---------------------------------------------------------------- settings */

START_TEST(region_is_checked_before_any_url)
{
    ddb_error err;
    setenv("AWS_REGION", "x@127.0.0.1:9#", 1);
    ddb_client_options o = opts();
    o.access_key_id = "A";
    o.secret_access_key = "B";
    ck_assert_ptr_null(ddb_client_new(&o, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "not a valid region name"));
    const char *bad[] = { "-us", "us-", "a.b", "us east", "", "a/b" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!ddb__region_valid(bad[i]), "%s", bad[i]);
    ck_assert(ddb__region_valid("us-gov-west-1"));
    ck_assert(ddb__region_valid("local"));
    /* From a profile too. */
    unsetenv("AWS_REGION");
    write_file(".aws/config", "[default]\nregion = evil.example/\n");
    ck_assert_ptr_null(ddb_client_new(&o, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
}
END_TEST

START_TEST(endpoint_is_parsed_as_a_url)
{
    ddb_error err;
    ddb_client_options o = opts();
    o.access_key_id = "A";
    o.secret_access_key = "B";
    o.region = "us-east-1";
    o.endpoint = "http://user:pw@127.0.0.1:9/";
    ck_assert_ptr_null(ddb_client_new(&o, &err));
    ck_assert_ptr_nonnull(strstr(err.message, "user info"));
    o.endpoint = "http://127.0.0.1:9/?x=1";
    ck_assert_ptr_null(ddb_client_new(&o, &err));
    o.endpoint = "ftp://127.0.0.1/";
    ck_assert_ptr_null(ddb_client_new(&o, &err));
    o.endpoint = "http://[::1]:8000";
    ddb_client *c = ddb_client_new(&o, &err);
    ck_assert_msg(c != NULL, "%s", err.message);
    ddb_client_free(c);
    /* A named profile that does not exist stops the client. */
    o.endpoint = NULL;
    setenv("AWS_PROFILE", "typo", 1);
    ck_assert_ptr_null(ddb_client_new(&o, &err));
    ck_assert_int_eq(err.code, DDB_ECREDENTIALS);
    ck_assert_ptr_nonnull(strstr(err.message, "profile 'typo' not found"));
}
END_TEST

START_TEST(user_agent_names_dynalock)
{
    ddb_error err;
    ddb_client_options o = opts();
    o.endpoint = "http://127.0.0.1:9";
    ddb_client *c = ddb_client_new(&o, &err);
    ck_assert_ptr_nonnull(c);
    ddb__credentials cred = { .access_key_id = "A", .secret_access_key = "B" };
    ddb__signed sg;
    ck_assert_int_eq(ddb__client_sign(c, "GetItem", "{}", 2, &cred, 1700000000, &sg, &err), 0);
    bool found = false;
    for (size_t i = 0; i < sg.n_lines; i++)
        if (strncmp(sg.lines[i], "User-Agent: dynalock/", 21) == 0 && sg.lines[i][21])
            found = true;
    ck_assert(found);
    ddb__signed_cleanup(&sg);
    ddb_client_free(c);
}
END_TEST

static void endpoint_is(const char *service, const char *region, const char *want)
{
    ddb__config *cfg = ddb__config_load();
    ck_assert_ptr_nonnull(cfg);
    char *url = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb__config_endpoint(cfg, "default", service, region, &url, &err), 0);
    ck_assert_str_eq(url, want);
    free(url);
    ddb__config_free(cfg);
}

START_TEST(endpoints_by_partition_fips_dualstack)
{
    unsetenv("AWS_ENDPOINT_URL_STS");
    unsetenv("AWS_ENDPOINT_URL_SSO");
    endpoint_is("DynamoDB", "eu-west-1", "https://dynamodb.eu-west-1.amazonaws.com");
    endpoint_is("DynamoDB", "cn-north-1", "https://dynamodb.cn-north-1.amazonaws.com.cn");
    endpoint_is("DynamoDB", "us-iso-east-1", "https://dynamodb.us-iso-east-1.c2s.ic.gov");
    endpoint_is("DynamoDB", "us-isob-east-1", "https://dynamodb.us-isob-east-1.sc2s.sgov.gov");
    endpoint_is("DynamoDB", "local", "http://localhost:8000");
    endpoint_is("STS", "ap-south-1", "https://sts.ap-south-1.amazonaws.com");
    endpoint_is("SSO", "eu-west-1", "https://portal.sso.eu-west-1.amazonaws.com");
    setenv("AWS_USE_FIPS_ENDPOINT", "true", 1);
    endpoint_is("DynamoDB", "us-east-1", "https://dynamodb-fips.us-east-1.amazonaws.com");
    endpoint_is("DynamoDB", "us-gov-west-1", "https://dynamodb.us-gov-west-1.amazonaws.com");
    setenv("AWS_USE_DUALSTACK_ENDPOINT", "true", 1);
    endpoint_is("DynamoDB", "us-east-1", "https://dynamodb-fips.us-east-1.api.aws");
    unsetenv("AWS_USE_FIPS_ENDPOINT");
    endpoint_is("DynamoDB", "cn-north-1", "https://dynamodb.cn-north-1.api.amazonwebservices.com.cn");
    ddb__config *cfg = ddb__config_load();
    char *url = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb__config_endpoint(cfg, "default", "DynamoDB", "us-iso-east-1", &url, &err),
                     DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "aws-iso"));
    ddb__config_free(cfg);
    unsetenv("AWS_USE_DUALSTACK_ENDPOINT");
    /* Profile keys, the services section, the global variable and its override. */
    write_file(".aws/config", "[default]\nuse_fips_endpoint = true\nservices = local-svcs\n"
                              "endpoint_url = http://global.test:1\n"
                              "[services local-svcs]\nsts =\n  endpoint_url = http://sts.test:2\n");
    endpoint_is("STS", "us-east-1", "http://sts.test:2");
    endpoint_is("DynamoDB", "us-east-1", "http://global.test:1");
    setenv("AWS_ENDPOINT_URL", "http://env-global.test:3", 1);
    endpoint_is("STS", "us-east-1", "http://env-global.test:3");
    setenv("AWS_ENDPOINT_URL_STS", "http://env-sts.test:4", 1);
    endpoint_is("STS", "us-east-1", "http://env-sts.test:4");
    setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
    endpoint_is("STS", "us-east-1", "https://sts-fips.us-east-1.amazonaws.com");
}
END_TEST

/* The client's settings, resolved once: the CA bundle and max_attempts from the
 * environment over the profile. */
static ddb__settings settings_now(void)
{
    ddb__settings s;
    ddb_error err;
    ck_assert_int_eq(ddb__settings_resolve(NULL, &s, &err), 0);
    return s;
}

START_TEST(ca_bundle_and_max_attempts)
{
    ddb__settings s = settings_now();
    ck_assert_ptr_null(s.ca_bundle);
    ck_assert_int_eq(s.max_attempts, 0);
    ck_assert_str_eq(s.profile, "default");
    ck_assert(!s.profile_named && !s.profile_found);
    ddb__settings_cleanup(&s);
    write_file(".aws/config", "[default]\nca_bundle = /etc/corp-ca.pem\nmax_attempts = 7\n"
                              "region = eu-north-1\n");
    s = settings_now();
    ck_assert_str_eq(s.ca_bundle, "/etc/corp-ca.pem");
    ck_assert_int_eq(s.max_attempts, 7);
    ck_assert(s.profile_found);
    ck_assert_str_eq(s.region, "eu-north-1");
    ck_assert_str_eq(s.region_from, "profile");
    ck_assert_str_eq(s.endpoint, "https://dynamodb.eu-north-1.amazonaws.com");
    ddb__settings_cleanup(&s);
    setenv("AWS_CA_BUNDLE", "/env/ca.pem", 1);
    setenv("AWS_MAX_ATTEMPTS", "2", 1);
    s = settings_now();
    ck_assert_str_eq(s.ca_bundle, "/env/ca.pem");
    ck_assert_int_eq(s.max_attempts, 2);
    ddb__settings_cleanup(&s);
    setenv("AWS_MAX_ATTEMPTS", "many", 1);
    s = settings_now();
    ck_assert_int_eq(s.max_attempts, 0);
    ddb__settings_cleanup(&s);
}
END_TEST

/* ---------------------------------------------------------------- diagnostics */

START_TEST(no_credentials_lists_the_providers_tried)
{
    ddb_client_options o = opts();
    expect_error(&o, DDB_ECREDENTIALS, "no AWS credentials were found; tried: environment, web "
                                       "identity, profile 'default', container endpoint, instance "
                                       "metadata (disabled)");
    unsetenv("AWS_EC2_METADATA_DISABLED");
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1", 1);
    expect_error(&o, DDB_ECREDENTIALS, "instance metadata (http://127.0.0.1:1)");
}
END_TEST

START_TEST(first_use_is_logged_once)
{
    setenv("AWS_ACCESS_KEY_ID", "ENVAKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
    ddb_client_options o = opts();
    o.region = "eu-central-1";
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, NULL, NULL);
    ddb__credentials c;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ddb__cred_get(p, &c, NULL, NULL), 0);
        ddb__credentials_cleanup(&c);
    }
    ddb__cred_provider_free(p);
    const char *want = "dynalock.ddb.credentials credentials resolved source=environment "
                       "profile=default region=eu-central-1 "
                       "endpoint=https://dynamodb.eu-central-1.amazonaws.com";
    char *first = strstr(g_log, want);
    ck_assert_msg(first, "%s", g_log);
    ck_assert_ptr_null(strstr(first + strlen(want), "credentials resolved"));
    ck_assert_ptr_nonnull(strstr(first, "region_from=option"));
    /* No region anywhere: us-east-1, and the log says it was not configured. */
    g_log_len = 0;
    o.region = NULL;
    p = ddb__cred_provider_new(&o, NULL, NULL, NULL);
    ck_assert_int_eq(ddb__cred_get(p, &c, NULL, NULL), 0);
    ddb__credentials_cleanup(&c);
    ddb__cred_provider_free(p);
    ck_assert_msg(strstr(g_log, "region=us-east-1") &&
                      strstr(g_log, "region_from=default (no region configured)"), "%s", g_log);
}
END_TEST

/* Every provider, good and bad, at the most verbose level, with marker secrets: none
 * of them may appear in a log line or an error message. */
START_TEST(no_secret_in_logs_or_errors)
{
    static const char *const markers[] = { "MARKER-SECRET", "MARKER-TOKEN", "MARKER-WEB",
                                           "MARKER-SSO", "MARKER-PROC" };
    g_errors[0] = '\0';
    fake_sts_add_key(g_sts, "BASEAKID", "MARKER-SECRET-base");
    write_file("token", "MARKER-WEB-token");
    write_file("proc.sh", "#!/bin/sh\necho '{\"Version\":1,\"AccessKeyId\":\"PA\","
                          "\"SecretAccessKey\":\"MARKER-PROC-secret\",\"SessionToken\":"
                          "\"MARKER-PROC-token\"}'\n");
    char cfg[2048], proc[512];
    snprintf(proc, sizeof proc, "%s", home_path("proc.sh"));
    snprintf(cfg, sizeof cfg,
             "[profile base]\naws_access_key_id = BASEAKID\naws_secret_access_key = MARKER-SECRET-base\n"
             "aws_session_token = MARKER-TOKEN-base\n"
             "[profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\n"
             "[profile proc]\ncredential_process = %s\n"
             "[profile web]\nrole_arn = arn:aws:iam::1:role/w\nweb_identity_token_file = %s\n"
             "[profile sso]\nsso_session = my-sso\nsso_account_id = 1\nsso_role_name = r\n"
             "[sso-session my-sso]\nsso_region = us-east-1\nsso_start_url = https://x\n",
             proc, home_path("token"));
    write_file(".aws/config", cfg);
    write_file(SSO_SESSION_FILE, "{\"accessToken\":\"MARKER-SSO-access\",\"expiresAt\":\"2099-01-01T00:00:00Z\"}");
    fake_sts_set_sso_token(g_sts, "MARKER-SSO-access");
    fake_sts_set_expiration(g_sts, T0_MS + 10 * 60 * 1000);
    const char *profiles[] = { "base", "role", "proc", "web", "sso" };
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        ddb_client_options o = opts();
        o.profile = profiles[i];
        ddb_error err;
        ddb_clock *clock = ddb_fake_clock_new(T0_MS);
        ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
        ck_assert_ptr_nonnull(p);
        ddb__credentials c;
        ck_assert_msg(ddb__cred_get(p, &c, NULL, &err) == 0, "%s: %s", profiles[i], err.message);
        ddb__credentials_cleanup(&c);
        /* A refresh that fails is logged (warn) while the old ones still work. */
        fake_sts_set_error(g_sts, "ExpiredTokenException", 400);
        ddb_fake_clock_advance(clock, 6 * 60 * 1000);
        ddb_error_clear(&err);
        ddb__cred_get(p, &c, NULL, &err);
        ddb__credentials_cleanup(&c);
        size_t l = strlen(g_errors);
        snprintf(g_errors + l, sizeof g_errors - l, "%s\n", err.message);
        fake_sts_set_error(g_sts, NULL, 0);
        ddb__cred_provider_free(p);
        ddb_clock_unref(clock);
    }
    /* The bad days, with the same markers about. */
    ddb_client_options o = opts();
    o.profile = "web";
    fake_sts_set_web_token(g_sts, "other");
    expect_error(&o, DDB_ECREDENTIALS, "InvalidIdentityToken");
    fake_sts_set_sso_token(g_sts, "other");
    o.profile = "sso";
    expect_error(&o, DDB_ECREDENTIALS, "HTTP 401");
    ck_assert_ptr_nonnull(strstr(g_log, "credentials resolved"));
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        ck_assert_msg(!strstr(g_log, markers[i]), "%s in the log:\n%s", markers[i], g_log);
        ck_assert_msg(!strstr(g_errors, markers[i]), "%s in an error:\n%s", markers[i], g_errors);
    }
}
END_TEST

/* A one-connection server on loopback for the providers' request itself: it reads a
 * request, then sets `cancel` and holds the connection, or answers `answer_len` bytes. */
typedef struct raw_server {
    int fd, port;
    ddb_cancel *cancel;
    size_t answer_len;
    pthread_t thread;
} raw_server;

static void *raw_server_main(void *arg)
{
    raw_server *r = arg;
    int c = accept(r->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    char buf[4096];
    size_t len = 0;
    ssize_t n;
    while ((n = recv(c, buf + len, sizeof buf - 1 - len, 0)) > 0) {
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n"))
            break;
    }
    if (r->cancel) {
        ddb_cancel_set(r->cancel);
    } else {
        char head[128];
        int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
                          r->answer_len);
        (void)!send(c, head, (size_t)hl, MSG_NOSIGNAL);
        char *body = malloc(r->answer_len);
        memset(body, '{', r->answer_len);
        (void)!send(c, body, r->answer_len, MSG_NOSIGNAL);
        free(body);
    }
    /* Until the client leaves. */
    while (recv(c, buf, sizeof buf, 0) > 0)
        ;
    close(c);
    return NULL;
}

static void raw_server_start(raw_server *r)
{
    r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(r->fd, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ck_assert_int_eq(bind(r->fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(r->fd, 1), 0);
    socklen_t al = sizeof a;
    ck_assert_int_eq(getsockname(r->fd, (struct sockaddr *)&a, &al), 0);
    r->port = ntohs(a.sin_port);
    ck_assert_int_eq(pthread_create(&r->thread, NULL, raw_server_main, r), 0);
}

static void raw_server_stop(raw_server *r)
{
    pthread_join(r->thread, NULL);
    close(r->fd);
}

START_TEST(provider_request_cancelled_in_flight_or_over_its_cap)
{
    /* A metadata endpoint that never answers: the token ends the request at once, long
     * before its 2 s timeout, and the provider sees why. */
    ddb_cancel *k = ddb_cancel_new();
    raw_server r = { .cancel = k };
    raw_server_start(&r);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/latest/api/token", r.port);
    ddb_error err;
    ddb__cred_ctx ctx = { .cancel = k, .err = &err };
    ddb__cred_http_req req = { .method = "PUT", .url = url, .metadata = true };
    char *body = NULL, terr[256];
    ck_assert_int_eq(ddb__cred_http(&ctx, &req, &body, terr, sizeof terr), 0);
    ck_assert_ptr_null(body);
    ck_assert_msg(strstr(terr, "cancelled in flight"), "%s", terr);
    raw_server_stop(&r);
    ddb_cancel_unref(k);

    /* An answer larger than a provider reads is refused, not cut. */
    raw_server big = { .answer_len = 64 * 1024 + 1 };
    raw_server_start(&big);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/creds", big.port);
    ctx.cancel = NULL;
    req = (ddb__cred_http_req){ .method = "GET", .url = url };
    ck_assert_int_eq(ddb__cred_http(&ctx, &req, &body, terr, sizeof terr), 0);
    ck_assert_ptr_null(body);
    ck_assert_msg(strstr(terr, "larger than the 65536 bytes allowed"), "%s", terr);
    raw_server_stop(&big);
}
END_TEST

static void *set_later(void *arg)
{
    ddb_cancel_set(arg);
    return NULL;
}

START_TEST(credential_process_cancelled_while_it_runs)
{
    /* A command that would run for half a minute; the token, set from another thread,
     * ends the wait on the process's pipes through its eventfd and kills it. */
    ddb_cancel *k = ddb_cancel_new();
    ddb_error err;
    ddb__cred_ctx ctx = { .cancel = k, .err = &err };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, set_later, k), 0);
    ddb__credentials c;
    int rc = ddb__cred_process(&ctx, "default", "exec sleep 30", &c);
    pthread_join(t, NULL);
    ck_assert_int_eq(rc, DDB_ECANCELED);
    ck_assert_msg(strstr(err.message, "cancelled"), "%s", err.message);
    ddb_cancel_unref(k);
}
END_TEST

static Suite *providers_suite(void)
{
    Suite *s = suite_create("credential_providers");
    TCase *tc = tcase_create("providers");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, web_identity_from_environment);
    tcase_add_test(tc, provider_request_cancelled_in_flight_or_over_its_cap);
    tcase_add_test(tc, web_identity_from_profile);
    tcase_add_test(tc, web_identity_bad_days);
    tcase_add_test(tc, web_identity_refreshes_on_the_clock);
    tcase_add_test(tc, sts_transient_errors_are_retried);
    tcase_add_test(tc, assume_role_with_source_profile);
    tcase_add_test(tc, assume_role_chain_and_credential_source);
    tcase_add_test(tc, assume_role_bad_days);
    tcase_add_test(tc, credential_process_good_and_refreshed);
    tcase_add_test(tc, credential_process_bad_days);
    tcase_add_test(tc, credential_process_cancelled_while_it_runs);
    tcase_add_test(tc, sso_session_and_legacy);
    tcase_add_test(tc, sso_refreshes_on_the_clock);
    tcase_add_test(tc, sso_token_refreshed_near_its_expiry);
    tcase_add_test(tc, sso_bad_days);
    tcase_add_test(tc, container_host_must_resolve_to_allowed_addresses);
    tcase_add_test(tc, eks_pod_identity);
    suite_add_tcase(s, tc);
    tc = tcase_create("settings");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, region_is_checked_before_any_url);
    tcase_add_test(tc, endpoint_is_parsed_as_a_url);
    tcase_add_test(tc, endpoints_by_partition_fips_dualstack);
    tcase_add_test(tc, user_agent_names_dynalock);
    tcase_add_test(tc, ca_bundle_and_max_attempts);
    tcase_add_test(tc, no_credentials_lists_the_providers_tried);
    tcase_add_test(tc, first_use_is_logged_once);
    tcase_add_test(tc, no_secret_in_logs_or_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(providers_suite());
}
