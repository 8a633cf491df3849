/* subcmd.c - dispatch of a tool's commands (see subcmd.h). */
#include <string.h>

#include "subcmd.h"

int cc_subcmd_run(const char *tool, const char *usage, const cc_subcmd_t *cmds, size_t n, int argc,
                  char **argv, FILE *out, FILE *err)
{
    if (argc < 2) {
        fputs(usage, err);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(usage, out);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1, out, err);
    fprintf(err, "%s: unknown command \"%s\"\n\n%s", tool, argv[1], usage);
    return 2;
}
