/* Select-Attention's top-p selection (the Share/Select-Attention paper, §4.2): the
 * context tokens whose head-averaged scores, taken in descending order, first reach a
 * cumulative p of their total. Shared by the GPU selection and the CPU tests, so that
 * both mean the same set.
 *
 * The set. Scores s_i >= 0 with total S; the threshold t* is the largest score t such
 * that the scores at least t sum to at least p*S; the set is every token whose score is
 * at least t*. Ties at t* all go in, so the set depends on the scores alone, never on an
 * order among equal scores.
 *
 * Radix select on mass, not a sort. Non-negative floats order as their bit patterns, so
 * t*'s 32 bits are found one 8-bit digit at a time, most significant first: among the
 * candidates (tokens whose key matches the digits fixed so far), the mass of each value
 * of the next digit; scanning from the highest value down, the first digit at which the
 * mass above plus that digit's mass reaches the target is t*'s. Four passes over the
 * scores, each a histogram of 256 buckets. */
#ifndef ATTNBENCH_TOP_P_H
#define ATTNBENCH_TOP_P_H

#include <stdint.h>
#include <string.h>
#include "hd.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TOP_P_DIGIT_BITS 8
#define TOP_P_BUCKETS (1 << TOP_P_DIGIT_BITS)
#define TOP_P_PASSES (32 / TOP_P_DIGIT_BITS)

/* A score's key: its bits, which order as the score does for scores >= 0 (-0 is 0). */
HD uint32_t top_p_key(float s)
{
    uint32_t k;
    memcpy(&k, &s, sizeof k);
    return k == 0x80000000u ? 0u : k;
}

HD float top_p_score(uint32_t key)
{
    float s;
    memcpy(&s, &key, sizeof s);
    return s;
}

/* The digit of pass `pass` (0: the most significant). */
HD int top_p_digit(uint32_t key, int pass)
{
    return (int)((key >> (32 - TOP_P_DIGIT_BITS * (pass + 1))) & (TOP_P_BUCKETS - 1));
}

/* Whether a key is a candidate of pass `pass`: its digits before that pass are prefix's. */
HD int top_p_candidate(uint32_t key, uint32_t prefix, int pass)
{
    return pass == 0 || (key >> (32 - TOP_P_DIGIT_BITS * pass)) == (prefix >> (32 - TOP_P_DIGIT_BITS * pass));
}

/* Fixes a pass's digit from the candidates' mass per digit value: mass[b] for b from the
 * highest down, *above the mass of tokens above every candidate, on entry and on return
 * (then with the higher buckets' added). The lowest digit is taken where no higher one
 * reaches the target (the target is the total's p, which every token together reaches). */
HD int top_p_pick_digit(const float *mass, float *above, float target)
{
    for (int b = TOP_P_BUCKETS - 1; b > 0; --b) {
        if (*above + mass[b] >= target) return b;
        *above += mass[b];
    }
    return 0;
}

/* The threshold t* of n scores at p, serially (the GPU runs each pass's histogram across
 * a CTA): the scores' mass in float, as the GPU sums it. */
HD float top_p_threshold(const float *s, long n, float p)
{
    float total = 0.0f;
    for (long i = 0; i < n; ++i) total += s[i];
    const float target = p * total;
    uint32_t prefix = 0;
    float above = 0.0f;
    for (int pass = 0; pass < TOP_P_PASSES; ++pass) {
        float mass[TOP_P_BUCKETS];
        for (int b = 0; b < TOP_P_BUCKETS; ++b) mass[b] = 0.0f;
        for (long i = 0; i < n; ++i) {
            const uint32_t key = top_p_key(s[i]);
            if (top_p_candidate(key, prefix, pass)) mass[top_p_digit(key, pass)] += s[i];
        }
        const int digit = top_p_pick_digit(mass, &above, target);
        prefix |= (uint32_t)digit << (32 - TOP_P_DIGIT_BITS * (pass + 1));
    }
    return top_p_score(prefix);
}

#ifdef __cplusplus
}
#endif
#endif
