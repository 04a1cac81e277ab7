/*
 * convoy-info: the components (schedulers and devices, available or not and why), the
 * hardware topology, and every parameter with its default, current value and doc.
 * `convoy-info --markdown` prints the parameter tables for doc/reference.md.
 */
#include "config.h"

#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core.h"

static void print_table(const char *owner, const convoy__param_def_t *table, void *arg)
{
    const convoy_context_t *ctx = arg;
    for (const convoy__param_def_t *d = table; d->name != NULL; d++) {
        const convoy__param_value_t *v = ctx ? convoy__param_lookup(&ctx->params, d->name) : NULL;
        printf("  %-22s %-7s default %-8s current %-8s (%s, %s)\n      %s\n", d->name,
               convoy__param_type_name(d->type), d->def[0] ? d->def : "''",
               v ? (v->text[0] ? v->text : "''") : "-", owner,
               v ? convoy__param_source_name(v->source) : "not read", d->doc);
    }
}

/* 1048576 -> "1M": the largest power-of-1024 unit that divides the size. */
static const char *size_text(double bytes, char *buf, size_t len)
{
    static const char units[] = "KMGTP";
    double v = bytes;
    int u = -1;
    while (v >= 1024 && u < 4 && (double)(long long)(v / 1024) * 1024 == v) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%.0f", bytes);
    else
        snprintf(buf, len, "%.0f%c", v, units[u]);
    return buf;
}

static void markdown_table(const char *owner, const convoy__param_def_t *table, void *arg)
{
    (void)arg;
    printf("\n### %s\n\n| parameter (env var) | type | default | allowed | meaning |\n"
           "|---|---|---|---|---|\n",
           owner);
    for (const convoy__param_def_t *d = table; d->name != NULL; d++) {
        char env[96], allowed[160] = "";
        size_t o = (size_t)snprintf(env, sizeof(env), "CONVOY_");
        for (const char *c = d->name; *c && o + 1 < sizeof(env); c++)
            env[o++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
        env[o] = '\0';
        if (d->type == CONVOY__PARAM_CHOICE)
            snprintf(allowed, sizeof(allowed), "%s", d->choices);
        else if (d->type == CONVOY__PARAM_SIZE) {
            char lo[32], hi[32];
            snprintf(allowed, sizeof(allowed), "%s .. %s", size_text(d->min, lo, sizeof(lo)),
                     size_text(d->max, hi, sizeof(hi)));
        } else if (d->type == CONVOY__PARAM_INT || d->type == CONVOY__PARAM_DOUBLE)
            snprintf(allowed, sizeof(allowed), "%.10g .. %.10g", d->min, d->max);
        for (char *c = allowed; *c; c++)
            if (*c == '|')
                *c = '/';
        printf("| `%s` (`%s`) | %s | `%s` | %s | %s |\n", d->name, env,
               convoy__param_type_name(d->type), d->def, allowed, d->doc);
    }
}

/* Every component and whether it is available here, asked with the parameters a
 * program would get (defaults, CONVOY_* variables, the --convoy-* options of a copy of
 * argv): query() needs no context, so nothing is started. */
static void print_components(int argc, char **argv)
{
    printf("schedulers:\n");
    for (int i = 0; convoy__sched_components[i] != NULL; i++)
        printf("  %-8s priority %-3d %s\n", convoy__sched_components[i]->name,
               convoy__sched_components[i]->priority, convoy__sched_components[i]->doc);
    char **av = calloc((size_t)argc + 1, sizeof(*av));
    convoy__params_t params;
    if (av != NULL)
        memcpy(av, argv, (size_t)argc * sizeof(*av));
    int ac = argc;
    int loaded = av != NULL && convoy__params_load(&params, &ac, &av) == CONVOY_SUCCESS;
    printf("devices (asked in decreasing priority):\n");
    for (int i = 0; convoy__device_components[i] != NULL; i++) {
        const convoy__device_component_t *c = convoy__device_components[i];
        char why[512] = "";
        int n = loaded ? c->query(&params, why, sizeof(why)) : -1;
        if (!loaded)
            snprintf(why, sizeof(why), "%s", convoy_last_error(NULL));
        if (n > 0 && c->kind == CONVOY_DEVICE_CPU)
            printf("  %-8s priority %-3d available: %s  %s\n", c->name, c->priority, why, c->doc);
        else if (n > 0)
            printf("  %-8s priority %-3d available: %d device(s)  %s\n", c->name, c->priority, n,
                   c->doc);
        else
            printf("  %-8s priority %-3d not available: %s  (%s)\n", c->name, c->priority,
                   why[0] ? why : "unknown", c->doc);
    }
    if (loaded)
        convoy__params_free(&params);
    free(av);
}

static void print_topology(void)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        printf("topology: hwloc could not read it\n");
        return;
    }
    printf("topology: %d package(s), %d NUMA node(s), %d core(s), %d hardware thread(s)\n",
           hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE),
           hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE),
           hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE),
           hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
    hwloc_topology_destroy(topo);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--markdown") == 0) {
        convoy__param_foreach_table(markdown_table, NULL);
        return 0;
    }
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: convoy-info [--markdown] [--convoy-NAME=VALUE ...]\n"
               "Lists schedulers, devices, the topology and every parameter.\n");
        return 0;
    }
    printf("convoy %s\n", PACKAGE_VERSION);
    print_components(argc, argv);
    print_topology();
    /* Current values as a program would see them: defaults, environment, options. */
    convoy_context_t *ctx = NULL;
    convoy__params_t params;
    convoy_status_t st = convoy__params_load(&params, &argc, &argv);
    if (st != CONVOY_SUCCESS) {
        fprintf(stderr, "convoy-info: %s\n", convoy_last_error(NULL));
        return 1;
    }
    static convoy_context_t shell; /* only .params is read by print_table */
    shell.params = params;
    ctx = &shell;
    printf("parameters (current = defaults, then CONVOY_* variables, then options):\n");
    convoy__param_foreach_table(print_table, ctx);
    convoy__params_free(&params);
    return 0;
}
