/* main.c - ccdump, the flight recorder reader (docs/ccdump.md). */
#include <stdio.h>

#include "ccdump.h"

int main(int argc, char **argv)
{
    return ccdump_main(argc, argv, stdout, stderr);
}
