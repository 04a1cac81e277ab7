/*
 * Parameters: parsing, presets, loading from the environment and the command line.
 */
#include "config.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core.h"
#include "src/param.h"

extern char **environ;

/* Values set by convoy_param_preset(), applied by the next convoy__params_load. */
typedef struct preset {
    char *name, *value;
    struct preset *next;
} preset_t;
static pthread_mutex_t preset_lock = PTHREAD_MUTEX_INITIALIZER;
static preset_t *presets;

const char *convoy__param_type_name(convoy__param_type_t type)
{
    switch (type) {
    case CONVOY__PARAM_INT: return "int";
    case CONVOY__PARAM_SIZE: return "size";
    case CONVOY__PARAM_DOUBLE: return "real";
    case CONVOY__PARAM_BOOL: return "bool";
    case CONVOY__PARAM_STRING: return "string";
    case CONVOY__PARAM_CHOICE: return "choice";
    }
    return "?";
}

const char *convoy__param_source_name(convoy__param_source_t source)
{
    static const char *const names[] = {"default", "preset", "environment", "option"};
    return names[source];
}

void convoy__param_foreach_table(void (*fn)(const char *owner, const convoy__param_def_t *table,
                                            void *arg),
                                 void *arg)
{
    fn("core", convoy__core_params, arg);
    for (int i = 0; convoy__sched_components[i] != NULL; i++)
        if (convoy__sched_components[i]->params != NULL)
            fn(convoy__sched_components[i]->name, convoy__sched_components[i]->params, arg);
    for (int i = 0; convoy__device_components[i] != NULL; i++)
        if (convoy__device_components[i]->params != NULL)
            fn(convoy__device_components[i]->name, convoy__device_components[i]->params, arg);
}

typedef struct find_arg {
    const char *name;
    const convoy__param_def_t *def;
    const char *owner;
} find_arg_t;

static void find_in_table(const char *owner, const convoy__param_def_t *table, void *arg)
{
    find_arg_t *fa = arg;
    for (const convoy__param_def_t *d = table; d->name != NULL && fa->def == NULL; d++)
        if (strcmp(d->name, fa->name) == 0) {
            fa->def = d;
            fa->owner = owner;
        }
}

const convoy__param_def_t *convoy__param_find_def(const char *name, const char **owner_p)
{
    find_arg_t fa = {.name = name};
    convoy__param_foreach_table(find_in_table, &fa);
    if (fa.def != NULL && owner_p != NULL)
        *owner_p = fa.owner;
    return fa.def;
}

/* "an integer in [1, 4096]" and the like, for error messages. */
static void describe_allowed(const convoy__param_def_t *def, char *buf, size_t len)
{
    switch (def->type) {
    case CONVOY__PARAM_INT:
        snprintf(buf, len, "an integer in [%.0f, %.0f]", def->min, def->max);
        break;
    case CONVOY__PARAM_SIZE:
        snprintf(buf, len,
                 "a size in bytes in [%.0f, %.0f], with an optional K, M, G, T or P suffix",
                 def->min, def->max);
        break;
    case CONVOY__PARAM_DOUBLE:
        snprintf(buf, len, "a number in [%g, %g]", def->min, def->max);
        break;
    case CONVOY__PARAM_BOOL:
        snprintf(buf, len, "one of 0, 1, yes, no, on, off, true, false");
        break;
    case CONVOY__PARAM_CHOICE: {
        size_t o = (size_t)snprintf(buf, len, "one of ");
        for (const char *c = def->choices; *c != '\0' && o + 3 < len; c++)
            o += (size_t)snprintf(buf + o, len - o, *c == '|' ? ", " : "%c", *c);
        break;
    }
    case CONVOY__PARAM_STRING: snprintf(buf, len, "any text"); break;
    }
}

static convoy_status_t bad_value(const convoy__param_def_t *def, const char *text, const char *why)
{
    char allowed[256];
    describe_allowed(def, allowed, sizeof(allowed));
    return convoy__error(NULL, CONVOY_ERR_INVALID, "parameter '%s': value '%s' %s; allowed: %s",
                         def->name, text, why, allowed);
}

