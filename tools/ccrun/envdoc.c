/*
 * envdoc.c - `ccrun --env` (every CCOMM_* variable with the value in effect)
 * and `ccrun --env --markdown` (docs/env.md), both printed from the one
 * table of include/ccomm/env.h so that the docs cannot drift from the code.
 */
#include <stdio.h>
#include <string.h>

#include "ccomm/env.h"
#include "base/config.h"
#include "ccrun.h"

#define WRAP 96

/* Print `text` wrapped at WRAP columns, each line indented by `indent` spaces. */
static void print_wrapped(const char *text, int indent)
{
    const char *p = text;
    while (*p) {
        size_t room = WRAP - (size_t)indent, n = strlen(p);
        if (n > room) {
            n = room;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0) n = room; /* one long word */
        }
        printf("%*s%.*s\n", indent, "", (int)n, p);
        p += n;
        while (*p == ' ')
            p++;
    }
}

void ccrun_print_env(void)
{
    printf("ccomm reads these variables once, at the first call that needs them.\n"
           "\"in effect\" is what a program started from this environment would use.\n\n");
    /* The same check as the first init's: its error lines go to stderr. */
    if (cc__config_check() != CC_OK)
        printf("a program started from this environment fails its first init on the values "
               "that the errors above name; it shows their defaults as in effect below.\n\n");
    for (int i = 0; i < cc_env_count(); i++) {
        const cc_env_var_t *v = cc_env_at(i);
        const char *eff = cc_env_effective(v->name);
        printf("%s = %s%s%s\n", v->name, eff && *eff ? "" : "\"", eff ? eff : "",
               eff && *eff ? "" : "\"");
        char line[1024];
        snprintf(line, sizeof(line), "%s, default %s%s%s%s%s%s%s", v->type,
                 *v->default_value ? "" : "\"", v->default_value, *v->default_value ? "" : "\"",
                 !v->choices                ? ""
                 : !strcmp(v->type, "list") ? "; any of: "
                                            : "; one of: ",
                 v->choices ? v->choices : "",
                 (v->flags & CC_ENV_LAUNCHER) ? "; set by ccrun for each rank" : "",
                 (v->flags & CC_ENV_SECRET) ? "; secret (never printed)" : "");
        print_wrapped(line, 4);
        print_wrapped(v->help, 4);
        printf("\n");
    }
}

/* A table cell: pipes escaped so a help text cannot break the table. */
static void md_cell(const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '|')
            fputs("\\|", stdout);
        else
            putchar(*p);
    }
}

/* " One of: `a`, `b`." from the table's "a, b" (comma-separated ones for a list). */
static void md_choices(const cc_env_var_t *v)
{
    printf(" %s: `", !strcmp(v->type, "list") ? "Any of" : "One of");
    for (const char *p = v->choices; *p; p++) {
        if (p[0] == ',' && p[1] == ' ')
            fputs("`, `", stdout), p++;
        else
            putchar(*p);
    }
    printf("`.");
}

/* Which launcher init_from_env believes, and where it finds the store (lib/core/launcher.c). */
static void print_launchers_markdown(void)
{
    printf("\n## Launchers: who started the process, and where the store is\n\n"
           "`cc_comm_init_from_env` takes rank and size from the innermost launcher whose "
           "variables are present (the first row that matches), and logs its choice at info "
           "level (`launched by open mpi: rank 1 of 4, store ...`); two MPI runtimes that "
           "disagree are refused. A Slurm batch script (no `SLURM_STEP_ID`) is no launcher: "
           "mpirun inside it finds Open MPI's variables first, and a program it runs directly "
           "is a job of one.\n\n"
           "| order | launcher | rank, size from | store, when neither `CCOMM_STORE_ADDR` nor "
           "`MASTER_ADDR`/`MASTER_PORT` is set | who hosts it |\n"
           "|---|---|---|---|---|\n"
           "| 1 | ccrun | `CCOMM_RANK`, `CCOMM_SIZE` | `CCOMM_STORE_ADDR` (always set) | ccrun |\n"
           "| 2 | torchrun | `RANK`, `WORLD_SIZE` | (`MASTER_ADDR` is required) | rank 0 |\n"
           "| 3 | Open MPI | `OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE` | mpirun's node "
           "(`OMPI_MCA_orte_hnp_uri`), port from the job id; all ranks on one host: loopback | "
           "the first rank on that node |\n"
           "| 4 | PMI (MPICH) | `PMI_RANK`, `PMI_SIZE` | all ranks on one host "
           "(`MPI_LOCALNRANKS`): loopback | rank 0 |\n"
           "| 5 | srun | `SLURM_PROCID`, `SLURM_STEP_NUM_TASKS` or `SLURM_NTASKS`, with "
           "`SLURM_STEP_ID` set | first node of `SLURM_STEP_NODELIST` (or `SLURM_JOB_NODELIST`), "
           "port from the job and step ids (20000-32767) | rank 0 (task 0 runs on that node) |\n"
           "\n"
           "The store address, for every launcher but ccrun: `CCOMM_STORE_ADDR` first (rank 0 "
           "starts the store when the address is one of its host's), then "
           "`MASTER_ADDR:MASTER_PORT+1` (rank 0 starts it), then the launcher's own information "
           "above.\n");
}

void ccrun_print_env_markdown(void)
{
    printf("# Environment variables\n\n"
           "<!-- Generated by `ccrun --env --markdown` (CMake target `docs-env`) from the table "
           "in lib/base/config_table.h. Do not edit: the test `ccrun_env_doc` fails when this "
           "file and the table differ. -->\n\n"
           "ccomm reads every `CCOMM_*` variable once, at the first call that needs it; a "
           "`CCOMM_*` name that is not in this table gets a warning (a typo would otherwise be "
           "ignored). An empty value (`CCOMM_TRANSPORT=`) means the default. A value that is "
           "not of its type, or not one of its choices (matched without regard to case), fails "
           "the first communicator's init (`CC_ERR_INVALID_ARG`, one error line naming the "
           "variable, the value and the choices). `ccrun --env` prints the same table with the "
           "value in effect.\n\n"
           "| Variable | Type | Default | Description |\n"
           "|---|---|---|---|\n");
    for (int i = 0; i < cc_env_count(); i++) {
        const cc_env_var_t *v = cc_env_at(i);
        printf("| `%s` | %s | ", v->name, v->type);
        if (*v->default_value)
            printf("`%s`", v->default_value);
        else
            printf("(none)");
        printf(" | ");
        md_cell(v->help);
        if (v->choices) md_choices(v);
        if (v->flags & CC_ENV_LAUNCHER) printf(" *Set by ccrun.*");
        if (v->flags & CC_ENV_SECRET) printf(" *Secret: never printed.*");
        printf(" |\n");
    }
    printf("\n## Variables ccrun sets for each rank\n\n"
           "ccrun sets both its own variables and torchrun's, so a program written for either "
           "launcher finds what it expects. ccomm's store is at `MASTER_ADDR:MASTER_PORT+1`, "
           "as under torchrun, where `MASTER_PORT` belongs to PyTorch's own TCPStore; ccrun "
           "leaves `MASTER_PORT` free for one.\n\n"
           "| Variable | Value |\n"
           "|---|---|\n");
    for (int i = 0; ccrun_rank_vars[i].name; i++) {
        printf("| `%s` | ", ccrun_rank_vars[i].name);
        md_cell(ccrun_rank_vars[i].meaning);
        printf(" |\n");
    }
    print_launchers_markdown();
}
