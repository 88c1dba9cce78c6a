/* The 8-bit KV cache (--kv-dtype fp8|int8): the number formats, the data's range and
 * the scales, shared by the device fill, the kernels' host side and the CPU reference,
 * so that all of them quantise and dequantise alike.
 *
 * A cache of geometry g with g->kv_quant set holds, for the logical value v of K or V
 * (which) of kv head `head`, the code nearest to v / scale(which, head); the kernel
 * reads code * scale. Scales are chosen from the data's range, amax / 448 for e4m3 and
 * amax / 127 for int8 (symmetric, codes -127..127), one per tensor (K and V each) or
 * one per kv head, as a calibrated serving engine would set them.
 *
 * The logical data of an 8-bit cache has a range per tensor and kv head: amplitudes
 * 1, 1/2, 1/4, 1/8 cycling over the heads, V's shifted by two heads from K's. So a
 * per-tensor scale leaves the narrow heads few codes (as real models' head ranges do),
 * and a kernel that takes the wrong head's scale, or K's for V's, fails verification.
 * Every logical value stays exact in float; the reference needs no tolerance for the
 * quantisation, which both sides apply identically. */
#ifndef ATTNBENCH_KV_QUANT_H
#define ATTNBENCH_KV_QUANT_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "hd.h"
#include "kv_layout.h"
#include "logical_data.h"
#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define E4M3_MAX 448.0f     /* largest finite e4m3 value */
#define INT8_CODE_MAX 127   /* symmetric int8: codes -127..127 */
/* The int8 code of the paged pool's unused slots: no value quantises to it (int8 has no
 * NaN to mark them with, as the 16-bit and e4m3 pools do). */
#define INT8_CODE_UNUSED ((uint8_t)0x80)

/* float -> e4m3 bits (sign, 4 exponent bits of bias 7, 3 mantissa bits), rounding to
 * nearest even and saturating to +-448 as __NV_SATFINITE does; NaN -> 0x7f. */
HD uint8_t e4m3_from_float(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    const uint8_t sign = (uint8_t)((bits >> 24) & 0x80u);
    if (f != f) return 0x7f;
    const float a = fabsf(f);
    if (a >= E4M3_MAX) return (uint8_t)(sign | 0x7e);
    if (a < 0.015625f) {
        /* subnormal: steps of 2^-9; a count of 8 is 2^-6, the smallest normal, whose
         * bits (exponent 1, mantissa 0) are 8 too */
        return (uint8_t)(sign | (uint8_t)rintf(a * 512.0f));
    }
    int e;
    const float fr = frexpf(a, &e);                           /* a = fr * 2^e, fr in [0.5, 1) */
    int m = (int)rintf((fr * 2.0f - 1.0f) * 8.0f);            /* 0..8, exact before rounding */
    int biased = e - 1 + 7;                                   /* 1..15 below 448 */
    if (m == 8) { m = 0; ++biased; }
    /* below 448 the mantissa of exponent 15 rounds to at most 6: never the NaN 0x7f */
    return (uint8_t)(sign | (uint8_t)(biased << 3) | (uint8_t)m);
}

/* e4m3 bits -> float, exact. */
HD float e4m3_to_float(uint8_t c)
{
    const int e = (c >> 3) & 15, m = c & 7;
    float v;
    if (e == 15 && m == 7) {
        const uint32_t nan = 0x7fc00000u;
        memcpy(&v, &nan, sizeof v);
        return v;
    }
    v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
    return (c & 0x80) ? -v : v;
}

/* float -> symmetric int8 code (as its byte): rounded to nearest even, clamped to
 * -127..127; NaN -> INT8_CODE_UNUSED. */
HD uint8_t int8_from_float(float f)
{
    if (f != f) return INT8_CODE_UNUSED;
    float r = rintf(f);
    if (r > (float)INT8_CODE_MAX) r = (float)INT8_CODE_MAX;
    if (r < -(float)INT8_CODE_MAX) r = -(float)INT8_CODE_MAX;
    return (uint8_t)(int8_t)r;
}

HD float int8_to_float(uint8_t c) { return (float)(int8_t)c; }

/* The byte an 8-bit cache of kind quant (KV_QUANT_FP8 or KV_QUANT_INT8) stores for x,
 * a value in units of its scale, and that byte's value. */
HD uint8_t kv_quant_code(int quant, float x)
{
    return quant == KV_QUANT_FP8 ? e4m3_from_float(x) : int8_from_float(x);
}
HD float kv_quant_code_value(int quant, uint8_t c)
{
    return quant == KV_QUANT_FP8 ? e4m3_to_float(c) : int8_to_float(c);
}

/* The amplitude of the logical K (which 0) or V (which 1) of kv head `head` in an 8-bit
 * cache: a power of two, so that every logical value stays exact. */
HD float kv_quant_amplitude(int which, int head)
{
    return KV_AMPLITUDE / (float)(1 << ((head + 2 * which) & 3));
}

/* The largest |value| of that tensor and head: logical_data.h's values are
 * k/128 * amplitude with |k| <= 127. */
HD float kv_quant_amax(int which, int head)
{
    return 127.0f / 128.0f * kv_quant_amplitude(which, head);
}

/* Scales per tensor in the device buffer the kernels read: 1, or one per kv head. */
HD int kv_scale_entries(const kv_geometry_t *g) { return g->kv_scale_per_head ? g->kv_heads : 1; }

/* The dequantisation scale of K or V (which) of kv head `head`: amax / 448 (e4m3) or
 * amax / 127 (int8), amax that head's range, or with per-tensor scales the largest range
 * of the tensor's heads. The device buffer [2][kv_scale_entries] holds K's then V's. */
HD float kv_quant_scale(const kv_geometry_t *g, int which, int head)
{
    float amax = kv_quant_amax(which, head);
    if (!g->kv_scale_per_head)
        for (int h = 0; h < g->kv_heads && h < 4; ++h) amax = fmaxf(amax, kv_quant_amax(which, h));
    return amax / (g->kv_quant == KV_QUANT_FP8 ? E4M3_MAX : (float)INT8_CODE_MAX);
}

/* What a cache of geometry g holds for the logical value v of K or V (which) of kv head
 * `head`: v itself, or in an 8-bit cache the value of v's code, in units of the scale.
 * NaN (the paged pool's unused slots) stays NaN. */
HD float kv_store(const kv_geometry_t *g, float v, int which, int head)
{
    if (!g->kv_quant || v != v) return v;
    return kv_quant_code_value(g->kv_quant, kv_quant_code(g->kv_quant, v / kv_quant_scale(g, which, head)));
}

#ifdef __cplusplus
}
#endif
#endif
