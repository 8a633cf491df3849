/* version.c - the library's version, as built (ccomm/version.h). */
#include "ccomm/version.h"

const char *cc_version_string(void)
{
    return CC_VERSION_STRING;
}
