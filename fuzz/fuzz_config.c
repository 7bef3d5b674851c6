/* fuzz_config.c: libFuzzer target for the reader of the shared AWS config file
 * (lib/ddb/config.c): any bytes as ~/.aws/config, then the lookups the client makes
 * (a profile's keys, a nested services value, the client's settings: region, endpoint,
 * CA bundle, attempts, retry mode). Nothing may
 * crash or leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "internal.h"

static char g_path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_path[0]) {
        snprintf(g_path, sizeof g_path, "/tmp/fuzz-config-%ld", (long)getpid());
        setenv("AWS_CONFIG_FILE", g_path, 1);
        setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/fuzz-credentials", 1);
        unsetenv("AWS_PROFILE");
        unsetenv("AWS_REGION");
        unsetenv("AWS_DEFAULT_REGION");
    }
    FILE *f = fopen(g_path, "w");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    ddb__config *cfg = ddb__config_load();
    if (!cfg)
        return 0;
    (void)ddb__config_problem(cfg);
    (void)ddb__config_has(cfg, DDB__SEC_PROFILE, "default");
    (void)ddb__config_get(cfg, DDB__SEC_PROFILE, "default", "region");
    (void)ddb__config_get(cfg, DDB__SEC_SSO_SESSION, "s", "sso_start_url");
    (void)ddb__config_get(cfg, DDB__SEC_SERVICES, "x", "dynamodb.endpoint_url");
    char *url = NULL;
    ddb_error err;
    ddb__config_endpoint(cfg, "default", "DynamoDB", "us-east-1", &url, &err);
    free(url);
    ddb__config_free(cfg);
    /* Everything a client's creation reads of it, at once: profile, region, endpoint,
     * CA bundle, attempts, retry mode. */
    ddb__settings set;
    if (ddb__settings_resolve(NULL, &set, &err) == 0)
        ddb__settings_cleanup(&set);
    return 0;
}
