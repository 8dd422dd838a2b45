/*
 * base/version.c — the library's version at run time: the RELO_VERSION_STRING
 * this library was built with, which a program compiled against another
 * relo_version.h can compare with its own.
 */
#include "relo.h"

/* Contract in relo.h. */
const char *relo_version(void)
{
    return RELO_VERSION_STRING;
}