static int parse_bool(const char *t, int64_t *out)
{
    static const char *const yes[] = {"1", "yes", "on", "true"};
    static const char *const no[] = {"0", "no", "off", "false"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(t, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(t, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

/* The index of t among choices ("a|b|c"), or -1. */
static int choice_index(const char *choices, const char *t)
{
    size_t tl = strlen(t);
    int index = 0;
    for (const char *c = choices; *c != '\0'; index++) {
        const char *end = strchr(c, '|');
        size_t cl = end != NULL ? (size_t)(end - c) : strlen(c);
        if (cl == tl && strncmp(c, t, tl) == 0)
            return index;
        if (end == NULL)
            break;
        c = end + 1;
    }
    return -1;
}

convoy_status_t convoy__param_parse(const convoy__param_def_t *def, const char *text,
                                    convoy__param_value_t *out)
{
    convoy__param_value_t v = {.def = def};
    char *end = NULL;
    if (text == NULL)
        return bad_value(def, "(null)", "is missing");
    switch (def->type) {
    case CONVOY__PARAM_INT: {
        errno = 0;
        long long x = strtoll(text, &end, 10);
        if (end == text || *end != '\0')
            return bad_value(def, text, "is not an integer");
        /* An integer too large for 64 bits is still an integer: say it is out of range. */
        if (errno == ERANGE || (double)x < def->min || (double)x > def->max)
            return bad_value(def, text, "is out of range");
        v.v.i = x;
        break;
    }
    case CONVOY__PARAM_SIZE: {
        errno = 0;
        if (text[0] == '-')
            return bad_value(def, text, "is negative");
        unsigned long long x = strtoull(text, &end, 10);
        if (end == text)
            return bad_value(def, text, "is not a size");
        int too_big = errno == ERANGE;
        /* The units convoy-info prints bounds in (tools/convoy_info.c): each accepted. */
        static const char units[] = "KMGTP";
        const char *unit = *end != '\0' ? strchr(units, toupper((unsigned char)*end)) : NULL;
        unsigned long long mult = 1;
        if (unit != NULL) {
            mult = 1ull << (10 * (1 + (unit - units)));
            end++;
            if (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0)
                end += strlen(end);
        }
        if (*end != '\0')
            return bad_value(def, text, "has an unknown unit");
        if (too_big || x > UINT64_MAX / mult)
            return bad_value(def, text, "is out of range");
        x *= mult;
        if ((double)x < def->min || (double)x > def->max)
            return bad_value(def, text, "is out of range");
        v.v.i = (int64_t)x;
        break;
    }
    case CONVOY__PARAM_DOUBLE: {
        errno = 0;
        double x = strtod(text, &end);
        if (end == text || *end != '\0' || errno == ERANGE || !isfinite(x))
            return bad_value(def, text, "is not a number");
        if (x < def->min || x > def->max)
            return bad_value(def, text, "is out of range");
        v.v.d = x;
        break;
    }
    case CONVOY__PARAM_BOOL:
        if (parse_bool(text, &v.v.i) != 0)
            return bad_value(def, text, "is not a boolean");
        break;
    case CONVOY__PARAM_CHOICE:
        if ((v.v.i = choice_index(def->choices, text)) < 0)
            return bad_value(def, text, "is not a known choice");
        break;
    case CONVOY__PARAM_STRING: break;
    }
    if (def->check != NULL) {
        convoy_status_t st = def->check(def, text);
        if (st != CONVOY_SUCCESS)
            return st;
    }
    if (out != NULL) {
        out->def = def;
        out->v = v.v;
    }
    return CONVOY_SUCCESS;
}

static convoy_status_t unknown_name(const char *name, const char *where)
{
    return convoy__error(NULL, CONVOY_ERR_NOT_FOUND,
                         "unknown parameter '%s' (from %s); convoy-info lists them all", name,
                         where);
}

convoy_status_t convoy_param_preset(const char *name, const char *value)
{
    if (name == NULL || value == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID,
                             "convoy_param_preset: name and value "
                             "must not be NULL");
    const convoy__param_def_t *def = convoy__param_find_def(name, NULL);
    if (def == NULL)
        return unknown_name(name, "convoy_param_preset");
    convoy_status_t st = convoy__param_parse(def, value, NULL);
    if (st != CONVOY_SUCCESS)
        return st;
    preset_t *p = malloc(sizeof(*p));
    char *n = strdup(name), *v = strdup(value);
    if (p == NULL || n == NULL || v == NULL) {
        free(p);
        free(n);
        free(v);
        return convoy__error(NULL, CONVOY_ERR_NOMEM, "out of memory storing preset '%s'", name);
    }
    p->name = n;
    p->value = v;
    pthread_mutex_lock(&preset_lock);
    p->next = presets;
    presets = p;
    pthread_mutex_unlock(&preset_lock);
    return CONVOY_SUCCESS;
}

void convoy_param_preset_clear(void)
{
    pthread_mutex_lock(&preset_lock);
    preset_t *p = presets;
    presets = NULL;
    pthread_mutex_unlock(&preset_lock);
    while (p != NULL) {
        preset_t *next = p->next;
        free(p->name);
        free(p->value);
        free(p);
        p = next;
    }
}

typedef struct count_arg {
    convoy__params_t *params;
    int fill;
} count_arg_t;

static void add_table(const char *owner, const convoy__param_def_t *table, void *arg)
{
    count_arg_t *ca = arg;
    for (const convoy__param_def_t *d = table; d->name != NULL; d++) {
        if (ca->fill) {
            convoy__param_value_t *v = &ca->params->values[ca->params->count];
            v->def = d;
            v->owner = owner;
        }
        ca->params->count++;
    }
}

static convoy__param_value_t *find_value(convoy__params_t *params, const char *name)
{
    for (int i = 0; i < params->count; i++)
        if (strcmp(params->values[i].def->name, name) == 0)
            return &params->values[i];
    return NULL;
}

/* Parse text into v (keeping the old value on error); where names the source. */
static convoy_status_t set_value(convoy__param_value_t *v, const char *text,
                                 convoy__param_source_t source, const char *where)
{
    convoy__param_value_t parsed = *v;
    convoy_status_t st = convoy__param_parse(v->def, text, &parsed);
    if (st != CONVOY_SUCCESS) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
        return convoy__error(NULL, st, "%s (from %s)", msg, where);
    }
    char *copy = strdup(text);
    if (copy == NULL)
        return convoy__error(NULL, CONVOY_ERR_NOMEM,
                             "out of memory storing the value of parameter '%s' (from %s)",
                             v->def->name, where);
    free(v->text);
    *v = parsed;
    v->text = copy;
    v->source = source;
    return CONVOY_SUCCESS;
}

/* "batch_max_tasks" -> "CONVOY_BATCH_MAX_TASKS" */
static void env_name(const char *name, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "CONVOY_");
    for (; *name != '\0' && o + 1 < len; name++)
        buf[o++] = (char)toupper((unsigned char)*name);
    buf[o] = '\0';
}

static convoy_status_t load_presets(convoy__params_t *params)
{
    convoy_status_t st = CONVOY_SUCCESS;
    pthread_mutex_lock(&preset_lock);
    /* The list is newest first: apply it oldest first so the newest wins. */
    int n = 0;
    for (preset_t *p = presets; p != NULL; p = p->next)
        n++;
    for (int k = n - 1; k >= 0 && st == CONVOY_SUCCESS; k--) {
        preset_t *p = presets;
        for (int j = 0; j < k; j++)
            p = p->next;
        convoy__param_value_t *v = find_value(params, p->name);
        st = v != NULL ? set_value(v, p->value, CONVOY__FROM_PRESET, "convoy_param_preset")
                       : unknown_name(p->name, "convoy_param_preset");
    }
    pthread_mutex_unlock(&preset_lock);
    return st;
}

static convoy_status_t load_env(convoy__params_t *params)
{
    char name[128];
    for (int i = 0; i < params->count; i++) {
        env_name(params->values[i].def->name, name, sizeof(name));
        const char *text = getenv(name);
        if (text == NULL)
            continue;
        convoy_status_t st = set_value(&params->values[i], text, CONVOY__FROM_ENV, name);
        if (st != CONVOY_SUCCESS)
            return st;
    }
    /* A misspelt variable would otherwise be ignored without a word. */
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, "CONVOY_", 7) != 0)
            continue;
        int known = 0;
        for (int i = 0; i < params->count && !known; i++) {
            env_name(params->values[i].def->name, name, sizeof(name));
            size_t l = strlen(name);
            known = strncmp(*e, name, l) == 0 && (*e)[l] == '=';
        }
        if (!known)
            convoy__log_warn("ignoring environment variable %.*s: not a convoy parameter",
                             (int)strcspn(*e, "="), *e);
    }
    return CONVOY_SUCCESS;
}

