# Backends: each appends its sources (and, for optional ones, libraries,
# include directories and public headers) to the RELO_BACKEND_* lists.
list(APPEND RELO_BACKEND_SOURCES src/backend/host.c src/backend/sim.c)
