/* version.c: the version of the library itself, which may differ from the headers a
 * program was compiled against (dynalock/version.h). */
#include "internal.h"

#include <dynalock/version.h>

const char *ddb_version(void)
{
    return DDB_VERSION_STRING;
}
