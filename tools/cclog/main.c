/* main.c - cclog, the reader of clog files (docs/cclog.md). */
#include <stdio.h>

#include "cclog.h"

int main(int argc, char **argv)
{
    return cclog_main(argc, argv, stdout, stderr);
}