/* load_argv's loop: consume --convoy-NAME=VALUE and --convoy-NAME VALUE (dashes in
 * NAME may be underscores); the other arguments go to kept[*out_p ...], in order. Only
 * av[0, argc) is read: a caller's argv need not have its NULL slot at argv[argc]. */
static convoy_status_t parse_argv(convoy__params_t *params, int argc, char **av, char **kept,
                                  int *out_p)
{
    int out = *out_p;
    for (int i = 1; i < argc; i++) {
        if (strncmp(av[i], "--convoy-", 9) != 0) {
            kept[out++] = av[i];
            continue;
        }
        char name[128];
        const char *arg = av[i] + 9;
        size_t nl = strcspn(arg, "=");
        if (nl == 0 || nl >= sizeof(name))
            return convoy__error(NULL, CONVOY_ERR_INVALID, "malformed option '%s'", av[i]);
        for (size_t k = 0; k < nl; k++)
            name[k] = arg[k] == '-' ? '_' : arg[k];
        name[nl] = '\0';
        const char *value;
        if (arg[nl] == '=') {
            value = arg + nl + 1;
        } else if (i + 1 >= argc) {
            return convoy__error(NULL, CONVOY_ERR_INVALID, "option '%s' needs a value", av[i]);
        } else if (strncmp(av[i + 1], "--", 2) == 0) {
            /* "--convoy-trace --convoy-sched=batch": a forgotten value, not a trace path
             * named "--convoy-sched=batch". Such a value can still be given with '='. */
            return convoy__error(NULL, CONVOY_ERR_INVALID,
                                 "option '%s' needs a value, but the next argument '%s' is an "
                                 "option (write %s=VALUE for a value starting with '--')",
                                 av[i], av[i + 1], av[i]);
        } else {
            value = av[++i];
        }
        convoy__param_value_t *v = find_value(params, name);
        if (v == NULL)
            return unknown_name(name, "the command line");
        char where[160];
        snprintf(where, sizeof(where), "option --convoy-%s", name);
        convoy_status_t st = set_value(v, value, CONVOY__FROM_OPTION, where);
        if (st != CONVOY_SUCCESS)
            return st;
    }
    *out_p = out;
    return CONVOY_SUCCESS;
}

