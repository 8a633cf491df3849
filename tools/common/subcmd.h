/*
 * subcmd.h - the top level of a tool made of commands (ccdump, cclog):
 * `tool COMMAND ARGS...` runs the row of `cmds` named COMMAND with its own
 * argv (argv[0] is the command's name); `tool`, `tool -h|--help|help` and
 * an unknown command print the tool's usage. A tool's commands are one
 * table, so a new command is one row.
 */
#ifndef CC_TOOLS_SUBCMD_H
#define CC_TOOLS_SUBCMD_H

#include <stddef.h>
#include <stdio.h>

typedef struct cc_subcmd {
    const char *name;
    int (*fn)(int argc, char **argv, FILE *out, FILE *err);
} cc_subcmd_t;

/*
 * Run argv[1] from cmds (n rows). Returns the command's exit status; 0
 * after the usage was asked for (on out); 2 when no command is given or it
 * is unknown (usage on err, after "TOOL: unknown command" naming it).
 */
int cc_subcmd_run(const char *tool, const char *usage, const cc_subcmd_t *cmds, size_t n, int argc,
                  char **argv, FILE *out, FILE *err);

#endif /* CC_TOOLS_SUBCMD_H */
