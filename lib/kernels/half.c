/*
 * half.c - the exported float16/bfloat16 conversions: the inline ones of
 * half.h that the kernels use, so tests check exactly that code.
 */
#include "kernels/half.h"
#include "kernels/kernels.h"

float cc__half_to_float(uint16_t h)
{
    return cc__h2f(h);
}

uint16_t cc__float_to_half(float f)
{
    return cc__f2h(f);
}

float cc__bfloat16_to_float(uint16_t b)
{
    return cc__bf2f(b);
}

uint16_t cc__float_to_bfloat16(float f)
{
    return cc__f2bf(f);
}