/* Consume the --convoy-* options from argv, keeping the other arguments in order. They
 * are gathered aside and copied back only on success: on error argc and argv are left
 * as given. Only the argc entries given are read or written: when options were consumed
 * the freed entries, from the new argv[argc] on, are set to NULL; when none were, argv
 * is not written at all (its argv[argc] slot, if any, is not touched). */
static convoy_status_t load_argv(convoy__params_t *params, int *argc, char ***argv)
{
    if (argc == NULL || argv == NULL || *argv == NULL || *argc <= 1)
        return CONVOY_SUCCESS;
    char **av = *argv;
    for (int i = 0; i < *argc; i++)
        if (av[i] == NULL)
            return convoy__error(NULL, CONVOY_ERR_INVALID,
                                 "argv[%d] is NULL but argc is %d: argc must count the "
                                 "arguments before the first NULL",
                                 i, *argc);
    char **kept = malloc((size_t)*argc * sizeof(*kept));
    if (kept == NULL)
        return convoy__error(NULL, CONVOY_ERR_NOMEM, "out of memory for the arguments");
    kept[0] = av[0];
    int out = 1;
    convoy_status_t st = parse_argv(params, *argc, av, kept, &out);
    if (st == CONVOY_SUCCESS && out < *argc) {
        memcpy(av, kept, (size_t)out * sizeof(*av));
        for (int i = out; i < *argc; i++)
            av[i] = NULL;
        *argc = out;
    }
    free(kept);
    return st;
}

