/*
 * Parameters: every knob is declared once in a table (name, type, default, range or
 * choices, doc) which the environment parser, the command-line parser and convoy-info
 * all read. Internal to convoy.
 */
#ifndef CONVOY_PARAM_H
#define CONVOY_PARAM_H

#include <stddef.h>
#include <stdint.h>

#include "convoy.h"

typedef enum convoy__param_type {
    CONVOY__PARAM_INT,    /* a decimal integer in [min, max] */
    CONVOY__PARAM_SIZE,   /* bytes, with an optional K, M, G, T or P suffix (powers of 1024) */
    CONVOY__PARAM_DOUBLE, /* a real number in [min, max] */
    CONVOY__PARAM_BOOL,   /* 0/1, yes/no, on/off, true/false */
    CONVOY__PARAM_STRING, /* any text (a path, a list) */
    CONVOY__PARAM_CHOICE, /* one of choices, "a|b|c" */
} convoy__param_type_t;

typedef struct convoy__param_def {
    const char *name; /* lower case, no prefix; the env var is CONVOY_<NAME> */
    convoy__param_type_t type;
    const char *def;     /* the default, as text */
    double min, max;     /* for INT, SIZE and DOUBLE */
    const char *choices; /* for CHOICE */
    const char *doc;     /* one line; cites the measurement a default comes from */
    /* Validation beyond the type (a component's name), or NULL: records the error (a
     * message naming the parameter, the value and what is allowed) and returns it. */
    convoy_status_t (*check)(const struct convoy__param_def *def, const char *text);
} convoy__param_def_t;

/* Where a value came from, lowest precedence first. */
typedef enum convoy__param_source {
    CONVOY__FROM_DEFAULT,
    CONVOY__FROM_PRESET,
    CONVOY__FROM_ENV,
    CONVOY__FROM_OPTION,
} convoy__param_source_t;

typedef struct convoy__param_value {
    const convoy__param_def_t *def;
    const char *owner; /* "core" or the component's name */
    char *text;        /* the current value, as given */
    convoy__param_source_t source;
    union {
        int64_t i; /* INT, SIZE, BOOL; for CHOICE the index of the choice */
        double d;  /* DOUBLE */
    } v;
} convoy__param_value_t;

typedef struct convoy__params {
    convoy__param_value_t *values;
    int count;
    int log_level; /* 'verbose' as a convoy__log_level_t, read by each log call of the
                      context: cached here rather than looked up by name */
} convoy__params_t;

/* The core's own table (src/param_core.c). */
extern const convoy__param_def_t convoy__core_params[];

/* Check text against def; on success store the parsed value in *out (may be NULL).
 * On error the message names the parameter, the value and what is allowed. */
convoy_status_t convoy__param_parse(const convoy__param_def_t *def, const char *text,
                                    convoy__param_value_t *out);

/* Find a definition among every table known to the library. owner_p may be NULL. */
const convoy__param_def_t *convoy__param_find_def(const char *name, const char **owner_p);

/* Fill params from defaults, presets, the environment and argv (consuming the
 * --convoy-* options). On error params is left empty. */
convoy_status_t convoy__params_load(convoy__params_t *params, int *argc, char ***argv);
void convoy__params_free(convoy__params_t *params);

/* Look-ups; the name must exist (a missing one is a programming error: assert). */
const convoy__param_value_t *convoy__param_lookup(const convoy__params_t *params, const char *name);
int64_t convoy__param_int(const convoy__params_t *params, const char *name);
/* A size parameter that is a device's (device_cache, pageable_bounce_limit, write_behind)
 * as one lane of the device gets it: its value divided evenly by lanes. */
size_t convoy__param_lane_share(const convoy__params_t *params, const char *name);
double convoy__param_double(const convoy__params_t *params, const char *name);
const char *convoy__param_str(const convoy__params_t *params, const char *name);

const char *convoy__param_type_name(convoy__param_type_t type);
const char *convoy__param_source_name(convoy__param_source_t source);

/* Calls fn for every parameter table known to the library (core, then components). */
void convoy__param_foreach_table(void (*fn)(const char *owner, const convoy__param_def_t *table,
                                            void *arg),
                                 void *arg);

#endif /* CONVOY_PARAM_H */
