/* version_print.c: prints the version as each part of the build knows it, one
 * "source version" line each, for version.sh to compare; exits 1 when the macros of
 * dynalock/version.h disagree with one another. */
#include <dynalock/ddb.h>
#include <dynalock/version.h>
#include <fakedb/fakedb.h>

#include <stdio.h>
#include <string.h>

#define STR2(x) #x
#define STR(x) STR2(x)

#if DDB_VERSION_NUM != DDB_VERSION_MAJOR * 10000 + DDB_VERSION_MINOR * 100 + DDB_VERSION_PATCH
#error "DDB_VERSION_NUM does not encode MAJOR.MINOR.PATCH"
#endif

int main(void)
{
    const char *parts = STR(DDB_VERSION_MAJOR) "." STR(DDB_VERSION_MINOR) "." STR(DDB_VERSION_PATCH);
    printf("version.h:DDB_VERSION_STRING %s\n", DDB_VERSION_STRING);
    printf("version.h:MAJOR.MINOR.PATCH %s\n", parts);
    printf("ddb_version() %s\n", ddb_version());
    printf("fakedb_version() %s\n", fakedb_version());
    if (strcmp(parts, DDB_VERSION_STRING) != 0) {
        fprintf(stderr, "version.h: DDB_VERSION_STRING %s but MAJOR.MINOR.PATCH %s\n",
                DDB_VERSION_STRING, parts);
        return 1;
    }
    if (DDB_VERSION_NUM != DDB_VERSION_ENCODE(DDB_VERSION_MAJOR, DDB_VERSION_MINOR, DDB_VERSION_PATCH))
        return 1;
    return 0;
}