convoy_status_t convoy__params_load(convoy__params_t *params, int *argc, char ***argv)
{
    /* Empty before anything can fail, so that convoy__params_free is always safe. */
    *params = (convoy__params_t){.log_level = CONVOY__LOG_WARN};
    count_arg_t ca = {.params = params, .fill = 0};
    convoy__param_foreach_table(add_table, &ca);
    size_t n = (size_t)params->count;
    params->count = 0;
    params->values = calloc(n, sizeof(*params->values));
    if (params->values == NULL)
        return convoy__error(NULL, CONVOY_ERR_NOMEM, "out of memory for %zu parameters", n);
    ca.fill = 1;
    convoy__param_foreach_table(add_table, &ca);

    convoy_status_t st = CONVOY_SUCCESS;
    for (int i = 0; i < params->count && st == CONVOY_SUCCESS; i++) {
        st = set_value(&params->values[i], params->values[i].def->def, CONVOY__FROM_DEFAULT,
                       "the default");
        /* A default that does not parse is a bug in a table; running out of memory is not. */
        assert((st == CONVOY_SUCCESS || st == CONVOY_ERR_NOMEM) &&
               "a parameter's default must parse");
    }
    if (st == CONVOY_SUCCESS)
        st = load_presets(params);
    if (st == CONVOY_SUCCESS)
        st = load_env(params);
    if (st == CONVOY_SUCCESS)
        st = load_argv(params, argc, argv);
    if (st != CONVOY_SUCCESS) {
        convoy__params_free(params);
        return st;
    }
    params->log_level = (int)convoy__param_int(params, "verbose");
    return CONVOY_SUCCESS;
}

void convoy__params_free(convoy__params_t *params)
{
    for (int i = 0; params->values != NULL && i < params->count; i++)
        free(params->values[i].text);
    free(params->values);
    params->values = NULL;
    params->count = 0;
}

const convoy__param_value_t *convoy__param_lookup(const convoy__params_t *params, const char *name)
{
    const convoy__param_value_t *v = find_value((convoy__params_t *)params, name);
    assert(v != NULL && "parameter looked up by a name that no table declares");
    return v;
}

int64_t convoy__param_int(const convoy__params_t *params, const char *name)
{
    return convoy__param_lookup(params, name)->v.i;
}

size_t convoy__param_lane_share(const convoy__params_t *params, const char *name)
{
    return (size_t)convoy__param_int(params, name) / (size_t)convoy__param_int(params, "lanes");
}

double convoy__param_double(const convoy__params_t *params, const char *name)
{
    return convoy__param_lookup(params, name)->v.d;
}

const char *convoy__param_str(const convoy__params_t *params, const char *name)
{
    return convoy__param_lookup(params, name)->text;
}

convoy_status_t convoy_param_get(const convoy_context_t *ctx, const char *name, char *buf,
                                 size_t len)
{
    /* The context's last error is state apart from the context proper: a failed get
     * records there (casting const away) so convoy_last_error(ctx) tells why. */
    convoy_context_t *err_ctx = (convoy_context_t *)ctx;
    if (ctx == NULL || name == NULL || buf == NULL || len == 0)
        return convoy__error(err_ctx, CONVOY_ERR_INVALID,
                             "convoy_param_get: NULL argument (ctx %p, name %p, buf %p) or "
                             "len 0",
                             (const void *)ctx, (const void *)name, (void *)buf);
    const convoy__param_value_t *v = find_value((convoy__params_t *)&ctx->params, name);
    if (v == NULL)
        return convoy__error(err_ctx, CONVOY_ERR_NOT_FOUND,
                             "unknown parameter '%s' (from convoy_param_get); convoy-info lists "
                             "them all",
                             name);
    snprintf(buf, len, "%s", v->text);
    return CONVOY_SUCCESS;
}
