/*
 * kernels_generic.c - the kernels compiled for the compiler's baseline
 * instruction set (SSE2 on x86-64): the variant every CPU runs.
 */
#include "kernels/kernels_gen.h"

#include "kernels/kernels_inst.h"
#include "kernels/kernels_f16_soft.h"

CC__KDEFINE_TABLE(cc__ktab_generic);
