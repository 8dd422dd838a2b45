/*
 * relo_version.h — the library's version, for compile-time and run-time
 * checks.
 */
#ifndef RELO_VERSION_H
#define RELO_VERSION_H

#define RELO_VERSION_MAJOR 0
#define RELO_VERSION_MINOR 1
#define RELO_VERSION_PATCH 0
#define RELO_VERSION_STRING "0.1.0"

#endif /* RELO_VERSION_H */
