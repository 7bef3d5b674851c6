/* version_consumer.c: compiled against the installed headers, run against the installed
 * library: prints the version and exits 1 when the two disagree. */
#include <dynalock/ddb.h>
#include <dynalock/version.h>

#include <stdio.h>
#include <string.h>

#if !defined(DDB_VERSION_NUM) || DDB_VERSION_NUM < DDB_VERSION_ENCODE(0, 1, 0)
#error "dynalock/version.h is missing or older than 0.1.0"
#endif

int main(void)
{
    printf("%s\n", ddb_version());
    if (strcmp(ddb_version(), DDB_VERSION_STRING) != 0) {
        fprintf(stderr, "version_consumer: headers %s, library %s\n", DDB_VERSION_STRING,
                ddb_version());
        return 1;
    }
    return 0;
}
