/*
 * relo_version.h — the library's version, for compile-time and run-time
 * checks: these macros are the version a program was compiled against;
 * relo_version() (relo.h) returns the version of the library it runs with.
 */
#ifndef RELO_VERSION_H
#define RELO_VERSION_H

#define RELO_VERSION_MAJOR 0
#define RELO_VERSION_MINOR 1
#define RELO_VERSION_PATCH 0
#define RELO_VERSION_STRING "0.1.0"

#endif /* RELO_VERSION_H */
